"""Saved source of a resumable function and its same-module helpers (``keep_original``).

At the first run the source of the function and of the functions the pre-run check
reached (the analyzer's Program model: helpers, step functions and, for methods, the
``self.<name>`` methods it calls) is saved as JSON together with the module objects it uses (only
standard-library modules are pinned, by name). Resuming with ``keep_original`` compiles
that saved source in a fresh namespace built from the module's current globals.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import sys
import textwrap
import types
from collections.abc import Callable, Sequence
from typing import Any

from openprogram.durable.errors import ProgramLoadError


def _unwrap(fn: Any) -> Any:
    fn = getattr(fn, "__func__", fn)
    try:
        return inspect.unwrap(fn)
    except ValueError:  # pragma: no cover - cyclic __wrapped__
        return fn


def _source(fn: Any) -> tuple[str, int]:
    """The function's dedented source and the line of the file it starts on."""
    lines, first = inspect.getsourcelines(fn)
    return textwrap.dedent("".join(lines)), first


@functools.lru_cache(maxsize=256)
def _compile(src: str, filename: str, first_line: int) -> types.CodeType:
    """``src`` compiled so that its line numbers are those of the file it was saved from
    (``first_line``: where it started there), as a traceback should say them. Kept: a
    worker executing runs of one Program compiles its saved source once (two compiles
    were 0.3 ms of a trivial run's 2.7 ms); a code object is immutable, and each run
    executes it in a namespace of its own."""
    tree = ast.parse(src, filename)
    if first_line > 1:
        ast.increment_lineno(tree, first_line - 1)
    return compile(tree, filename, "exec")


def _is_stdlib(module: types.ModuleType) -> bool:
    name = module.__name__.split(".")[0]
    return name in sys.stdlib_module_names or name == "builtins"


def capture(
    entry_fn: Callable[..., Any],
    module: types.ModuleType,
    qualname: str,
    reached: Sequence[str] = (),
    instance: Any | None = None,
) -> dict[str, Any]:
    """Snapshot of ``entry_fn`` (function or method ``Cls.name``) and the functions the
    pre-run check reached (``reached``: the analyzer's Program model, so what is checked
    is exactly what is saved): module-level functions by name, and methods of the entry's
    class (or its bases), which are bound to the instance on restore. A method is looked
    up on the class of ``instance`` (the receiver: a subclass's override of a helper is
    the one that runs), else on ``Cls``."""
    cls_name = qualname.rsplit(".", 1)[0] if "." in qualname else None
    cls = getattr(module, cls_name, None) if cls_name else None
    if cls_name and instance is not None:
        cls = type(instance)
    mro = {k.__qualname__ for k in getattr(cls, "__mro__", ())}
    functions: dict[str, str] = {}
    methods: dict[str, str] = {}
    modules: dict[str, str] = {}
    lines: dict[str, int] = {}  # the file's line each saved function started on
    for qn in dict.fromkeys([qualname, *reached]):
        if "<locals>" in qn:
            continue  # saved with the function it is nested in
        owner, _, name = qn.rpartition(".")
        if not owner:
            fn = entry_fn if qn == qualname else module.__dict__.get(qn)
        elif owner in mro and cls is not None:
            fn = entry_fn if qn == qualname else inspect.getattr_static(cls, name, None)
            if isinstance(fn, (staticmethod, classmethod)) or getattr(fn, "kind", "instance") != (
                "instance"
            ):
                continue
        else:
            continue  # a method of another class: resolved from the module on resume
        target = _unwrap(fn) if fn is not None else None
        if not inspect.isfunction(target):
            continue
        try:
            src, first = _source(target)
        except (OSError, TypeError) as exc:
            raise ProgramLoadError(f"cannot read the source of {qn}: {exc}") from None
        if owner:
            methods[name] = src
            lines[f".{name}"] = first
        else:
            functions[qn] = src
            lines[qn] = first
        for node in ast.walk(ast.parse(src)):  # pin the standard-library modules it uses
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                obj = module.__dict__.get(node.id)
                if isinstance(obj, types.ModuleType) and _is_stdlib(obj):
                    modules[node.id] = obj.__name__
    digest = hashlib.sha256(
        "\n".join(functions[k] for k in sorted(functions)).encode()
        + "\n".join(methods[k] for k in sorted(methods)).encode()
    ).hexdigest()
    return {
        "module": module.__name__,
        "path": getattr(module, "__file__", None),
        "qualname": qualname,
        "functions": functions,
        "methods": methods,
        "modules": modules,
        "lines": lines,
        "hash": digest,
    }


def restore(
    snapshot: dict[str, Any],
    module: types.ModuleType,
    instance: Any | None,
    receiver_class: type | None = None,
) -> Callable[..., Any]:
    """The saved entry function compiled against the module's current globals.

    For a method entry the saved methods are bound to ``instance`` (set on the instance,
    so ``self.helper(...)`` resolves to the saved helper); a staticmethod or classmethod
    entry (``instance`` is ``None``) is served by its class: ``receiver_class``, the class
    the entry was reached through (a subclass of the method's own), else the method's own.
    """
    namespace: dict[str, Any] = dict(module.__dict__)
    for alias, modname in snapshot.get("modules", {}).items():
        try:
            namespace[alias] = importlib.import_module(modname)
        except ImportError as exc:
            raise ProgramLoadError(f"pinned module {modname!r} is not available: {exc}") from None
    filename = f"{snapshot.get('path') or module.__name__} (saved source)"
    lines: dict[str, int] = snapshot.get("lines") or {}  # none in older snapshots
    for qn, src in snapshot.get("functions", {}).items():
        try:
            exec(_compile(src, filename, lines.get(qn, 1)), namespace)
        except Exception as exc:
            raise ProgramLoadError(f"cannot compile the saved source of {qn}: {exc}") from None
    qualname: str = snapshot["qualname"]
    if "." not in qualname:
        fn = namespace.get(qualname)
        if not callable(fn):
            raise ProgramLoadError(f"saved source does not define {qualname}")
        return fn
    methods: dict[str, str] = snapshot.get("methods", {})
    if instance is None:  # a staticmethod or classmethod entry: no instance to bind to
        owner, _, name = qualname.rpartition(".")
        if name not in methods:
            raise ProgramLoadError(f"saved source does not define {qualname}")
        return _bind_to_class(
            _method(methods[name], name, namespace, filename, lines),
            receiver_class or _class_named(module, owner),
            owner,
        )
    bound: dict[str, Any] = {}
    for mname, src in methods.items():
        bound[mname] = _bind(_method(src, mname, namespace, filename, lines), mname, instance)
    for mname, meth in bound.items():
        try:
            instance.__dict__[mname] = meth
        except AttributeError:  # pragma: no cover - instances without __dict__
            object.__setattr__(instance, mname, meth)
    return bound[qualname.rsplit(".", 1)[1]]


def _method(
    src: str, name: str, namespace: dict[str, Any], filename: str, lines: dict[str, int]
) -> Any:
    """The saved method ``name`` compiled against ``namespace``, as its class body made it
    (a ``staticmethod`` or ``classmethod`` object when its source has that decorator)."""
    local: dict[str, Any] = {}
    try:
        exec(_compile(src, filename, lines.get(f".{name}", 1)), namespace, local)
    except Exception as exc:
        raise ProgramLoadError(f"cannot compile the saved source of {name}: {exc}") from None
    fn = local.get(name)
    if not (callable(fn) or isinstance(fn, classmethod)):
        raise ProgramLoadError(f"saved source does not define {name}")
    return fn


def _class_named(module: types.ModuleType, qualname: str) -> Any:
    """The class ``qualname`` (``Outer.Inner``) of ``module``, or ``None``."""
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _bind_to_class(member: Any, cls: Any, owner: str) -> Any:
    """A saved staticmethod / classmethod ``member`` as class ``cls`` serves it (``owner``:
    the defining class's name, for messages): through the class's call-scope descriptor
    (an ``Agent`` method keeps recording its ``code`` node) when it has one."""
    name = getattr(member, "__name__", "")
    current: Any = inspect.getattr_static(cls, name, None) if isinstance(cls, type) else None
    kind = getattr(current, "kind", None)
    if isinstance(member, staticmethod):
        fn, expected = member.__func__, "static"
    elif isinstance(member, classmethod):
        fn, expected = member.__func__, "class"
    else:
        raise ProgramLoadError(f"{owner}.{name} is a method but no instance was loaded")
    if kind == expected and hasattr(current, "func") and hasattr(current, "owner"):
        return type(current)(fn, kind, current.owner).__get__(None, cls)
    return fn if expected == "static" else types.MethodType(fn, cls)


def _bind(fn: Callable[..., Any], name: str, instance: Any) -> Any:
    """Bind a saved method to ``instance`` — through the class's call-scope descriptor
    (an ``Agent`` method keeps recording its ``code`` node) when it has one."""
    cls = type(instance)
    current = inspect.getattr_static(cls, name, None)
    if hasattr(current, "func") and hasattr(current, "kind") and hasattr(current, "owner"):
        try:
            return type(current)(fn, "instance", current.owner).__get__(instance, cls)
        except Exception:  # pragma: no cover - unexpected descriptor signature
            pass
    return types.MethodType(fn, instance)
