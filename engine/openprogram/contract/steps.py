"""Step-name and step-function rules, shared by the runtime and the analyzer.

Each check returns ``(code, message)`` or ``None``: the runtime raises
``StepUsageError(f"{code} {message}")`` and the analyzer reports the same code with the
same message for a literal call, so a rejection and a lint finding read alike.
"""

from __future__ import annotations

INVALID_NAME = "OP212"
BAD_FUNCTION = "OP213"
FORBIDDEN_CHARS = ("/", "#")


def name_problem(kind: str, name: object) -> tuple[str, str] | None:
    """Why ``name`` cannot name a ``kind`` (step/workflow/parallel branch), if it cannot."""
    if not isinstance(name, str) or not name.strip():
        return INVALID_NAME, f"{kind} name must be a non-empty string, got {name!r}"
    if any(c in name for c in FORBIDDEN_CHARS):
        return INVALID_NAME, f"{kind} name {name!r} must not contain '/' or '#'"
    return None


def lambda_problem(kind: str, name: str) -> tuple[str, str]:
    """A lambda handed to ``kind`` ``name``."""
    return (
        BAD_FUNCTION,
        f"{kind} '{name}': a lambda cannot be a step function (its code cannot be saved or "
        "identified); define a module-level function",
    )


def nested_problem(kind: str, name: str, qualname: str) -> tuple[str, str]:
    """A nested function or closure handed to ``kind`` ``name``."""
    return (
        BAD_FUNCTION,
        f"{kind} '{name}': {qualname} is a nested function or closure; step functions must "
        "be module-level functions or methods (pass state as JSON arguments)",
    )
