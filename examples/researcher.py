"""A researcher agent with tools: it looks things up in a small notes library.

    OPENPROGRAM_MODEL=replay:examples/cassettes/researcher.jsonl \
        openprogram run examples/researcher.py:research --args '{"question": "When was the bridge built?"}'

``search_notes`` and ``read_note`` are model-callable tools (``tool=True``); the model
decides when to call them inside ``self(...)``, the tool loop of :func:`openprogram.agent`.
"""

from __future__ import annotations

from openprogram import Agent

NOTES = {
    "bridge": "The Old Town bridge was built in 1891 and rebuilt in 1952 after a flood.",
    "harbour": "The harbour opened in 1820; the lighthouse followed in 1834.",
    "library": "The public library moved to the former customs house in 1978.",
}


class Researcher(Agent):
    """Answers questions from the town's notes, citing the note it used."""

    instructions = "Answer from the notes only. Use the tools to find and read a note."
    method_options = {
        "search_notes": {"tool": True, "toolset": ("notes",), "max_result_chars": 2000},
        "read_note": {
            "tool": True,
            "toolset": ("notes",),
            "input": {"key": {"description": "A key returned by search_notes"}},
        },
    }

    def search_notes(self, query: str) -> list[str]:
        """Keys of the notes whose text mentions any word of the query."""
        words = {w.strip("?.,!").lower() for w in query.split() if len(w) > 3}
        return sorted(
            k for k, text in NOTES.items() if words & set(text.lower().split()) or k in words
        )

    def read_note(self, key: str) -> str:
        """The full text of one note."""
        if key not in NOTES:
            raise KeyError(f"no note {key!r}; call search_notes first")
        return NOTES[key]

    def research(self, question: str) -> str:
        """Answer a question using the notes tools."""
        return self(question, toolset="notes")


_researcher = Researcher()
research = _researcher.research

PROGRAM_ENTRIES = ["research"]
