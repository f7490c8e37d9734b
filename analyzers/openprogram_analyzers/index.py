"""One libcst traversal per file: builds a :class:`ModuleIndex` and fans nodes out to rules.

The index records what every rule family needs (functions and their calls, names,
imports, globals and their mutations, classes with ``method_options``,
``PROGRAM_ENTRIES``, decision calls), so no rule walks the tree again.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import importlib.util
import os
import sys
import sysconfig
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

import openprogram
from openprogram_analyzers.literals import string_value

MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "popitem",
        "sort",
        "reverse",
        "appendleft",
        "extendleft",
        "popleft",
        "__setitem__",
        "__delitem__",
    }
)
STDLIB_MODULES: frozenset[str] = frozenset(getattr(sys, "stdlib_module_names", ())) | {"__future__"}


@dataclass
class CallSite:
    node: cst.Call
    target: str | None  # dotted, import-resolved name of the callee
    function: str | None  # qualname of the enclosing function
    head: str | None = None  # leftmost name of the callee expression (``t`` in ``t.time()``)
    # the arguments a ``functools.partial`` the callee names binds first (``save =
    # partial(step, "save")``: ``save(fn, x)`` is ``step("save", fn, x)``), see ``args``
    bound: tuple[cst.Arg, ...] = ()
    partial: bool = False  # the callee is such a partial; ``target`` is what it calls

    @property
    def args(self) -> tuple[cst.Arg, ...]:
        """The call's arguments as the callee receives them: those a partial binds first."""
        return (*self.bound, *self.node.args) if self.bound else tuple(self.node.args)


@dataclass
class FunctionInfo:
    qualname: str
    node: cst.FunctionDef
    class_name: str | None
    parent: str | None  # qualname of an enclosing function (nested defs)
    params: set[str] = field(default_factory=set)
    assigned: set[str] = field(default_factory=set)
    globals_declared: dict[str, cst.Global] = field(default_factory=dict)
    nonlocals: list[cst.Nonlocal] = field(default_factory=list)
    loads: list[cst.Name] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    imports: list[cst.Import | cst.ImportFrom] = field(default_factory=list)
    nested: list[cst.FunctionDef | cst.Lambda] = field(default_factory=list)
    yields: list[cst.CSTNode] = field(default_factory=list)
    # values bound to local names (``critic = Agent(...)``), for instance resolution
    bindings: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    # ``os.environ`` reads (subscript, attribute) in the body
    env_reads: list[cst.CSTNode] = field(default_factory=list)
    # ``return`` statements of the body (not of nested functions)
    returns: list[cst.Return] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.node.name.value

    @property
    def is_async(self) -> bool:
        return self.node.asynchronous is not None

    def locals(self) -> set[str]:
        return (self.params | self.assigned) - set(self.globals_declared)


@dataclass
class ClassInfo:
    qualname: str
    node: cst.ClassDef
    bases: list[str | None]
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    method_options: cst.BaseExpression | None = None
    method_options_target: cst.CSTNode | None = None
    # class-body assignments (``classify = _impl``): name -> first assigned value
    attributes: dict[str, cst.BaseExpression] = field(default_factory=dict)
    # class-body names bound more than once, or not by a plain assignment
    rebound: set[str] = field(default_factory=set)
    # ``self.<name> = value`` in the class's methods: name -> (method qualname, value;
    # None where the target is not assigned one value: ``self.x += 1``, unpacking)
    instance_attributes: dict[str, list[tuple[str, cst.BaseExpression | None]]] = field(
        default_factory=dict
    )


@dataclass
class ImportInfo:
    # absolute module; for a relative import what follows its dots ("" for ``from . import
    # x``) until ``first_party`` resolves it against the file's package
    module: str
    name: str | None  # imported attribute (from-import) or None for `import x`
    node: cst.CSTNode
    level: int = 0  # the dots of a relative import (``from ..x import y``: 2)
    anchored: bool = False  # a relative import ``first_party`` resolved: ``module`` is absolute

    @property
    def relative(self) -> bool:
        return self.level > 0

    @property
    def absolute(self) -> bool:
        """``module`` names the module from the top (not a relative import left as written)."""
        return self.level == 0 or self.anchored

    @property
    def dotted(self) -> str:
        return f"{self.module}.{self.name}" if self.name else self.module

    @property
    def root(self) -> str:
        return self.module.split(".")[0]


@dataclass
class ModuleIndex:
    module: cst.Module
    imports: dict[str, ImportInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    module_assigns: dict[str, list[cst.BaseExpression | None]] = field(default_factory=dict)
    module_assign_nodes: dict[str, cst.CSTNode] = field(default_factory=dict)
    defined: set[str] = field(default_factory=set)
    calls: list[CallSite] = field(default_factory=list)
    mutations: list[tuple[str, str | None, cst.CSTNode]] = field(default_factory=list)
    program_entries: list[tuple[cst.CSTNode, cst.BaseExpression]] = field(default_factory=list)
    agent_options: list[tuple[cst.CSTNode, cst.BaseExpression]] = field(default_factory=list)
    # nested functions by the qualname of the function they are defined in
    children: dict[str, list[FunctionInfo]] = field(default_factory=dict)
    # local names of imports that are project code: first-party modules found next to the
    # Program (or in the folder holding its package) and names imported from one (``from
    # agents import Critic``); filled by ``first_party.mark_first_party``
    first_party: set[str] = field(default_factory=set)
    # those of them that are modules themselves (``helpers.fetch`` is read in that file)
    first_party_modules: set[str] = field(default_factory=set)
    # module-level ``for NAME in (a, b, ...)`` loops: NAME -> the literal names iterated
    loop_names: dict[str, list[str]] = field(default_factory=dict)
    # ``helpers.now`` -> ``time.time`` when the first-party module ``helpers`` (imported as
    # a module) only re-exports ``now`` (filled by ``first_party.resolve_reexports``)
    reexports: dict[str, ImportInfo] = field(default_factory=dict)
    # module-level ``from M import *`` in source order (``name`` is None)
    star_imports: list[ImportInfo] = field(default_factory=list)
    # Agent instances of first-party modules, by their import-resolved dotted name
    # (``bots.critic`` -> ``bots.Critic`` when ``bots.py`` binds ``critic = Critic()``;
    # filled by ``first_party.resolve_imported_agents``)
    imported_agents: dict[str, str] = field(default_factory=dict)
    # Agent classes of first-party modules the module imports, by their import-resolved
    # dotted name, to the dotted name where the class is defined (``agents.Critic`` after
    # ``from agents import Critic``; ``core.Critic`` when ``agents.py`` imports it from
    # ``core.py``; filled by ``first_party.resolve_imported_agent_classes``)
    imported_agent_classes: dict[str, str] = field(default_factory=dict)
    # module-level data of first-party modules the module imports, as written here (the
    # name ``CACHE`` after ``from store_mod import CACHE``, ``store_mod.CACHE`` after
    # ``import store_mod``) -> where it is bound (``store_mod.CACHE``): a global shared by
    # every run in the process, as one of this module is (filled by
    # ``first_party.resolve_project_globals``)
    project_globals: dict[str, str] = field(default_factory=dict)

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Import-resolved dotted name of a Name/Attribute chain (None otherwise)."""
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if not isinstance(expr, cst.Name):
            return None
        head = expr.value
        imp = self.imports.get(head)
        if imp is not None:
            head = imp.dotted
        parts.reverse()
        target = self.reexports.get(f"{head}.{parts[0]}") if parts else None
        if target is not None:
            head, parts = target.dotted, parts[1:]
        return ".".join([head, *parts])

    def resolve_imported(
        self, expr: cst.BaseExpression, shadowed: frozenset[str] | set[str] = frozenset()
    ) -> str | None:
        """The one import table: dotted name of ``expr`` when its head is a module-level
        import (``import time as t`` -> ``t.time`` is ``time.time``; ``from random import
        choice`` -> ``choice`` is ``random.choice``), unless a local of that name shadows it."""
        expr = self.literal_getattr(expr, shadowed)
        head = head_name(expr)
        if head is None or head in shadowed:
            return None
        return self._through_imports(expr)

    def literal_getattr(
        self, expr: cst.BaseExpression, shadowed: frozenset[str] | set[str] = frozenset()
    ) -> cst.BaseExpression:
        """``expr`` with ``getattr(x, "name")`` (the builtin, a literal attribute name) written
        ``x.name``, also inside an attribute chain: ``getattr(time, "time")`` is ``time.time``."""
        if isinstance(expr, cst.Attribute):
            value = self.literal_getattr(expr.value, shadowed)
            return expr if value is expr.value else expr.with_changes(value=value)
        if not (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Name)
            and expr.func.value == "getattr"
            and "getattr" not in shadowed
            and "getattr" not in self.defined
            and len(expr.args) == 2
            and all(a.keyword is None and not a.star for a in expr.args)
        ):
            return expr
        name = string_value(expr.args[1].value)
        if name is None or not name.isidentifier():
            return expr
        owner = self.literal_getattr(expr.args[0].value, shadowed)
        return cst.Attribute(value=owner, attr=cst.Name(name))

    def _through_imports(self, expr: cst.BaseExpression, depth: int = 0) -> str | None:
        """``expr``'s dotted name when its head is an import, or a name the module binds
        once to an imported name or attribute (``clock = time``, ``now = time.time``,
        followed up to five links), or an attribute of a name the module binds once to an
        instance of an imported class: ``rng = random.Random()`` makes ``rng.random``
        ``random.Random.random`` (a class is spelt in CapWords; ``rng`` itself is no
        import)."""
        head = head_name(expr)
        if head is None:
            return None
        if head in self.imports:
            return self.resolve(expr)
        values = self.module_assigns.get(head)
        if (
            depth > 4
            or not values
            or len(values) != 1
            or values[0] is None
            or head in self.functions
            or head in self.classes
        ):
            return None
        value = self.literal_getattr(values[0])
        if isinstance(value, cst.Call) and isinstance(expr, cst.Attribute):
            cls = self._through_imports(self.literal_getattr(value.func), depth + 1)
            dotted = self.resolve(expr)
            if cls is None or dotted is None or not looks_like_class(cls):
                return None
            return cls + dotted[len(head) :]
        if not isinstance(value, (cst.Name, cst.Attribute)):
            return None
        target = self._through_imports(value, depth + 1)
        dotted = self.resolve(expr) if target is not None else None
        return None if target is None or dotted is None else target + dotted[len(head) :]

    def literal_constant(
        self, expr: cst.BaseExpression, shadowed: frozenset[str] | set[str] = frozenset()
    ) -> cst.BaseExpression:
        """``expr``, or the literal dict, list or tuple a name ``expr`` stands for: one the
        module binds once, at module level, and never mutates nor rebinds (``AGE = {"age":
        int}``), unless a local of that name (``shadowed``) hides it."""
        if not isinstance(expr, cst.Name) or expr.value in shadowed:
            return expr
        name = expr.value
        values = self.module_assigns.get(name, [])
        if (
            len(values) != 1
            or not isinstance(values[0], (cst.Dict, cst.List, cst.Tuple))
            or name in self.imports
            or any(mutated == name for mutated, _, _ in self.mutations)
        ):
            return expr
        return values[0]

    def function_at_module(self, name: str) -> FunctionInfo | None:
        info = self.functions.get(name)
        return info if info is not None and info.class_name is None else None

    def is_agent_class(self, qualname: str) -> bool:
        """Whether the module's class ``qualname`` derives from ``openprogram``'s ``Agent``
        (directly, through an alias, through other classes of this module, or through an
        Agent class of a first-party module: :attr:`imported_agent_classes`)."""
        seen: set[str] = set()
        todo = [qualname]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            cls = self.classes.get(name)
            if cls is None:
                continue
            for base in cls.bases:
                if base is None:
                    continue
                if is_agent_base(base):
                    return True
                todo.append(base)
            if self.imported_agent_classes and any(  # resolved as the imports now are
                self.resolve(arg.value) in self.imported_agent_classes
                for arg in cls.node.bases
                if arg.keyword is None
            ):
                return True
        return False

    def agent_class_of_call(self, expr: cst.BaseExpression) -> str | None:
        """``"Agent"``/class qualname when ``expr`` is ``Agent(...)`` or ``Writer(...)``, the
        dotted class when it makes an instance of an Agent class of a first-party module
        (``Critic()`` after ``from agents import Critic``); the dotted class of an Agent
        instance a first-party module binds, when ``expr`` names it (``critic`` after
        ``from bots import critic``, ``bots.critic``)."""
        if isinstance(expr, (cst.Name, cst.Attribute)) and self.imported_agents:
            dotted = self.resolve_imported(expr)
            return self.imported_agents.get(dotted) if dotted is not None else None
        if not isinstance(expr, cst.Call):
            return None
        target = self.resolve(expr.func)
        if target is None:
            return None
        if is_agent_base(target) and head_name(expr.func) in self.imports:
            return target
        if target in self.classes and self.is_agent_class(target):
            return target
        if target in self.imported_agent_classes and head_name(expr.func) in self.imports:
            return self.imported_agent_classes[target]
        return None


def looks_like_class(name: str) -> bool:
    """Whether ``name`` (its last dotted part) is spelt as PEP 8 spells a class, CapWords
    (``Random``, ``SplitResult``), not a constant (``RATE``, ``MAX_TRIES``): all the
    analyzer knows of a name it does not import."""
    short = name.rsplit(".", 1)[-1]
    return short[:1].isupper() and not short.isupper()


def is_agent_base(dotted: str) -> bool:
    """``openprogram.Agent`` or ``openprogram.agents.Agent`` (import-resolved)."""
    return dotted in ("openprogram.Agent", "openprogram.agents.Agent")


def head_name(expr: cst.BaseExpression) -> str | None:
    """The leftmost name of a callee expression (``t`` in ``t.time()``, ``f`` in ``f()()``)."""
    while isinstance(expr, (cst.Attribute, cst.Call)):
        expr = expr.value if isinstance(expr, cst.Attribute) else expr.func
    return expr.value if isinstance(expr, cst.Name) else None


Hook = Callable[[cst.CSTNode], None]


class IndexBuilder(cst.CSTVisitor):
    """Builds the index and calls rule hooks (``{node type: [callback, ...]}``)."""

    def __init__(self, module: cst.Module, hooks: dict[type, list[Hook]] | None = None) -> None:
        super().__init__()
        self.index = ModuleIndex(module=module)
        self.hooks = hooks or {}
        # the module's own statements: a def or class among them rebinds an imported name
        self._top_level = {id(stmt) for stmt in module.body}
        self._func_stack: list[FunctionInfo] = []
        self._class_stack: list[ClassInfo] = []
        self._scope_kinds: list[str] = []  # "class" | "function" | "lambda"
        self._skip_names: set[int] = set()
        self._module_names: set[str] = set()  # names outside functions, for star imports

    # --------------------------------------------------------------- dispatcher
    def on_visit(self, node: cst.CSTNode) -> bool:
        hooks = self.hooks.get(type(node))
        if hooks:
            for hook in hooks:
                hook(node)
        return super().on_visit(node)

    # --------------------------------------------------------------- helpers
    @property
    def _func(self) -> FunctionInfo | None:
        return self._func_stack[-1] if self._func_stack else None

    def _at_module(self) -> bool:
        return not self._scope_kinds

    def _in_class_body(self) -> bool:
        return bool(self._scope_kinds) and self._scope_kinds[-1] == "class"

    def _bind(self, name: str, value: cst.BaseExpression | None, node: cst.CSTNode) -> None:
        func = self._func
        if self._at_module():
            self.index.defined.add(name)
            self.index.module_assigns.setdefault(name, []).append(value)
            self.index.module_assign_nodes.setdefault(name, node)
        elif self._in_class_body() and self._class_stack:
            cls = self._class_stack[-1]
            if value is None or name in cls.attributes:
                cls.rebound.add(name)
            if value is not None:
                cls.attributes.setdefault(name, value)
        elif func is not None and self._scope_kinds[-1] == "function":
            func.assigned.add(name)
            if value is not None:
                func.bindings.setdefault(name, []).append(value)

    def _bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, value, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind_target(el.value, None)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)
        elif isinstance(target, (cst.Subscript, cst.Attribute)):
            base = target.value
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                base = base.value
            if isinstance(base, cst.Name):
                self._mutation(base.value, target)
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                self._instance_attribute(target.value.value, target.attr.value, value)

    def _instance_attribute(self, owner: str, attr: str, value: cst.BaseExpression | None) -> None:
        """Record ``self.<attr> = value`` made in a method of a module-level class (its
        first parameter named ``self``)."""
        func = self._func
        cls = self.index.classes.get(func.class_name) if func and func.class_name else None
        if func is None or cls is None or func.parent is not None:
            return
        params = func.node.params.params
        if owner != "self" or not params or params[0].name.value != "self":
            return
        cls.instance_attributes.setdefault(attr, []).append((func.qualname, value))

    def _mutation(self, name: str, node: cst.CSTNode) -> None:
        func = self._func
        self.index.mutations.append((name, func.qualname if func else None, node))

    # --------------------------------------------------------------- scopes
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._skip_names.add(id(node.name))
        if self._in_class_body() or self._at_module():
            prefix = self._class_stack[-1].qualname + "." if self._class_stack else ""
            info = ClassInfo(
                qualname=prefix + node.name.value,
                node=node,
                bases=[self.index.resolve(a.value) for a in node.bases if a.keyword is None],
            )
            self.index.classes[info.qualname] = info
            if self._at_module():
                self.index.defined.add(node.name.value)
                self._rebinds(node)
            self._class_stack.append(info)
        else:
            self._class_stack.append(ClassInfo("<local>", node, []))
            if self._func is not None:
                self._func.assigned.add(node.name.value)
        self._scope_kinds.append("class")

    def _rebinds(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        """A module-level ``def``/``class`` after ``from random import choice`` rebinds
        ``choice``: from there on the name is the module's own, not the import. (One in a
        branch, such as an ``except ImportError:`` fallback, leaves the import in place.)"""
        if id(node) in self._top_level:
            self.index.imports.pop(node.name.value, None)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_stack.pop()
        self._scope_kinds.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._skip_names.add(id(node.name))
        parent = self._func
        cls = self._class_stack[-1] if self._in_class_body() else None
        if cls is not None:
            qual = f"{cls.qualname}.{node.name.value}"
        elif parent is not None:
            qual = f"{parent.qualname}.<locals>.{node.name.value}"
            if self._scope_kinds[-1] == "function":
                parent.assigned.add(node.name.value)
                parent.nested.append(node)
        else:
            qual = node.name.value
            self.index.defined.add(node.name.value)
            self._rebinds(node)
        info = FunctionInfo(
            qualname=qual,
            node=node,
            class_name=cls.qualname if cls is not None else None,
            parent=parent.qualname if parent is not None else None,
        )
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            info.params.add(p.name.value)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                info.params.add(star.name.value)
        if cls is not None and cls.qualname != "<local>":
            cls.methods.setdefault(node.name.value, info)
        if qual not in self.index.functions:
            self.index.functions[qual] = info
            if info.parent is not None:
                self.index.children.setdefault(info.parent, []).append(info)
        self._func_stack.append(info)
        self._scope_kinds.append("function")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._func_stack.pop()
        self._scope_kinds.pop()

    def visit_Param(self, node: cst.Param) -> None:
        self._skip_names.add(id(node.name))

    def visit_Lambda(self, node: cst.Lambda) -> None:
        if self._func is not None:
            self._func.nested.append(node)
        self._scope_kinds.append("lambda")

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._scope_kinds.pop()

    # --------------------------------------------------------------- names
    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self._skip_names:
            return
        func = self._func
        if func is None:
            self._module_names.add(node.value)
        else:
            func.loads.append(node)
            imp = self.index.imports.get(node.value)
            if imp is not None and imp.dotted == "os.environ":
                func.env_reads.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._skip_names.add(id(node.attr))
        func = self._func
        if (
            func is not None
            and node.attr.value == "environ"
            and self.index.resolve_imported(node) == "os.environ"
        ):
            func.env_reads.append(node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._skip_names.add(id(node.keyword))

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._skip_names.add(id(item.name))
            if self._func is not None:
                self._func.globals_declared[item.name.value] = node
            self._mutation(item.name.value, node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._skip_names.add(id(item.name))
        if self._func is not None:
            self._func.nonlocals.append(node)

    def visit_Return(self, node: cst.Return) -> None:
        if self._func is not None and self._scope_kinds[-1] == "function":
            self._func.returns.append(node)

    def visit_Yield(self, node: cst.Yield) -> None:
        if self._func is not None and self._scope_kinds[-1] == "function":
            self._func.yields.append(node)

    # --------------------------------------------------------------- bindings
    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._bind_target(t.target, node.value)
            self._check_special_assign(t.target, node.value, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value)
        if node.value is not None:
            self._check_special_assign(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        t = node.target
        if isinstance(t, cst.Name):
            if self._at_module():
                self._bind(t.value, None, t)
            elif self._func is not None and t.value in self._func.globals_declared:
                pass
            elif self._func is not None:
                self._func.assigned.add(t.value)
        else:
            self._bind_target(t, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None)
        if (
            self._at_module()
            and isinstance(node.target, cst.Name)
            and isinstance(node.iter, (cst.Tuple, cst.List))
        ):
            names = [el.value.value for el in node.iter.elements if isinstance(el.value, cst.Name)]
            self.index.loop_names.setdefault(node.target.value, []).extend(names)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._bind(node.name.name.value, None, node.name.name)
            self._skip_names.discard(id(node.name.name))

    def visit_Del(self, node: cst.Del) -> None:
        self._bind_target(node.target, None)

    def _check_special_assign(
        self, target: cst.BaseExpression, value: cst.BaseExpression, stmt: cst.CSTNode
    ) -> None:
        if isinstance(target, cst.Name):
            if target.value == "method_options" and self._in_class_body() and self._class_stack:
                cls = self._class_stack[-1]
                cls.method_options = value
                cls.method_options_target = target
            elif target.value == "PROGRAM_ENTRIES" and self._at_module():
                self.index.program_entries.append((target, value))
            elif target.value == "__agent_options__" and self._at_module():
                self.index.agent_options.append((target, value))
        elif (
            isinstance(target, cst.Attribute)
            and target.attr.value == "__agent_options__"
            and self._at_module()
        ):
            self.index.agent_options.append((target, value))

    # --------------------------------------------------------------- imports
    def visit_Import(self, node: cst.Import) -> bool:
        func = self._func
        if func is not None:
            func.imports.append(node)
        for alias in node.names:
            dotted = _dotted_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
                info = ImportInfo(module=dotted, name=None, node=alias)
            else:
                local = dotted.split(".")[0]
                info = ImportInfo(module=local, name=None, node=alias)
            self._record_import(local, info, alias)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        func = self._func
        if func is not None:
            func.imports.append(node)
        module = _dotted_name(node.module) if node.module is not None else ""
        level = len(node.relative)
        if isinstance(node.names, cst.ImportStar):
            if self._at_module():
                self.index.star_imports.append(ImportInfo(module, None, node, level=level))
            return False
        for alias in node.names:
            name = _dotted_name(alias.name)
            local = (
                alias.asname.name.value
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                else name
            )
            info = ImportInfo(module=module, name=name, node=alias, level=level)
            self._record_import(local, info, alias)
        return False

    def leave_Module(self, original_node: cst.Module) -> None:
        if self.index.star_imports:
            bind_star_names(self.index, self._module_names)
        bind_partials(self.index)

    def _record_import(self, local: str, info: ImportInfo, node: cst.CSTNode) -> None:
        if self._at_module():
            self.index.imports.setdefault(local, info)
            self.index.defined.add(local)
        elif self._func is not None:
            self._func.assigned.add(local)

    # --------------------------------------------------------------- calls
    def visit_Call(self, node: cst.Call) -> None:
        func = self._func
        site = CallSite(
            node,
            self.index.resolve(node.func),
            func.qualname if func else None,
            head=head_name(node.func),
        )
        self.index.calls.append(site)
        if func is not None:
            func.calls.append(site)
        f = node.func
        if (  # setattr(f, "__agent_options__", {...}) is f.__agent_options__ = {...}
            isinstance(f, cst.Name)
            and f.value == "setattr"
            and self._at_module()
            and "setattr" not in self.index.defined
            and len(node.args) == 3
            and all(a.keyword is None and not a.star for a in node.args)
            and isinstance(node.args[0].value, cst.Name)
            and string_value(node.args[1].value) == "__agent_options__"
        ):
            target = cst.Attribute(value=node.args[0].value, attr=cst.Name("__agent_options__"))
            self.index.agent_options.append((target, node.args[2].value))
        if isinstance(f, cst.Attribute) and f.attr.value in MUTATING_METHODS:
            base = f.value
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                base = base.value
            if isinstance(base, cst.Name):
                self._mutation(base.value, node)


#: Standard-library modules whose import does something (prints, opens a browser): what
#: they export is not looked up.
_NOISY_MODULES = frozenset({"this", "antigravity", "__main__"})


def _stdlib_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib")})


def _is_standard(root: str) -> bool:
    """Whether the top-level module ``root`` that ``import`` would load here is the
    standard library's or this ``openprogram``, found without running any code (a user's
    ``csv.py`` or ``random/`` earlier on the path shadows the standard one: its code must
    not run in the analyzer, which may be the language server)."""
    try:
        spec = importlib.util.find_spec(root)  # a top-level name: nothing is imported
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.origin in ("built-in", "frozen"):
        return True
    where = os.path.realpath(spec.origin or next(iter(spec.submodule_search_locations or ()), ""))
    if root == "openprogram":
        return where.startswith(os.path.dirname(os.path.realpath(openprogram.__file__)) + os.sep)
    return any(
        where.startswith(d + os.sep) and f"{os.sep}site-packages{os.sep}" not in where[len(d) :]
        for d in _stdlib_dirs()
    )


@functools.cache
def star_exports(module: str) -> frozenset[str] | None:
    """The names ``from module import *`` binds, for a standard-library or ``openprogram``
    module (imported to read them: its ``__all__``, else its names without a leading
    underscore, once :func:`_is_standard` says the module found is the standard one); None
    for other modules (the analyzer imports no user or third-party code)."""
    imported = _standard_module(module)
    if imported is None:
        return None
    names = getattr(imported, "__all__", None)
    if names is None:
        names = [n for n in dir(imported) if not n.startswith("_")]
    return frozenset(str(n) for n in names)


def _standard_module(module: str) -> types.ModuleType | None:
    """``module`` imported, when it is a standard-library or ``openprogram`` module that
    :func:`_is_standard` finds here (the analyzer imports no user or third-party code)."""
    root = module.split(".")[0]
    if root != "openprogram" and (root not in STDLIB_MODULES or root in _NOISY_MODULES):
        return None
    if module not in sys.modules and not _is_standard(root):
        return None
    try:
        return importlib.import_module(module)
    except Exception:  # not importable here: its names are unknown
        return None


@functools.cache
def standard_attribute_kind(module: str, name: str) -> str | None:
    """The type name of ``module.name`` for a standard-library or ``openprogram`` module
    (``os.getcwd``: ``builtin_function_or_method``); None when unknown or absent."""
    imported = _standard_module(module)
    if imported is None or not hasattr(imported, name):
        return None
    return type(getattr(imported, name)).__name__


def _exports(imp: ImportInfo) -> frozenset[str] | None:
    return None if imp.relative else star_exports(imp.module)


def _star_source(index: ModuleIndex, name: str) -> ImportInfo | None:
    """The ``from M import *`` that binds ``name``, which the module binds nowhere else:
    the last one exporting it. A module whose names are unknown (user or third-party
    code) binds it when no earlier star import may, unless the name is private or a
    builtin (then it may be the builtin): otherwise the name would not exist."""
    stars = index.star_imports
    for i in range(len(stars) - 1, -1, -1):
        exports = _exports(stars[i])
        if exports is not None:
            if name in exports:
                return stars[i]
            continue
        if name.startswith("_") or hasattr(builtins, name):
            return None
        earlier = [_exports(e) for e in stars[:i]]
        return stars[i] if all(e is not None and name not in e for e in earlier) else None
    return None


def bind_star_names(index: ModuleIndex, module_names: set[str]) -> None:
    """Enter the names the module uses from its ``from M import *`` into the import table
    (``from time import *`` then ``time()`` is ``time.time()``), as ``from M import name``
    would, and resolve again what the traversal resolved before it knew them: call
    targets, class bases, ``os.environ`` reads. The names: those outside functions
    (``module_names``) and the free names of functions, which the module binds nowhere."""
    used = set(module_names)
    declared: set[str] = set()
    for fn in index.functions.values():
        own = fn.locals()
        parent = index.functions.get(fn.parent) if fn.parent else None
        while parent is not None:
            own |= parent.locals()
            parent = index.functions.get(parent.parent) if parent.parent else None
        used.update(node.value for node in fn.loads if node.value not in own)
        declared.update(fn.globals_declared)
    bound: set[str] = set()
    for name in sorted(used - index.defined - declared):
        star = _star_source(index, name)
        if star is not None:
            index.imports[name] = ImportInfo(star.module, name, star.node, level=star.level)
            index.defined.add(name)
            bound.add(name)
    resolve_again(index, bound)


def resolve_again(index: ModuleIndex, names: set[str]) -> None:
    """Resolve again what the traversal resolved with the import table as it was, once
    the imports named ``names`` (local names) are rebound: call targets, class bases,
    ``os.environ`` reads. The one place this happens, whoever rebinds (a star import's
    names, relative imports resolved against their package, a first-party module's
    re-exports), so every check reads the import-resolved spelling the import table
    has now (``pkg.bots.critic`` for ``from .bots import critic`` in ``pkg/prog.py``)."""
    if not names:
        return
    for site in index.calls:
        if site.head in names and not site.partial:
            site.target = index.resolve(site.node.func)
    for cls in index.classes.values():
        cls.bases = [index.resolve(a.value) for a in cls.node.bases if a.keyword is None]
    for fn in index.functions.values():
        local = fn.locals()
        known = {id(node) for node in fn.env_reads}
        fn.env_reads.extend(
            node
            for node in fn.loads
            if node.value in names
            and node.value not in local
            and id(node) not in known
            and node.value in index.imports
            and index.imports[node.value].dotted == "os.environ"
        )
    bind_partials(index)  # what a partial wraps may be one of them


def _dotted_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted_name(node.value)}.{node.attr.value}"
    return ""


def bind_partials(index: ModuleIndex) -> None:
    """Calls of a name bound once to ``functools.partial`` of an imported callable (``save
    = functools.partial(step, "save")``, ``ask = partial(llm, system=s)``; at
    module level, or in the calling function), or of such a partial itself, are calls of
    that callable: their target is it, and the partial's arguments come first
    (:attr:`CallSite.args`), so ``save(fn, x)`` is the step ``"save"`` running ``fn``."""
    for site in index.calls:
        func = site.node.func
        value: cst.BaseExpression | None = func  # partial(step, "save")(fn, x)
        if isinstance(func, cst.Name):
            fn = index.functions.get(site.function) if site.function else None
            if fn is not None and func.value in fn.locals():
                values: list[cst.BaseExpression | None] = list(fn.bindings.get(func.value, ()))
            else:
                values = index.module_assigns.get(func.value, [])
            value = values[0] if len(values) == 1 else None
        if not isinstance(value, cst.Call) or index.resolve(value.func) != "functools.partial":
            continue
        first = value.args[0] if value.args else None
        if first is None or first.keyword is not None or first.star:
            continue
        target = index.resolve_imported(first.value)
        if target is not None:
            site.target, site.partial = target, True
            site.bound = tuple(value.args[1:])


def build_index(module: cst.Module, hooks: dict[type, list[Hook]] | None = None) -> ModuleIndex:
    """Run the single traversal."""
    builder = IndexBuilder(module, hooks)
    walk(module, builder)
    return builder.index


_SKIP_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "trailing_whitespace",
        "newline",
        "equal",
        "colon",
        "dot",
        "operator",
        "asynchronous",
        "default_indent",
        "default_newline",
        "encoding",
    }
)
_PLAN: dict[type, tuple[Any, Any, tuple[str, ...]]] = {}


def _plan(builder: IndexBuilder, t: type) -> tuple[Any, Any, tuple[str, ...]]:
    import dataclasses

    name = t.__name__
    visit = getattr(type(builder), f"visit_{name}", None)
    leave = getattr(type(builder), f"leave_{name}", None)
    fields = tuple(
        f.name
        for f in dataclasses.fields(t)
        if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace")
    )
    entry = (visit, leave, fields)
    _PLAN[t] = entry
    return entry


_KIND: dict[type, int] = {tuple: 2, list: 2}
"""Per value type: 1 a libcst node, 2 a sequence of children, 0 anything else."""


def _kind(t: type) -> int:
    kind = 1 if issubclass(t, cst.CSTNode) else 2 if issubclass(t, (tuple, list)) else 0
    _KIND[t] = kind
    return kind


def walk(root: cst.CSTNode, builder: IndexBuilder) -> None:
    """A lean traversal in field order that skips whitespace and tokens.

    Much faster than libcst's generic visitor (which visits every whitespace node and
    calls several dispatch methods per node); calls the builder's ``visit_X`` /
    ``leave_X`` and the rule hooks exactly like ``CSTVisitor`` would. Node tests look the
    value's type up in :data:`_KIND` (``isinstance`` against libcst's abstract base
    classes goes through ``ABCMeta.__instancecheck__``, a third of the walk's time). A
    module-level function, not a recursive closure: that would be a reference cycle
    keeping the whole tree alive until the cyclic GC runs.
    """
    _go(root, builder, builder.hooks)


_CONCATENATED = cst.ConcatenatedString


def _go(node: cst.CSTNode, builder: IndexBuilder, hooks: dict[type, list[Hook]]) -> None:
    t = type(node)
    while t is _CONCATENATED:  # right-nested: iterate, not recurse
        _go(node.left, builder, hooks)  # type: ignore[attr-defined]
        node = node.right  # type: ignore[attr-defined]
        t = type(node)
    visit, leave, fields = _PLAN.get(t) or _plan(builder, t)
    if hooks:
        for hook in hooks.get(t, ()):
            hook(node)
    if visit is not None and visit(builder, node) is False:
        if leave is not None:
            leave(builder, node)
        return
    kinds = _KIND
    for name in fields:
        value = getattr(node, name)
        vt = type(value)
        kind = kinds.get(vt)
        if kind is None:
            kind = _kind(vt)
        if kind == 1:
            _go(value, builder, hooks)
        elif kind == 2:
            for child in value:
                ct = type(child)
                ck = kinds.get(ct)
                if ck is None:
                    ck = _kind(ct)
                if ck == 1:
                    _go(child, builder, hooks)
    if leave is not None:
        leave(builder, node)
