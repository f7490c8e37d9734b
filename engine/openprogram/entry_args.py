"""The check of an entry's JSON keyword arguments against its parameters (pure: stdlib and
:mod:`openprogram.options` only).

``openprogram run`` / ``submit`` (on the imported entry's signature) and the language
server's Run check (on the ``def`` read from source, never executed) both call
:func:`check_args`, so a rejection reads the same wherever it is made::

    check_args([Param("n", "int")], {"n": "3"})  # ['argument \'n\' expects int, got string "3"']

Problems, in this order: unknown arguments (with a did-you-mean), missing required ones,
wrongly typed ones. Types are checked for simple annotations only — ``int``, ``float``,
``str``, ``bool``, ``list``, ``dict``, ``list[...]``, ``dict[..., ...]`` (and ``List`` /
``Dict`` / ``Sequence`` / ``Mapping``), ``Optional[...]``, ``X | None``, ``Union[...]``,
``Literal[...]``, ``Any``; an unannotated parameter, or one whose annotation is anything
else (a class, ``tuple[...]``, a ``TypeVar``), is accepted as it is. ``bool`` is not an
``int`` here (JSON ``true`` is not a number), and an ``int`` is accepted for ``float``.
``null`` is accepted where the annotation allows ``None`` or the default is ``None``.

A rejection starts with the entry's signature as its ``def`` spells it, the way
``inspect.signature`` prints one (annotations unquoted)::

    main(n: int, names: list[str] | None = None) -> int: argument 'n' expects int, ...

:func:`def_signature` renders it from the ``def`` node (the language server reads it from the
source text); :func:`signature_of` finds that node for a live function (``openprogram run``),
so both say the same.
"""

from __future__ import annotations

import ast
import inspect
import json
import textwrap
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openprogram.options import did_you_mean
from openprogram.schema_grammar import json_type_name, value_matches_type

__all__ = [
    "Param",
    "annotation_text",
    "base_type",
    "by_position",
    "check_args",
    "def_signature",
    "params_of_signature",
    "signature_of",
]

_VALUE_CHARS = 40
_TYPING_MODULES = frozenset({"typing", "typing_extensions"})
_SCALARS = ("int", "float", "str", "bool")
_LISTS = frozenset({"list", "List", "Sequence", "MutableSequence"})
_DICTS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})


@dataclass(frozen=True)
class Param:
    """One keyword parameter of an entry: its name, its annotation as source text (None
    when unannotated), whether it must be given, and whether its default is ``None``."""

    name: str
    annotation: str | None = None
    required: bool = True
    default_none: bool = False


@dataclass(frozen=True)
class _Type:
    """A parsed annotation: ``kind`` is a scalar name, ``none``, ``list`` (``items``),
    ``dict`` (``items`` = the value type), ``literal`` (``values``), ``union``
    (``members``) or ``any``."""

    kind: str
    items: _Type | None = None
    members: tuple[_Type, ...] = ()
    values: tuple[Any, ...] = ()


_ANY = _Type("any")


def _name(node: ast.expr) -> str | None:
    """``int`` / ``typing.Optional`` / ``t.List`` → the bare name; None otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in _TYPING_MODULES
    ):
        return node.attr
    return None


def _elements(node: ast.expr) -> list[ast.expr]:
    return list(node.elts) if isinstance(node, ast.Tuple) else [node]


def _union(members: list[_Type | None]) -> _Type | None:
    if any(m is None for m in members):
        return None  # one member we cannot check: the whole union is not checked
    flat: list[_Type] = []
    for m in members:
        assert m is not None
        if m.kind == "any":
            return _ANY
        flat.extend(m.members if m.kind == "union" else (m,))
    return flat[0] if len(flat) == 1 else _Type("union", members=tuple(flat))


def _parse(node: ast.expr, depth: int = 0) -> _Type | None:
    """The checkable type of an annotation expression, or None when it is not simple."""
    if depth > 20:
        return None
    if isinstance(node, ast.Constant):
        if node.value is None:
            return _Type("none")
        if isinstance(node.value, str):  # a forward reference: "int", "list[str]"
            return _parse_text(node.value, depth + 1)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([_parse(node.left, depth + 1), _parse(node.right, depth + 1)])
    if isinstance(node, ast.Subscript):
        head = _name(node.value)
        args = _elements(node.slice)
        if head in _LISTS and len(args) == 1:
            return _Type("list", items=_parse(args[0], depth + 1) or _ANY)
        if head in _DICTS and len(args) == 2:
            return _Type("dict", items=_parse(args[1], depth + 1) or _ANY)
        if head == "Optional" and len(args) == 1:
            return _union([_parse(args[0], depth + 1), _Type("none")])
        if head == "Union":
            return _union([_parse(a, depth + 1) for a in args])
        if head == "Literal":
            values: list[Any] = []
            for a in args:
                try:
                    value = ast.literal_eval(a)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return None
                if value is not None and not isinstance(value, (str, int, float, bool)):
                    return None
                values.append(value)
            return _Type("literal", values=tuple(values))
        return None
    name = _name(node)
    if name in _SCALARS:
        return _Type(name)
    if name in _LISTS:
        return _Type("list", items=_ANY)
    if name in _DICTS:
        return _Type("dict", items=_ANY)
    if name in ("Any", "object"):
        return _ANY
    if name == "None":
        return _Type("none")
    return None


def _parse_text(text: str, depth: int = 0) -> _Type | None:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return _parse(tree.body, depth)


def base_type(annotation: str | None) -> str | None:
    """The JSON-level type an annotation asks for, ``None`` aside: ``list[str]`` → ``list``,
    ``Optional[int]`` / ``int | None`` → ``int``; None when it is not one simple type."""
    t = _parse_text(annotation) if annotation else None
    if t is not None and t.kind == "union":
        rest = [m for m in t.members if m.kind != "none"]
        t = rest[0] if len(rest) == 1 else None
    return t.kind if t is not None and t.kind in (*_SCALARS, "list", "dict") else None


def _shown(value: Any) -> str:
    """``string "3"``, ``integer 2``, ``null``: the JSON type and (the start of) the value."""
    if value is None:
        return "null"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > _VALUE_CHARS:
        text = text[: _VALUE_CHARS - 1] + "…"
    return f"{json_type_name(value)} {text}"


def _mismatch(t: _Type, value: Any, where: str) -> tuple[str, Any] | None:
    """Where ``value`` does not fit ``t`` (the path and the value found there), if it does not."""
    kind = t.kind
    if kind == "any":
        return None
    if kind == "none":
        return None if value is None else (where, value)
    if kind in _SCALARS:  # the schema grammar's rule: bool is not int, int is a float
        ok = value_matches_type(value, kind)
    elif kind == "literal":
        ok = any(type(value) is type(v) and value == v for v in t.values)
    elif kind == "union":
        per_member = [_mismatch(m, value, where) for m in t.members]
        if any(f is None for f in per_member):
            return None
        inner = [f for f in per_member if f is not None and f[0] != where]
        # a value of the right shape for one member (a list for list[str] | None): the
        # item that does not fit says more than the whole value
        return inner[0] if len(inner) == 1 else (where, value)
    elif kind == "list":
        if not isinstance(value, list):
            return where, value
        for i, item in enumerate(value):
            found = _mismatch(t.items or _ANY, item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    elif kind == "dict":
        if not isinstance(value, dict):
            return where, value
        for key, item in value.items():
            found = _mismatch(t.items or _ANY, item, f"{where}[{json.dumps(key)}]")
            if found is not None:
                return found
        return None
    else:  # pragma: no cover - every kind is handled above
        return None
    return None if ok else (where, value)


def _shown_annotation(text: str) -> str:
    """An annotation as messages show it, however it was spelt or read: ``list[str] | None``
    for ``"list[str]|None"`` (a string annotation) and for ``typing.Optional``'s repr alike."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = ast.parse(node.value.strip(), mode="eval").body
        text = ast.unparse(node)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        pass
    return text.strip().replace("typing_extensions.", "").replace("typing.", "")


def check_args(
    params: Sequence[Param], args: Mapping[str, Any], *, any_keyword: bool = False
) -> list[str]:
    """What is wrong with calling an entry of ``params`` with the keyword ``args``, one
    line per problem (empty when nothing is). ``any_keyword``: the entry also takes
    ``**kwargs``, so names it does not list are not unknown."""
    problems: list[str] = []
    names = [p.name for p in params]
    if not any_keyword:
        for key in args:
            if key in names:
                continue
            best = did_you_mean(key, names)
            if best is not None:
                problems.append(f"unknown argument {key!r} (did you mean {best!r}?)")
            elif names:
                problems.append(f"unknown argument {key!r} (it takes {', '.join(names)})")
            else:
                problems.append(f"unknown argument {key!r} (it takes no arguments)")
    for p in params:
        if p.required and p.name not in args:
            of = f" ({_shown_annotation(p.annotation)})" if p.annotation else ""
            problems.append(f"missing required argument {p.name!r}{of}")
    for p in params:
        if p.name not in args or not p.annotation:
            continue
        t = _parse_text(p.annotation)
        value = args[p.name]
        if t is None or (value is None and p.default_none):
            continue
        found = _mismatch(t, value, p.name)
        if found is None:
            continue
        where, bad = found
        at = f" at {where}" if where != p.name else ""
        problems.append(
            f"argument {p.name!r} expects {_shown_annotation(p.annotation)}, got {_shown(bad)}{at}"
        )
    return problems


def annotation_text(annotation: Any) -> str | None:
    """An annotation object (or its text, under ``from __future__ import annotations``) as
    source text: ``int``, ``list[str]``, ``Optional[int]``; None when there is none."""
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):
        return annotation
    if annotation is None or annotation is type(None):
        return "None"
    if typing.get_origin(annotation) is None and isinstance(annotation, type):
        if annotation.__module__ == "builtins":
            return annotation.__qualname__
        return f"{annotation.__module__}.{annotation.__qualname__}"  # not checked
    return repr(annotation)


def params_of_signature(
    target: Callable[..., Any], *, hidden: frozenset[str] = frozenset()
) -> tuple[list[Param], bool] | None:
    """The named parameters of a callable (not ``hidden`` ones; positional-only ones too,
    given by name and passed by position: :func:`by_position`), and whether it takes
    ``**kwargs``; None when it has no signature."""
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params: list[Param] = []
    any_keyword = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            any_keyword = True
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in hidden:
            continue
        params.append(
            Param(
                p.name,
                annotation_text(p.annotation),
                required=p.default is p.empty,
                default_none=p.default is None,
            )
        )
    return params, any_keyword


def by_position(
    sig: inspect.Signature, args: Mapping[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """``args`` (an entry's arguments by name, as ``--args`` gives and a run records them)
    as the call takes them: the positional-only parameters by position (a default filling
    one not given before one that is), the others by keyword. A positional-only parameter
    missing and without a default ends the positional part (binding then says it is
    missing)."""
    positional: list[Any] = []
    keyword = dict(args)
    pending: list[Any] = []
    for p in sig.parameters.values():
        if p.kind is not p.POSITIONAL_ONLY:
            break
        if p.name in keyword:
            positional += [*pending, keyword.pop(p.name)]
            pending = []
        elif p.default is not p.empty:
            pending.append(p.default)
        else:
            break
    return positional, keyword


def call_by_name(fn: Callable[..., Any], args: Mapping[str, Any]) -> Any:
    """``fn`` called with a run's arguments by name: positional-only ones by position
    (:func:`by_position`)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return fn(**args)
    positional, keyword = by_position(sig, args)
    return fn(*positional, **keyword)


_Def = ast.FunctionDef | ast.AsyncFunctionDef


def def_signature(name: str, node: _Def, *, bound: bool = False) -> str:
    """``main(n: int, names: list[str] | None = None) -> int``: ``name`` and the parameters
    and return annotation of ``node`` as written, laid out as ``inspect.signature`` prints
    them. ``bound``: a method called on its instance or class, so its first parameter
    (``self`` / ``cls``) is not shown."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += a.defaults
    parts: list[str] = []

    def shown(arg: ast.arg, default: ast.expr | None, prefix: str = "") -> str:
        text = prefix + arg.arg
        if arg.annotation is not None:
            text += f": {_shown_annotation(ast.unparse(arg.annotation))}"
        if default is not None:
            value = ast.unparse(default)
            text += f" = {value}" if arg.annotation is not None else f"={value}"
        return text

    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if i == 0 and bound:
            continue
        parts.append(shown(arg, default))
        if a.posonlyargs and arg is a.posonlyargs[-1]:
            parts.append("/")
    if a.vararg is not None:
        parts.append(shown(a.vararg, None, "*"))
    elif a.kwonlyargs:
        parts.append("*")
    parts += [shown(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg is not None:
        parts.append(shown(a.kwarg, None, "**"))
    returns = f" -> {_shown_annotation(ast.unparse(node.returns))}" if node.returns else ""
    return f"{name}({', '.join(parts)}){returns}"


def signature_of(name: str, target: Callable[..., Any]) -> str:
    """:func:`def_signature` of a live function or bound method, from its ``def`` in its
    source file (so it reads as the language server shows it); ``name`` and
    ``inspect.signature`` when that source cannot be read or does not match the signature."""
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return name
    fn = inspect.unwrap(getattr(target, "__func__", target))
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, ValueError, MemoryError, RecursionError):
        tree = None
    node = tree.body[0] if tree is not None and tree.body else None
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == fn.__name__:
        a = node.args
        written = [arg.arg for arg in [*a.posonlyargs, *a.args, a.vararg] if arg is not None]
        written += [arg.arg for arg in [*a.kwonlyargs, a.kwarg] if arg is not None]
        shown = list(sig.parameters)
        if written == shown or ((a.posonlyargs or a.args) and written[1:] == shown):
            return def_signature(name, node, bound=written != shown)  # bound: no self / cls
    return f"{name}{sig}"
