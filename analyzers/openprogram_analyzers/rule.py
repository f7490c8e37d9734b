"""Rule base class, embedded examples and the per-file analysis context."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import libcst as cst

from openprogram_analyzers.findings import Severity
from openprogram_analyzers.index import ModuleIndex


@dataclass(frozen=True)
class Invalid:
    """An embedded INVALID example: the finding it must produce (1-based range)."""

    code: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str  # expected substring of the message
    fixed: str | None = None  # expected source after applying the rule's own (safe) fix


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
    """One rule. Subclasses set the class attributes and implement :meth:`check`."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    severity: ClassVar[Severity] = "error"
    fix_safe: ClassVar[bool] = True
    """Whether the rule's own fix keeps the program's meaning (``--fix`` applies it);
    a fix that guesses intent is unsafe (``--unsafe-fixes``)."""
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[tuple[str, Invalid]]] = []

    def check(self, ctx: Context) -> None:  # pragma: no cover - overridden
        """Report findings after the traversal (most rules read ``ctx.index``)."""

    def hooks(self, ctx: Context) -> dict[type, Callable[[Any], None]]:
        """Per-node callbacks run during the single traversal (optional)."""
        return {}

    @classmethod
    def explain(cls) -> str:
        """The ``--explain`` text: docstring plus the embedded examples."""
        doc = inspect.cleandoc(cls.__doc__ or "")
        parts = [f"{cls.code} ({cls.name}): {cls.summary}", "", doc]
        if cls.INVALID:
            parts += ["", "Flagged:"]
            for src, _ in cls.INVALID[:2]:
                parts += ["", textwrap.indent(textwrap.dedent(src).strip(), "    ")]
        if cls.VALID:
            parts += ["", "Fine:"]
            for src in cls.VALID[:2]:
                parts += ["", textwrap.indent(textwrap.dedent(src).strip(), "    ")]
        return "\n".join(parts).rstrip() + "\n"


class FamilyRule(Rule):
    """A rule whose findings come from a shared per-file computation of its family."""

    family: ClassVar[str]  # module name under openprogram_analyzers

    def check(self, ctx: Context) -> None:
        import importlib

        module = importlib.import_module(f"openprogram_analyzers.{self.family}")
        for f in module.findings_for(ctx, self.code):
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
