"""A Python file's text read the way Python reads it: UTF-8 unless a PEP 263 coding
cookie (or a BOM) says otherwise (:func:`read_source`), and the one-line error for a file
Python cannot decode (:func:`decode_error`). Used by the pre-run check of a resumable
entry, the linter and its fixes."""

from __future__ import annotations

import io
import tokenize


def read_source(data: bytes) -> tuple[str, str]:
    """``(text, encoding)`` of a Python file's bytes: UTF-8 unless a PEP 263 coding cookie
    (or a BOM) says otherwise. Line endings are kept as they are (no newline translation);
    a BOM stays in the text (``encoding`` is then ``"utf-8"``), so writing the text back in
    ``encoding`` gives the same bytes.

    Raises ``UnicodeDecodeError`` / ``SyntaxError`` (a bad cookie) / ``LookupError``.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8-sig":
        encoding = "utf-8"  # the BOM stays in the text and is written back
    return data.decode(encoding), encoding


def decode_error(
    data: bytes, exc: UnicodeDecodeError | SyntaxError | LookupError
) -> tuple[int, str]:
    """``(line, message)`` of ``exc``, raised by :func:`read_source` for ``data``: the line
    of the first byte that does not decode (or of the coding cookie) and what is wrong."""
    if isinstance(exc, UnicodeDecodeError):
        line = data.count(b"\n", 0, exc.start) + 1
        return line, f"file is not valid {exc.encoding} text: {exc.reason} at byte {exc.start}"
    try:  # no cookie and not UTF-8 in the first two lines, or a bad cookie
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        if line <= 2 and isinstance(exc, SyntaxError) and "encoding" in str(exc):
            return line, (
                f"file is not valid utf-8 text: invalid byte at byte {bad.start}, "
                "and no PEP 263 coding cookie declares another encoding"
            )
    first_two = data.split(b"\n", 2)[:2]
    line = next((i for i, ln in enumerate(first_two, 1) if b"coding" in ln), 1)
    return line, f"file has an invalid coding cookie: {exc}"
