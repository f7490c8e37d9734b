"""Rule base class, its embedded examples and the per-file analysis context."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import libcst as cst

from openprogram_analyzers.findings import Severity
from openprogram_analyzers.index import ModuleIndex


def example(text: str) -> str:
    """An example block as written in a rule file (a triple-quoted string opening with a
    newline, indented like the code around it) as source text."""
    return textwrap.dedent(text[1:] if text.startswith("\n") else text)


@dataclass(frozen=True, init=False)
class Valid:
    """A VALID example: source on which the rule reports nothing."""

    source: str

    def __init__(self, source: str) -> None:
        object.__setattr__(self, "source", example(source))


@dataclass(frozen=True, init=False)
class Invalid:
    """An INVALID example: source and the one finding the rule reports on it."""

    source: str
    range: tuple[int, int, int, int]  # line, column, end line, end column (1-based)
    message: str  # expected substring of the message
    fixed: str | None  # the source after the rule's own fix (None: the rule has no fix)
    code: str | None  # the finding's code when it is not the rule's own

    def __init__(
        self,
        source: str,
        *,
        range: tuple[int, int, int, int],
        message: str,
        fixed: str | None = None,
        code: str | None = None,
    ) -> None:
        object.__setattr__(self, "source", example(source))
        object.__setattr__(self, "range", range)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "fixed", None if fixed is None else example(fixed))
        object.__setattr__(self, "code", code)


@dataclass
class Pending:
    """A finding whose positions are not resolved yet (positions only for reported nodes)."""

    code: str
    message: str
    node: cst.CSTNode
    severity: Severity
    fix_description: str | None = None
    fix_edits: list[tuple[cst.CSTNode, str]] = field(default_factory=list)
    fix_safe: bool = True
    related: list[tuple[str, cst.CSTNode]] = field(default_factory=list)


class Context:
    """What rules see of one file: source, index, shared computations and ``report``."""

    def __init__(
        self,
        source: str,
        path: str,
        index: ModuleIndex,
        enabled: frozenset[str],
        recorded_steps: Any = None,
    ) -> None:
        self.source = source
        self.path = path
        self.index = index
        self.enabled = enabled
        self.recorded_steps = recorded_steps
        self.pending: list[Pending] = []
        self._cache: dict[str, Any] = {}

    def shared(self, key: str, compute: Callable[[Context], Any]) -> Any:
        """Compute a per-file result once for all rules that need it."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    def report(
        self,
        code: str,
        node: cst.CSTNode,
        message: str,
        *,
        fix: tuple[str, list[tuple[cst.CSTNode, str]]] | None = None,
        related: list[tuple[str, cst.CSTNode]] | None = None,
        fix_safe: bool = True,
    ) -> None:
        from openprogram_analyzers.rules import RULES

        self.pending.append(
            Pending(
                code=code,
                message=message,
                node=node,
                severity=RULES[code].severity,
                fix_description=fix[0] if fix else None,
                fix_edits=list(fix[1]) if fix else [],
                fix_safe=fix_safe,
                related=list(related or ()),
            )
        )


class Rule:
    """One rule: one file a newcomer reads top to bottom.

    Class attributes: ``code``, ``name``, ``summary`` (what it does, one line: the README
    row), ``severity``; the docstring's ``Why:`` and ``Fix safety:`` sections; ``INVALID``
    (the example, with the finding it must produce and the fixed source) and ``VALID``
    (what to write instead). ``check`` reports findings after the traversal; ``hooks``
    returns per-node callbacks run during it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = "error"
    fix_safe: ClassVar[bool] = True
    """Whether the rule's own fix keeps the program's meaning (``--fix`` applies it);
    a fix that guesses intent is unsafe (``--unsafe-fixes``)."""
    whole_module: ClassVar[bool] = False
    """Whether a finding needs the whole module: a statement analysed alone (the language
    server's incremental pass) would report it falsely."""
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def check(self, ctx: Context) -> None:  # pragma: no cover - overridden
        """Report findings after the traversal (most rules read ``ctx.index``)."""

    def hooks(self, ctx: Context) -> dict[type, Callable[[Any], None]]:
        """Per-node callbacks run during the single traversal (optional)."""
        return {}

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's sections by heading (``Why``, ``Fix safety``)."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        out: dict[str, str] = {}
        heading = None
        for part in doc.split("\n\n"):
            head, sep, rest = part.partition(": ")
            if sep and head in DOC_HEADINGS:
                heading = head
                out[heading] = rest
            elif heading is not None:
                out[heading] += "\n\n" + part
        return out

    @classmethod
    def explain(cls) -> str:
        """The ``--explain`` text: the fixed headings, examples included."""
        sections = cls.sections()
        parts = [f"{cls.code} ({cls.name}): {cls.summary}", ""]

        def add(heading: str, text: str) -> None:
            parts.extend([f"{heading}:", textwrap.indent(text.strip(), "    "), ""])

        add("What it does", f"Reports {cls.summary} (severity: {cls.severity}).")
        add("Why", sections.get("Why", ""))
        if cls.INVALID:
            add("Example", cls.INVALID[0].source)
        instead = cls.INVALID[0].fixed if cls.INVALID and cls.INVALID[0].fixed else None
        if instead is None and cls.VALID:
            instead = cls.VALID[0].source
        if instead is not None:
            add("Use instead", instead)
        add("Fix safety", sections.get("Fix safety", ""))
        return "\n".join(parts).rstrip() + "\n"

    @classmethod
    def readme_row(cls) -> str:
        """The rule's row in README.md's rule table."""
        code = cls.code
        return (
            f'| <a id="{code.lower()}"></a>`{code}` | {cls.name} | {cls.severity} | {cls.summary} |'
        )


DOC_HEADINGS = ("Why", "Fix safety")
"""The sections every rule's docstring has, in this order."""


FamilyFindings = Callable[[Context, str], Iterable[Any]]


class FamilyRule(Rule):
    """A rule whose findings come from a shared per-file computation of its family."""

    family: ClassVar[FamilyFindings]  # e.g. ``options_family.findings_for``

    def check(self, ctx: Context) -> None:
        for f in type(self).family(ctx, self.code):
            ctx.report(
                self.code,
                f.node,
                f.message,
                related=list(getattr(f, "chain", ()) or ()),
                fix=self.fix_for(ctx, f),
                fix_safe=self.fix_safe,
            )

    def fix_for(
        self, ctx: Context, finding: Any
    ) -> tuple[str, list[tuple[cst.CSTNode, str]]] | None:
        """The rule's own fix for a finding (default: none)."""
        return None
