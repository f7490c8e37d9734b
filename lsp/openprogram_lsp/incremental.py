"""Incremental analysis: re-check only the top-level statements an edit touched.

A document is split lexically into top-level chunks (a statement with its decorators and
trailing comments/blank lines). The *base* is the last full analysis
(``analyze_source`` on the whole file): its findings are attributed to the chunk holding
their first line. For a new version, a chunk whose text is unchanged reuses its base
findings (shifted to its new line); a changed chunk is analysed alone, with the module's
import statements prepended as context (module-level facts), and the result is cached by
chunk text. Cross-statement rules (helpers in other statements, entries naming other
definitions, globals mutated elsewhere) are refreshed by the next full analysis, which the
server runs once the document has been quiet for the debounce delay.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from openprogram.contract.suppressions import file_level_codes

from .positions import LINE_BREAK

_TOKEN = re.compile(r"\"\"\"|'''|\"|'|#|[()\[\]{}]|\\\r?\n|\r\n|\n|\r")
_STR_END = {
    '"""': re.compile(r'\\.|"""', re.S),
    "'''": re.compile(r"\\.|'''", re.S),
    '"': re.compile(r'\\.|"|\r|\n', re.S),
    "'": re.compile(r"\\.|'|\r|\n", re.S),
}
_CONTINUATION = re.compile(r"(else|elif|except|finally)\b")
_IMPORT = re.compile(r"(import|from)\s")
CACHE_BYTES = 2 * 1024 * 1024  # chunk texts cached per document (bytes, not entries)
FINDING_BYTES = 512  # rough size of one cached finding


@dataclass(frozen=True)
class Chunk:
    start_line: int  # 0-based
    text: str

    @property
    def n_lines(self) -> int:
        return len(LINE_BREAK.findall(self.text)) + (0 if _ends_newline(self.text) else 1)


def _ends_newline(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def split_chunks(text: str) -> list[Chunk]:
    """Split ``text`` at the starts of top-level statements (lexically, never fails)."""
    return _chunks(text, [0, *_starts(text, 0)[0]])


# A start's decision reads a few characters around it (the newline before it, a
# continuation keyword such as ``finally`` and the character after it): a start this far
# before an edit is decided by unchanged text.
_LOOKAHEAD = 16


def _starts(
    text: str, pos: int, resync: Callable[[int], bool] | None = None
) -> tuple[list[int], bool]:
    """The chunk starts after ``pos`` (0 or itself a start: the lexer state is empty
    there). Stops after the first start ``resync`` accepts: ``(starts, True)``."""
    starts: list[int] = []
    depth = 0
    n = len(text)
    decorator = text.startswith("@", pos)
    while pos < n:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        tok = m.group()
        pos = m.end()
        if tok in _STR_END:
            end_re = _STR_END[tok]
            while True:
                e = end_re.search(text, pos)
                if e is None:
                    pos = n
                    break
                pos = e.end()
                g = e.group()
                if g == tok:
                    break
                if g in ("\n", "\r"):  # unterminated single-quoted string
                    pos = e.start()
                    break
            continue
        if tok == "#":
            nl = LINE_BREAK.search(text, pos)
            pos = nl.start() if nl else n
            continue
        if tok in "([{":
            depth += 1
            continue
        if tok in ")]}":
            depth = max(0, depth - 1)
            continue
        if tok.startswith("\\"):
            continue  # explicit line continuation
        # a newline
        if depth or pos >= n:
            continue
        c = text[pos]
        if c in " \t\r\n#\f" or _CONTINUATION.match(text, pos):
            continue
        if decorator:
            decorator = c == "@"
            continue
        decorator = c == "@"
        starts.append(pos)
        if resync is not None and resync(pos):
            return starts, True
    return starts, False


def _chunks(text: str, starts: list[int]) -> list[Chunk]:
    chunks: list[Chunk] = []
    line = 0
    n = len(text)
    plain = "\r" not in text  # then counting "\n" is counting line breaks
    for i, begin in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else n
        piece = text[begin:stop]
        if piece or not chunks:
            chunks.append(Chunk(line, piece))
        line += piece.count("\n") if plain else len(LINE_BREAK.findall(piece))
    return chunks


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # string comparisons run in C: a few passes over the text
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class Chunker:
    """``split_chunks`` of successive versions of one document, re-lexing only from the
    last start well before the edited span until a start of the old version recurs
    after it (the lexer state is empty at every start, so the rest is unchanged). An
    edit costs the statements it touches, not a pass over the whole document."""

    def __init__(self) -> None:
        self.text = ""
        self.starts = [0]

    def split(self, text: str) -> list[Chunk]:
        old, old_starts = self.text, self.starts
        if text != old:
            head = _common_prefix(old, text)
            tail = _common_suffix(old, text, min(len(old), len(text)) - head)
            delta = len(text) - len(old)
            edit_end = len(text) - tail  # text[edit_end:] == old[edit_end - delta:]
            i = max(0, bisect.bisect_right(old_starts, head - _LOOKAHEAD) - 1)
            known = set(old_starts[i + 1 :])

            def resync(q: int) -> bool:
                return q >= edit_end and q - delta in known

            fresh, synced = _starts(text, old_starts[i], resync)
            rest: list[int] = []
            if synced:
                j = bisect.bisect_left(old_starts, fresh[-1] - delta)
                rest = [q + delta for q in old_starts[j + 1 :]]
            self.text, self.starts = text, [*old_starts[: i + 1], *fresh, *rest]
        return _chunks(text, self.starts)


def shift_finding(f: Any, dl: int) -> Any:
    """``f`` moved by ``dl`` lines (fix edits and related locations in the same file too)."""
    if dl == 0:
        return f
    fix = f.fix
    if fix is not None:
        fix = dataclasses.replace(
            fix,
            edits=tuple(
                dataclasses.replace(e, line=e.line + dl, end_line=e.end_line + dl)
                for e in fix.edits
            ),
        )
    related = tuple(
        dataclasses.replace(r, line=r.line + dl, end_line=r.end_line + dl)
        if r.path == f.path
        else r
        for r in f.related
    )
    return dataclasses.replace(
        f, line=f.line + dl, end_line=f.end_line + dl, fix=fix, related=related
    )


@dataclass(frozen=True)
class Base:
    """A full analysis: findings grouped by the text of the chunk they start in."""

    by_chunk: Mapping[str, tuple[Any, ...]]  # chunk text -> findings relative to the chunk

    @staticmethod
    def build(text: str, findings: tuple[Any, ...]) -> Base:
        chunks = split_chunks(text)
        starts = [c.start_line for c in chunks]
        grouped: dict[str, list[Any]] = {c.text: [] for c in chunks}
        for f in findings:
            i = max(0, bisect.bisect_right(starts, f.line - 1) - 1)
            grouped[chunks[i].text].append(shift_finding(f, -chunks[i].start_line))
        return Base({k: tuple(v) for k, v in grouped.items()})


class IncrementalAnalyzer:
    """Per-document incremental state (used from one worker thread at a time)."""

    def __init__(self) -> None:
        self.base: Base | None = None
        # (digest of the import context, chunk text) -> findings; bounded by CACHE_BYTES
        self._cache: OrderedDict[tuple[bytes, str], tuple[Any, ...]] = OrderedDict()
        self._cache_bytes = 0
        self._lock = threading.Lock()
        self.last_reanalysed = 0  # chunks analysed by the last fast pass (for tests/benchmarks)
        self._chunker = Chunker()  # the last version's chunks
        # (id of a chunk's findings, line) -> (those findings, placed at that line)
        self._placed: dict[tuple[int, int], tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def set_base(self, text: str, findings: tuple[Any, ...]) -> None:
        base = Base.build(text, findings)
        with self._lock:
            self.base = base

    def fast(
        self,
        text: str,
        path: str,
        config: Any,
        recorded_steps: Mapping[str, Any] | None,
    ) -> tuple[Any, ...]:
        """Findings for ``text`` re-checking only chunks unknown to the base."""
        from openprogram_analyzers import analyze_source

        # findings unsound for a statement checked alone (``Rule.whole_module``): the
        # full analysis reports them
        from openprogram_analyzers.rules import WHOLE_MODULE_CODES

        # a file-level comment lives in one statement but applies to all of them
        file_level = file_level_codes(text)
        if file_level == frozenset():
            return ()  # a bare ``# openprogram: noqa``: every code
        with self._lock:
            base = self.base
        chunks = self._chunker.split(text)
        imports = [c for c in chunks if _IMPORT.match(c.text)]
        context = "".join(c.text if _ends_newline(c.text) else c.text + "\n" for c in imports)
        ctx_lines = len(LINE_BREAK.findall(context))
        # keyed by a digest: a key holding the context text kept one copy per entry
        ctx_key = hashlib.blake2b(context.encode("utf-8", "surrogatepass"), digest_size=16)
        ctx_digest = ctx_key.digest()
        out: list[Any] = []
        analysed = 0
        # findings placed at their chunk's line by the last pass, reused while the chunk
        # stays on that line (most of them: an edit moves only the statements below it)
        last_placed, placed = self._placed, {}

        def place(found: tuple[Any, ...], line: int) -> None:
            if not found:
                return
            key = (id(found), line)
            hit = last_placed.get(key)
            if hit is None or hit[0] is not found:
                hit = (found, tuple(shift_finding(f, line) for f in found))
            placed[key] = hit
            out.extend(hit[1])

        for chunk in chunks:
            if base is not None and chunk.text in base.by_chunk:
                place(base.by_chunk[chunk.text], chunk.start_line)
                continue
            is_import = _IMPORT.match(chunk.text) is not None
            key = (b"" if is_import else ctx_digest, chunk.text)
            cached = self._cache.get(key)
            if cached is None:
                analysed += 1
                src = chunk.text if is_import else context + chunk.text
                offset = 0 if is_import else ctx_lines
                found = analyze_source(
                    src, path, config=config, recorded_steps=recorded_steps, helpers_at_call=True
                )
                cached = tuple(
                    shift_finding(_drop_context_related(f, offset), -offset)
                    for f in found
                    if f.line > offset and f.code not in WHOLE_MODULE_CODES
                )
                self._cache[key] = cached
                self._cache_bytes += _entry_bytes(key, cached)
                while self._cache_bytes > CACHE_BYTES and len(self._cache) > 1:
                    old_key, old_value = self._cache.popitem(last=False)
                    self._cache_bytes -= _entry_bytes(old_key, old_value)
            else:
                self._cache.move_to_end(key)
            place(cached, chunk.start_line)
        self._placed = placed
        self.last_reanalysed = analysed
        if file_level:
            out = [f for f in out if f.code not in file_level]
        out.sort(key=lambda f: (f.line, f.column, f.code))
        return tuple(out)


def _entry_bytes(key: tuple[bytes, str], findings: tuple[Any, ...]) -> int:
    return len(key[0]) + len(key[1]) + FINDING_BYTES * len(findings) + 100


def _drop_context_related(f: Any, ctx_lines: int) -> Any:
    if not ctx_lines or not f.related:
        return f
    kept = tuple(r for r in f.related if r.path != f.path or r.line > ctx_lines)
    return f if len(kept) == len(f.related) else dataclasses.replace(f, related=kept)
