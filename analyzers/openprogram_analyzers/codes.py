"""Every stable rule code (cheap to import: no libcst)."""

from __future__ import annotations

ALL_CODES: tuple[str, ...] = (
    "OP001",
    *(f"OP10{i}" for i in range(1, 9)),
    *(f"OP20{i}" for i in range(1, 10)),
    "OP210",
    "OP211",
    "OP212",
    "OP213",
    *(f"OP30{i}" for i in range(1, 7)),
    *(f"OP40{i}" for i in range(1, 6)),
    "OP900",
)
