"""Suppression comments (``# noqa: OP203``, ``# openprogram: ignore[OP203]``, file-level
``# openprogram: noqa[: CODES]``), unused-suppression findings (OP900) and the suppress fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from openprogram.contract.suppressions import (
    CODE,
    LINE_IGNORE,
    LINE_NOQA,
    MAY_SUPPRESS,
    Layout,
    file_noqa_codes,
    layout,
    merge_file_level,
)
from openprogram_analyzers.findings import Finding, Fix, TextEdit

SUPPRESS_PREFIX = "suppress "
"""How the description of every suppression fix starts (``--fix`` never applies them)."""


@dataclass
class Suppression:
    line: int
    column: int  # 1-based column of the comment
    end_column: int
    codes: tuple[str, ...]  # empty: all codes (a bare noqa comment)
    used: set[str] = field(default_factory=set)


class SourceText:
    """Lines and comments of one source, each computed at most once per analysis."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._lines: list[str] | None = None
        self._layout: Layout | None = None
        self._by_line: dict[int, list[tuple[int, str]]] | None = None

    def line(self, number: int) -> str:
        """Text of 1-based line ``number`` ('' outside the source), lines as Python counts
        them (``\n`` / ``\r\n``; a form feed or U+2028 inside a line ends none)."""
        if self._lines is None:
            self._lines = [ln.removesuffix("\r") for ln in self.source.split("\n")]
        idx = number - 1
        return self._lines[idx] if 0 <= idx < len(self._lines) else ""

    def layout(self) -> Layout:
        """Comments and joined lines (tokenized once)."""
        if self._layout is None:
            self._layout = layout(self.source)
        return self._layout

    def comments(self) -> list[tuple[int, int, str]]:
        """``(line, column0, text)`` of every comment (tokenized once)."""
        return self.layout().comments if "#" in self.source else []

    def suppressed_lines(self, finding: Finding) -> set[int]:
        """The lines whose suppression comment applies to ``finding``: its first and last
        line, and for either one continued by a backslash or inside a multi-line string,
        the line ending that run of joined lines, where its comment can go."""
        lines = {finding.line, finding.end_line}
        return lines | {self.layout().comment_line_of(line) for line in lines}

    def comments_on(self, line: int) -> list[tuple[int, str]]:
        """``(column0, text)`` of the comments starting on ``line``."""
        if self._by_line is None:
            self._by_line = {}
            for ln, col, text in self.comments():
                self._by_line.setdefault(ln, []).append((col, text))
        return self._by_line.get(line, [])


def parse_suppressions(
    source: str, source_text: SourceText | None = None
) -> tuple[frozenset[str] | None, list[Suppression]]:
    """File-level codes (None: no file-level comment; empty: every code) and the line
    suppressions of ``source``."""
    if MAY_SUPPRESS.search(source) is None:
        return None, []
    file_level: frozenset[str] | None = None
    sups: list[Suppression] = []
    for line, col, text in (source_text or SourceText(source)).comments():
        codes_for_file = file_noqa_codes(text)
        if codes_for_file is not None:
            file_level = merge_file_level(file_level, codes_for_file)
            continue
        for rx in (LINE_IGNORE, LINE_NOQA):
            m = rx.search(text)
            if m:
                codes = tuple(CODE.findall(m.group("codes") or ""))
                sups.append(Suppression(line, col + m.start() + 1, col + m.end() + 1, codes))
    return file_level, sups


def apply_suppressions(
    source: str,
    path: str,
    findings: list[Finding],
    enabled: frozenset[str],
    source_text: SourceText | None = None,
    *,
    judged: Callable[[str, int], bool] | None = None,
) -> list[Finding]:
    """Drop suppressed findings and add OP900 for unused OP suppressions: those of a code
    on a line where ``judged(code, line)`` (default: every one), i.e. where the findings
    given are all there can be."""
    text = source_text or SourceText(source)
    file_level, sups = parse_suppressions(source, text)
    if file_level is not None:
        if not file_level:
            return []  # a bare file-level noqa: every finding
        findings = [f for f in findings if f.code not in file_level]
    if not sups:
        return findings
    by_line: dict[int, list[Suppression]] = {}
    for s in sups:
        by_line.setdefault(s.line, []).append(s)
    kept: list[Finding] = []
    for f in findings:
        suppressed = False
        for line in text.suppressed_lines(f):
            for s in by_line.get(line, ()):
                if not s.codes or f.code in s.codes:
                    s.used.add(f.code)
                    suppressed = True
        if not suppressed:
            kept.append(f)
    if "OP900" in enabled:
        for s in sups:
            for code in s.codes:
                if (
                    code.startswith("OP")
                    and code in enabled
                    and code not in s.used
                    and (judged is None or judged(code, s.line))
                ):
                    kept.append(
                        Finding(
                            "OP900",
                            f"unused suppression of {code}: no {code} finding on this line",
                            "warning",
                            path,
                            s.line,
                            s.column,
                            s.line,
                            s.end_column,
                            fix=_remove_code_fix(text, s, code),
                        )
                    )
    kept.sort(key=Finding.sort_key)
    return kept


_SEPARATOR = " \t\f:,;"
"""What may part a directive from the explanation after it (``# noqa: OP203: legacy``)."""


def _remove_code_fix(source: SourceText, s: Suppression, code: str) -> Fix:
    """Remove ``code`` from the directive of ``s``. The text after the directive is comment
    text (an explanation, another comment) and stays one: ``x = 1  # noqa: OP203 why`` ->
    ``x = 1  # why``. Without another code the directive goes (the line too when the
    comment was all of it); with others it keeps them (as ruff's RUF100)."""
    text = source.line(s.line)
    start, end = s.column - 1, s.end_column - 1  # 0-based span of the directive
    is_noqa = LINE_IGNORE.match(text, start) is None
    if is_noqa:  # the directive ends at its last code: a word like ``runner2`` is text
        end = max((m.end() for m in CODE.finditer(text, start, end)), default=end)
    remaining = [c for c in s.codes if c != code]
    title = f"remove unused suppression of {code}"
    if remaining:
        listed = ", ".join(remaining)
        new = f"# noqa: {listed}" if is_noqa else f"# openprogram: ignore[{listed}]"
        return Fix(title, (TextEdit(s.line, start + 1, s.line, end + 1, new),), safe=True)
    rest = len(text) - len(text[end:].lstrip(_SEPARATOR))
    if rest < len(text):  # text after it: it stays a comment
        new = "" if text.startswith("#", rest) else "# "
        edit = TextEdit(s.line, start + 1, s.line, rest + 1, new)
    elif text[:start].strip():  # code before it: drop the comment and the space before it
        edit = TextEdit(s.line, len(text[:start].rstrip()) + 1, s.line, len(text) + 1, "")
    else:  # the comment was the whole line
        edit = TextEdit(s.line, 1, s.line + 1, 1, "")
    return Fix(title, (edit,), safe=True)


def suppression_fix(source: str | SourceText, finding: Finding) -> Fix | None:
    """A fix adding ``# noqa: CODE`` where Python reads it as a comment of the finding's
    line (merging codes): at the end of that line, or of the last line of a run joined to
    it by backslash continuations or a multi-line string. None when there is no such
    place (the source does not tokenize, or the line holds a file-level comment).

    Pass one :class:`SourceText` for many findings of a file: it tokenizes only once.
    """
    src = source if isinstance(source, SourceText) else SourceText(source)
    where = src.layout()
    if not where.complete:
        return None
    line = where.comment_line_of(finding.line)
    title = f"{SUPPRESS_PREFIX}{finding.code} on this line"
    for col, comment in src.comments_on(line):
        if file_noqa_codes(comment) is not None:
            return None  # the rest of a file-level comment suppresses nothing on its line
        m = LINE_NOQA.search(comment)
        if m and m.group("codes"):
            start = col + m.start() + 1
            end = col + m.end() + 1
            codes = [*CODE.findall(m.group("codes")), finding.code]
            new = "# noqa: " + ", ".join(dict.fromkeys(codes))
            return Fix(title, (TextEdit(line, start, line, end, new),), safe=False)
    end = len(src.line(line)) + 1
    return Fix(title, (TextEdit(line, end, line, end, f"  # noqa: {finding.code}"),), safe=False)
