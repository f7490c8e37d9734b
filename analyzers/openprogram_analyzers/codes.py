"""Every stable rule code, read from the rule modules' file names (``rules/opNNN_*.py``):
cheap to import (no libcst), and adding a rule's file adds its code."""

from __future__ import annotations

import os


def _codes() -> tuple[str, ...]:
    names = os.listdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules"))
    return tuple(
        sorted(
            n[:5].upper() for n in names if n[:2] == "op" and n[2:5].isdigit() and n.endswith(".py")
        )
    )


ALL_CODES: tuple[str, ...] = _codes()
