"""JSON text for the store's JSON columns: ``json.dumps`` output, built without overhead.

``json.dumps`` builds a new C encoder on every call; the store keeps one (same output:
``ensure_ascii``, default separators, ``NaN`` allowed) and falls back to ``json.dumps``
when this Python has no C encoder. Non-JSON values raise ``TypeError``; circular ones
``RecursionError`` (callers turn both into ``StoreError``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

loads = json.loads


def _not_json(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _make_dumps() -> Callable[[Any], str]:
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]

        encoder = c_make_encoder(
            None, _not_json, encode_basestring_ascii, None, ": ", ", ", False, False, True
        )
        sample = {"a": [1, 2.5, None, True, 'é\n"x'], "b": {"c": float("nan")}, "d": "s"}
        if "".join(encoder(sample, 0)) != json.dumps(sample):
            return json.dumps
    except Exception:  # no C accelerator or another signature: use the public API
        return json.dumps

    join = "".join

    def dumps(obj: Any) -> str:
        return join(encoder(obj, 0))

    return dumps


dumps: Callable[[Any], str] = _make_dumps()
