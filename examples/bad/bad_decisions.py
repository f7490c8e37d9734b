"""Decision menu and schema mistakes: OP301-OP306."""

from openprogram import decision


def triage(ticket: str) -> object:
    return decision.make(
        f"Triage: {ticket}",
        {
            "tag": ("Tag it", {"tags": [str, int]}),  # OP301: one element template
            "meta": ("Looks nested", {"kind": {"type": {"a": str}}}),  # OP302
            "count": ("Count", {"n": complex}),  # OP303: unsupported type
            "level": ("Level", {"n": {"type": int, "options": [1, "2"]}}),  # OP304
            "pair": (1, 2),  # OP305: read as (value, description)
        },
    )


def pick() -> object:
    return decision.make("Pick one", ["yes", "no", "yes"])  # OP306: duplicate option
