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
from openprogram.errors import SAVED_SOURCE


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


#: The metaclass of the ``class`` statement a saved method is compiled in: it returns the
#: class body's namespace (the method, and the ``__classcell__`` its ``super()`` reads).
_CLASS_BODY = "__openprogram_class_body__"


@functools.lru_cache(maxsize=256)
def _compile(
    src: str, filename: str, first_line: int, class_name: str | None = None
) -> types.CodeType:
    """``src`` compiled so that its line numbers are those of the file it was saved from
    (``first_line``: where it started there), as a traceback should say them. A method's
    source (``class_name``: its class's name) is compiled in a ``class class_name:``
    statement, as Python compiles it in its class: ``__x`` names mangled with that name,
    and a ``__class__`` cell for a zero-argument ``super()``. Kept: a
    worker executing runs of one Program compiles its saved source once (two compiles
    were 0.3 ms of a trivial run's 2.7 ms); a code object is immutable, and each run
    executes it in a namespace of its own."""
    tree = ast.parse(src, filename)
    if first_line > 1:
        ast.increment_lineno(tree, first_line - 1)
    if class_name is not None:
        first = tree.body[0] if tree.body else None
        extra: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}
        body = ast.ClassDef(
            name=class_name,
            bases=[],
            keywords=[ast.keyword(arg="metaclass", value=ast.Name(_CLASS_BODY, ast.Load()))],
            body=tree.body or [ast.Pass()],
            decorator_list=[],
            **extra,
        )
        if first is not None:
            ast.copy_location(body, first)
        tree = ast.Module(body=[body], type_ignores=[])
        ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec")


def _mangled(name: str, class_name: str) -> str:
    """``name`` as the class ``class_name``'s body stores it (``__x`` -> ``_Cls__x``)."""
    stripped = class_name.lstrip("_")
    if not name.startswith("__") or name.endswith("__") or not stripped:
        return name
    return f"_{stripped}{name}"


def _class_of(fn: Any) -> str | None:
    """The qualname of the class whose body defines the function ``fn`` (``Outer.Inner``)."""
    owner = getattr(fn, "__qualname__", "").rpartition(".")[0]
    return owner if owner and not owner.endswith("<locals>") else None


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
    owners: dict[str, str] = {}  # saved method (as its class stores it) -> defining class
    modules: dict[str, str] = {}
    lines: dict[str, int] = {}  # the file's line each saved function started on
    for qn in dict.fromkeys([qualname, *reached]):
        if "<locals>" in qn:
            continue  # saved with the function it is nested in
        owner, _, name = qn.rpartition(".")
        if owner:  # ``self.__x()`` in class ``C``: the attribute ``_C__x``
            name = _mangled(name, owner.rpartition(".")[2])
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
            defined_in = _class_of(target)
            if defined_in is not None:
                owners[name] = defined_in
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
        "owners": owners,
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
    filename = f"{snapshot.get('path') or module.__name__}{SAVED_SOURCE}"
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
    owners: dict[str, str] = snapshot.get("owners") or {}  # none in older snapshots
    owner, _, name = qualname.rpartition(".")
    where = (filename, lines)
    if instance is None:  # a staticmethod or classmethod entry: no instance to bind to
        cls = receiver_class or _class_named(module, owner)
        if name not in methods:
            raise ProgramLoadError(f"saved source does not define {qualname}")
        return _bind_to_class(
            _method(methods[name], name, owners.get(name, owner), cls, module, namespace, where),
            cls,
            owner,
        )
    bound: dict[str, Any] = {}
    for mname, src in methods.items():
        fn = _method(src, mname, owners.get(mname), type(instance), module, namespace, where)
        bound[mname] = _bind(fn, mname, instance)
    for mname, meth in bound.items():
        try:
            instance.__dict__[mname] = meth
        except AttributeError:  # pragma: no cover - instances without __dict__
            object.__setattr__(instance, mname, meth)
    return bound[_mangled(name, owner.rpartition(".")[2])]


def _live_class(owner: str | None, name: str, cls: Any, module: types.ModuleType) -> Any:
    """The class (as loaded now) whose body defined the saved method ``name``: ``owner``
    (its qualname, as saved) among the bases of ``cls`` (the receiver's class), else in
    ``module``; an older snapshot (no ``owner``) names none: the class of ``cls`` that
    defines ``name`` now."""
    mro = cls.__mro__ if isinstance(cls, type) else ()
    if owner is None:
        return next((k for k in mro if name in vars(k)), None)
    found = next((k for k in mro if k.__qualname__ == owner), None)
    if found is None:
        found = _class_named(module, owner)
    return found if isinstance(found, type) else None


def _method(
    src: str,
    name: str,
    owner: str | None,
    cls: Any,
    module: types.ModuleType,
    namespace: dict[str, Any],
    where: tuple[str, dict[str, int]],
) -> Any:
    """The saved method ``name`` (as its class stores it: ``_C__x`` for ``__x``) compiled
    against ``namespace`` as its class body made it (a ``staticmethod`` or ``classmethod``
    object when its source has that decorator): inside ``class C:`` (``owner``: the
    qualname of the class that defined it), its zero-argument ``super()`` and
    ``__class__`` reading the live class of that name (found from ``cls``)."""
    live = _live_class(owner, name, cls, module)
    class_name = (owner.rpartition(".")[2] if owner else None) or getattr(live, "__name__", None)
    if not (isinstance(class_name, str) and class_name.isidentifier()):
        class_name = None
    local: dict[str, Any] = {_CLASS_BODY: lambda _name, _bases, body: body}
    try:
        filename, lines = where  # a traceback's file, and where each method started in it
        code = _compile(src, filename, lines.get(f".{name}", 1), class_name)
        exec(code, namespace, local)
    except Exception as exc:
        raise ProgramLoadError(f"cannot compile the saved source of {name}: {exc}") from None
    body = local.get(class_name, {}) if class_name is not None else local
    fn = body.get(name)
    if not (callable(fn) or isinstance(fn, classmethod)):
        raise ProgramLoadError(f"saved source does not define {name}")
    cell = body.get("__classcell__")
    if cell is not None:  # super() / __class__: the class it was defined in, as it is now
        if live is None:
            raise ProgramLoadError(
                f"the saved source of {owner or class_name}.{name} uses super() or __class__, "
                f"but its class {owner or class_name} is gone; resume with --policy use_latest"
            )
        cell.cell_contents = live
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
