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


def _make_fast_loads() -> Callable[[str], Any]:
    try:
        from json.scanner import c_make_scanner  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - CPython always has it
        c_make_scanner = None
    if c_make_scanner is None:  # pragma: no cover - no C accelerator
        return json.loads
    scan = c_make_scanner(json.JSONDecoder())

    def fast_loads(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except StopIteration:  # leading whitespace or not JSON: json.loads decides
            return loads(text)
        return value if end == len(text) else loads(text)

    return fast_loads


#: ``json.loads`` of a ``str`` (same value, same errors) without its per-call Python
#: layers: the C scanner directly, ``json.loads`` for anything it does not end on.
fast_loads: Callable[[str], Any] = _make_fast_loads()


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


def utf8_json(text: str) -> str:
    """``text``, a JSON text, with any lone surrogate written as its ``\\udXXX`` escape,
    so that UTF-8 (the store, a file, a terminal) can carry it.

    ``json.dumps(..., ensure_ascii=False)`` writes a str holding a lone surrogate (an
    ``os.listdir`` name that is not UTF-8: ``'caf\\udce9.txt'``) as that character, which
    no UTF-8 encoder accepts; the escape is still JSON and ``json.loads`` gives the same
    str back (two that form a surrogate pair read back as the one character they encode,
    as after ``ensure_ascii=True``). Such a character can only stand inside a JSON string, where a backslash is
    always escaped, so the escape cannot join a preceding one. Any other text is returned
    as is (ASCII text at the cost of one ``isascii``)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text


def make_dumps(
    *, sort_keys: bool = False, compact: bool = False, ensure_ascii: bool = True,
    allow_nan: bool = True,
) -> Callable[[Any], str]:  # fmt: skip
    """A function equal to ``json.dumps(obj, sort_keys=, separators=(",", ":") if compact,
    ensure_ascii=, allow_nan=)`` (same text, same ``TypeError``/``ValueError``), built once;
    with ``ensure_ascii=False``, a lone surrogate is written escaped (:func:`utf8_json`),
    so the text always encodes to UTF-8.
    """
    seps = (",", ":") if compact else (", ", ": ")

    def slow(obj: Any) -> str:
        text = json.dumps(
            obj, sort_keys=sort_keys, separators=seps, ensure_ascii=ensure_ascii,
            allow_nan=allow_nan,
        )  # fmt: skip
        return text if ensure_ascii else utf8_json(text)

    try:
        from json.encoder import (  # type: ignore[attr-defined]
            c_encode_basestring,
            c_encode_basestring_ascii,
            c_make_encoder,
        )

        if c_make_encoder is None or c_encode_basestring is None:
            return slow
        quote = c_encode_basestring_ascii if ensure_ascii else c_encode_basestring
        encoder = c_make_encoder(
            None, _not_json, quote, None, seps[1], seps[0], sort_keys, False, allow_nan
        )
        sample = {"z": [1, 2.5, None, True, 'é\n"x'], "b": {"c": -0.0}, "a": "s"}
        if "".join(encoder(sample, 0)) != slow(sample):
            return slow
    except Exception:  # no C accelerator or another signature: use the public API
        return slow

    join = "".join

    def fast(obj: Any) -> str:
        try:
            return join(encoder(obj, 0))
        except RecursionError:  # circular or too deep: let json.dumps say which
            return slow(obj)

    if ensure_ascii:
        return fast

    def fast_utf8(obj: Any) -> str:
        try:
            text = join(encoder(obj, 0))
        except RecursionError:  # circular or too deep: let json.dumps say which
            return slow(obj)
        return text if text.isascii() else utf8_json(text)

    return fast_utf8
