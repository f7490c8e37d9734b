"""Token usage from a reply body, read leniently: a missing or malformed count is 0 (unknown).

Servers that speak a wire format loosely send ``"usage": [1, 2]``, ``"lots"``, string
counts or ``Infinity``; none of that may fail a reply whose content is fine.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from openprogram.runtime.types import Usage

log = logging.getLogger("openprogram.runtime")


def token_count(value: Any) -> int:
    """``value`` as a token count: a non-negative whole number, else 0 (unknown)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value if value >= 0 else 0
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return 0


def usage_from(raw: Any, input_key: str, output_key: str) -> Usage:
    """A :class:`Usage` from a reply's ``usage`` object (anything else counts as unknown)."""
    if not isinstance(raw, dict):
        if raw is not None:
            log.debug("ignoring a malformed usage field: %.80r", raw)
        return Usage()
    return Usage(
        input_tokens=token_count(raw.get(input_key)),
        output_tokens=token_count(raw.get(output_key)),
    )
