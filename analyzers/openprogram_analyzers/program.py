"""The Program model as the analyzer sees it, for the editor: which classes are Agents,
which functions are resumable, what each entry names and which calls are steps.

Every fact comes from the same index and rules the checks use (``ModuleIndex``,
``determinism.resumable_functions``, ``determinism.step_kind``): an Agent subclass
through an alias or a base of the module, a method made resumable by a base class's
``method_options``, ``__agent_options__`` and ``@resumable``, steps called through any
import spelling. Facts are keyed by qualified name (``Writer.draft``) and carry no
positions, so the language server places them with its own cheap ``ast`` spans and keeps
using them while the text changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from openprogram_analyzers.index import ModuleIndex, build_index
from openprogram_analyzers.literals import string_value


@dataclass(frozen=True)
class StepFact:
    """One call of a durable primitive, in source order within its function."""

    kind: str  # step | workflow | parallel
    name: str | None  # the literal name, None when dynamic
    callee: str  # the callee as written, whitespace removed (``s``, ``op.step``)


@dataclass(frozen=True)
class ProgramModel:
    agent_classes: frozenset[str] = frozenset()
    resumable: frozenset[str] = frozenset()
    entries: tuple[tuple[str, str | None], ...] = ()  # (label as written, target qualname)
    steps: dict[str, tuple[StepFact, ...]] = field(default_factory=dict)
    # entries naming nothing defined or imported in the module (OP402's test): no Run
    undefined_entries: frozenset[str] = frozenset()

    def entry_target(self, label: str) -> str | None:
        return next((target for lbl, target in self.entries if lbl == label), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "agent_classes": sorted(self.agent_classes),
            "resumable": sorted(self.resumable),
            "entries": [list(e) for e in self.entries],
            "steps": {
                q: [[s.kind, s.name, s.callee] for s in calls] for q, calls in self.steps.items()
            },
            "undefined_entries": sorted(self.undefined_entries),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProgramModel:
        return cls(
            frozenset(data["agent_classes"]),
            frozenset(data["resumable"]),
            tuple((str(label), target) for label, target in data["entries"]),
            {q: tuple(StepFact(*s) for s in calls) for q, calls in data["steps"].items()},
            frozenset(data.get("undefined_entries", ())),
        )


_SPACE = re.compile(r"\s+")


def callee_text(code: str) -> str:
    """A callee's text as both parsers compare it (whitespace removed)."""
    return _SPACE.sub("", code)


def program_model(index: ModuleIndex) -> ProgramModel:
    """The model of an indexed module."""
    from openprogram_analyzers.determinism import resumable_functions, step_kind

    module = index.module
    steps: dict[str, list[StepFact]] = {}
    for fn in index.functions.values():
        for site in fn.calls:
            kind = step_kind(site)
            if kind is None:
                continue
            args = site.args
            name = string_value(args[0].value) if args and args[0].keyword is None else None
            callee = callee_text(module.code_for_node(site.node.func))
            steps.setdefault(fn.qualname, []).append(StepFact(kind, name, callee))
    entries, undefined = _entries(index)
    return ProgramModel(
        frozenset(q for q in index.classes if index.is_agent_class(q)),
        frozenset(fn.qualname for fn in resumable_functions(index)),
        tuple(entries),
        {q: tuple(calls) for q, calls in steps.items()},
        frozenset(undefined),
    )


def program_model_of(source: str) -> ProgramModel | None:
    """The model of ``source``; None when it is not analysed (does not parse, or too deep
    or large for libcst: the guard decides, as for every check)."""
    from openprogram_analyzers.analysis import parse_checked
    from openprogram_analyzers.guard import recursion_headroom

    module = parse_checked(source, "<model>")
    if not isinstance(module, cst.Module):
        return None
    try:
        with recursion_headroom():
            return program_model(build_index(module))
    except RecursionError:
        return None


def _entries(index: ModuleIndex) -> tuple[list[tuple[str, str | None]], set[str]]:
    """``(label, target qualname)`` of each entry, and the labels naming nothing defined
    in the module: a name or string the module does not bind (OP402), not an attribute
    (a bound method, checked at run time)."""
    from openprogram_analyzers.determinism import _lookup_method

    out: list[tuple[str, str | None]] = []
    undefined: set[str] = set()
    for _target, value in index.program_entries[-1:]:
        if not isinstance(value, (cst.List, cst.Tuple)):
            continue
        for el in value.elements:
            expr = el.value
            label = string_value(expr)
            if label is None and isinstance(expr, cst.Name):
                label = expr.value
            elif (
                label is None
                and isinstance(expr, cst.Attribute)
                and isinstance(expr.value, cst.Name)
            ):
                label = f"{expr.value.value}.{expr.attr.value}"
            if label is None:
                continue
            if not isinstance(expr, cst.Attribute) and label not in index.defined:
                undefined.add(label)
            head, _, attr = label.partition(".")
            target: str | None = None
            if not attr:
                fn = index.function_at_module(head)
                target = fn.qualname if fn is not None else _bound_target(index, head)
            else:
                cls = head if head in index.classes else _instance_class(index, head)
                method = _lookup_method(index, cls, attr) if cls is not None else None
                target = method.qualname if method is not None else None
            out.append((label, target))
    return out, undefined


def entry_receivers(index: ModuleIndex) -> dict[str, frozenset[str]]:
    """The classes whose instance (or class) an entry binds each method to, by the
    method's qualname: ``report = Smart().report`` (``report`` defined by the base
    ``Flow``) gives ``{"Flow.report": {"Smart"}}``; also ``go = bot.go`` (``bot =
    Bot()``) and an attribute written in ``PROGRAM_ENTRIES`` (``Smart().report``)."""
    exprs: list[cst.BaseExpression] = [
        value
        for values in index.module_assigns.values()
        if len(values) == 1
        for value in values
        if isinstance(value, cst.Attribute)
    ]
    for _target, listed in index.program_entries[-1:]:
        if isinstance(listed, (cst.List, cst.Tuple)):
            exprs.extend(el.value for el in listed.elements if isinstance(el.value, cst.Attribute))
    out: dict[str, set[str]] = {}
    for expr in exprs:
        if isinstance(expr, cst.Attribute):
            cls, method = _bound_method(index, expr)
            if cls is not None and method is not None:
                out.setdefault(method.qualname, set()).add(cls)
    return {q: frozenset(classes) for q, classes in out.items()}


def entry_receiver(index: ModuleIndex, label: str) -> str | None:
    """The class of the module whose instance (or the class itself) the entry ``label``
    (as a run records it after ``FILE.py:``) runs a method on: ``Smart.report``,
    ``bot.go`` (``bot = Bot()``), ``report`` (``report = Smart().report``); None for a
    function or an entry not known here."""
    head, _, attr = label.partition(".")
    if attr:
        cls = head if head in index.classes else _instance_class(index, head)
        if cls is None or "." in attr or _lookup_method_of(index, cls, attr) is None:
            return None
        return cls
    values = index.module_assigns.get(head, [])
    if len(values) != 1 or not isinstance(values[0], cst.Attribute):
        return None
    cls, _method = _bound_method(index, values[0], of_class=False)
    return cls


def _lookup_method_of(index: ModuleIndex, cls: str, attr: str) -> Any:
    from openprogram_analyzers.determinism import _lookup_method

    return _lookup_method(index, cls, attr)


def _instance_class(index: ModuleIndex, name: str) -> str | None:
    """The module class ``name`` is an instance of (``writer = Writer(...)``), if any."""
    for value in index.module_assigns.get(name, []):
        if isinstance(value, cst.Call):
            cls = index.resolve(value.func)
            if cls is not None and cls in index.classes:
                return cls
    return None


def _bound_target(index: ModuleIndex, name: str) -> str | None:
    """The function a module-level name bound once to a method or function names:
    ``triage = TicketTriage().triage``, ``go = bot.go`` (``bot = Bot()``; the method
    found in a base class too), ``main = build``."""
    values = index.module_assigns.get(name, [])
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, cst.Name) and value.value != name:
        fn = index.function_at_module(value.value)
        return fn.qualname if fn is not None else None
    if not isinstance(value, cst.Attribute):
        return None
    # a class's own attribute is unbound: not an entry's target
    _cls, method = _bound_method(index, value, of_class=False)
    return method.qualname if method is not None else None


def _bound_method(
    index: ModuleIndex, value: cst.Attribute, *, of_class: bool = True
) -> tuple[str | None, Any]:
    """The class of the module ``value`` (``Smart().report``, ``bot.go``, and with
    ``of_class`` ``Bot.go``) reads a method of, and that method (found in a base class
    too); ``(None, None)`` when not known."""
    from openprogram_analyzers.determinism import _lookup_method

    obj, cls = value.value, None
    if isinstance(obj, cst.Call):
        called = index.resolve(obj.func)
        cls = called if called in index.classes else None
    elif isinstance(obj, cst.Name):  # an instance, or the class itself
        own = of_class and obj.value in index.classes
        cls = obj.value if own else _instance_class(index, obj.value)
    method = _lookup_method(index, cls, value.attr.value) if cls is not None else None
    return (cls, method) if method is not None else (None, None)
