"""Sound pre-filter deciding whether a source can trigger any rule (no libcst import)."""

from __future__ import annotations

import re

# A file can only trigger a rule when it mentions one of these (sound pre-filter: every
# rule needs an openprogram import, a method_options / PROGRAM_ENTRIES /
# __agent_options__ assignment, or an OPxxx suppression comment).
_TRIGGER = re.compile(r"openprogram|method_options|PROGRAM_ENTRIES|__agent_options__|OP\d\d\d")


def may_trigger(source: str) -> bool:
    """Cheap, sound pre-filter: False means no rule can fire on this source."""
    return _TRIGGER.search(source) is not None
