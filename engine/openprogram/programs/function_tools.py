"""Plain Python functions as model tools: JSON-schema spec from the signature, and dispatch.

``tool_spec(fn)`` builds a :class:`ToolSpec` from the function name, the first paragraph
of its docstring, its parameters' type hints and defaults, and per-parameter descriptions
from a Google-style ``Args:`` section or ``:param x:`` lines. Parameters named
``runtime``, ``exec_runtime`` or ``review_runtime`` are hidden from the schema and filled
with the running :class:`~openprogram.runtime.Runtime` when the tool is called.

``as_tool(obj)`` turns a plain callable, or any object with a ``spec`` (a ToolSpec or a
dict with ``name``/``description``/``parameters``) and an ``execute(**kwargs)`` method,
into a :class:`Tool` with one calling convention. The full registry builds on this.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union

from openprogram.errors import ConfigError
from openprogram.runtime.types import ToolSpec

RUNTIME_PARAMS = frozenset({"runtime", "exec_runtime", "review_runtime"})
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    bytes: {"type": "string"},
}


class ToolArgumentError(TypeError):
    """The model called a tool with arguments that do not fit its signature."""


@dataclasses.dataclass
class Tool:
    """A model-callable tool: its spec and a function taking the model's arguments."""

    spec: ToolSpec
    call: Callable[..., Any]
    wants_runtime: tuple[str, ...] = ()
    source: Any = None

    @property
    def name(self) -> str:
        return self.spec.name

    def invoke(self, arguments: Mapping[str, Any], runtime: Any = None) -> Any:
        """Call the tool with the model's ``arguments`` (runtime params injected)."""
        kwargs = dict(arguments)
        for param in self.wants_runtime:
            if kwargs.get(param) is None:
                kwargs[param] = runtime
        return call_with_arguments(self.call, kwargs)


def call_with_arguments(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    """Call ``fn`` with a model's ``arguments`` (given by name), see :func:`split_arguments`."""
    args, kwargs = split_arguments(fn, arguments)
    return fn(*args, **kwargs)


def split_arguments(
    fn: Callable[..., Any], arguments: Mapping[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A model's ``arguments`` (given by name) as ``fn``'s ``(args, kwargs)``:
    positional-only parameters by position (a skipped one before a given one by its
    default), the others by keyword."""
    kwargs = dict(arguments)
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return (), kwargs
    leading = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY]
    given = [i for i, p in enumerate(leading) if p.name in kwargs]
    args: list[Any] = []
    for p in leading[: given[-1] + 1] if given else ():
        if p.name in kwargs:
            args.append(kwargs.pop(p.name))
        elif p.default is not inspect.Parameter.empty:
            args.append(p.default)
        else:  # a required one missing: let the call say so
            break
    return tuple(args), kwargs


def tool_spec(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
) -> ToolSpec:
    """The :class:`ToolSpec` of a plain function (overrides win over the signature)."""
    tool_name = str(name or getattr(fn, "__name__", ""))
    if not _NAME.match(tool_name):
        raise ConfigError(
            f"tool name {tool_name!r} is not valid: use 1-64 letters, digits, '_' or '-' "
            "(pass name= for lambdas and partials)"
        )
    summary, param_docs = parse_docstring(inspect.getdoc(fn) or "")
    schema = parameters if parameters is not None else parameters_schema(fn, param_docs)
    check_json_schema(tool_name, schema)
    return ToolSpec(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=schema,
    )


def check_json_schema(tool_name: str, schema: Any) -> None:
    """Raise :class:`ConfigError` naming the tool and the place when its parameters
    schema holds a number JSON cannot carry (``inf``, ``nan``), which would fail every
    request offering the tool."""

    def walk(node: Any, path: str) -> str | None:
        if isinstance(node, float) and not math.isfinite(node):
            return path
        items: Iterable[tuple[Any, Any]] = ()
        if isinstance(node, Mapping):
            items = node.items()
        elif isinstance(node, (list, tuple)):
            items = enumerate(node)
        for key, value in items:
            found = walk(value, f"{path}[{key!r}]")
            if found is not None:
                return found
        return None

    where = walk(schema, "parameters")
    if where is not None:
        raise ConfigError(
            f"tool {tool_name!r}: {where} is not a JSON number (inf and nan cannot be sent "
            "to a model); use a finite value or leave it out"
        )


def parameters_schema(
    fn: Callable[..., Any], descriptions: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """JSON schema (``type: object``) of ``fn``'s parameters, runtime params excluded."""
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in signature.parameters.values():
        if param.name in RUNTIME_PARAMS or param.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        annotation = hints.get(param.name, param.annotation)
        schema = {} if annotation is inspect.Parameter.empty else dict(type_schema(annotation))
        if param.default is None:
            schema = nullable(schema)  # ``x: T = None`` accepts an explicit null
        if descriptions and param.name in descriptions:
            schema["description"] = descriptions[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif _jsonable(param.default):
            schema["default"] = param.default
        properties[param.name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        out["required"] = required
    defs = hoist_defs(properties)
    if defs:
        out["$defs"] = defs
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        out["additionalProperties"] = False  # closed, as strict tool calling requires
    return out


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts ``null`` (``{}`` accepts anything already)."""
    if not schema:
        return schema
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"] if kind != "null" else "null"
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(kind, list):
        if "null" not in kind:
            out["type"] = [*kind, "null"]
        return out
    if "enum" in out:
        if None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if "anyOf" in out:
        if {"type": "null"} not in out["anyOf"]:
            out["anyOf"] = [*out["anyOf"], {"type": "null"}]
        return out
    return {"anyOf": [out, {"type": "null"}]}


def type_schema(annotation: Any) -> dict[str, Any]:
    """JSON schema of one type hint (unknown types give ``{}``, i.e. anything)."""
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    if annotation is Any or annotation is object:
        return {}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_schema(args[0])
    if origin is Literal:
        return {"enum": list(args)}
    if origin is Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        options = [a for a in args if a is not type(None)]
        union: dict[str, Any] = (
            type_schema(options[0])
            if len(options) == 1
            else {"anyOf": [type_schema(a) for a in options]}
        )
        return nullable(union) if len(options) < len(args) else union
    if annotation in (list, set, frozenset, tuple) or origin in (list, set, frozenset, tuple):
        item = args[0] if args and (origin is not tuple or len(args) == 2) else None
        schema: dict[str, Any] = {"type": "array"}
        if item is not None and item is not Ellipsis:
            schema["items"] = type_schema(item)
        return schema
    if annotation is dict or origin in (dict, Mapping) or annotation is Mapping:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    schema_fn = getattr(annotation, "model_json_schema", None)
    if callable(schema_fn):  # pydantic model
        result = schema_fn()
        return copy.deepcopy(result) if isinstance(result, dict) else {}
    return {}


def hoist_defs(node: Any) -> dict[str, Any]:
    """Move every nested ``$defs`` (pydantic models) out of ``node``, to put at the root.

    ``$ref: "#/$defs/X"`` resolves from the schema root, so a model's ``$defs`` pasted
    into a property would not resolve. A name defined twice with different content is
    renamed (``X_2``) together with the refs of the sub-schema that defined it.
    """
    defs: dict[str, Any] = {}

    def walk(item: Any) -> None:
        if isinstance(item, list):
            for x in item:
                walk(x)
            return
        if not isinstance(item, dict):
            return
        local = item.pop("$defs", None)
        if isinstance(local, dict):
            walk(local)  # defs inside defs (not made by pydantic, but possible)
            renames: dict[str, str] = {}
            for name, body in local.items():
                new, n = name, 1
                while (new in defs and defs[new] != body) or (new != name and new in local):
                    n += 1
                    new = f"{name}_{n}"
                if new != name:
                    renames[name] = new
            if renames:
                _rename_refs(item, renames)
                _rename_refs(local, renames)
            for name, body in local.items():
                defs[renames[name] if name in renames else str(name)] = body
        for value in item.values():
            walk(value)

    walk(node)
    return defs


def _rename_refs(node: Any, renames: Mapping[str, str]) -> None:
    if isinstance(node, list):
        for x in node:
            _rename_refs(x, renames)
    elif isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/") :]
            if name in renames:
                node["$ref"] = "#/$defs/" + renames[name]
        for value in node.values():
            _rename_refs(value, renames)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph, and parameter descriptions from a Google ``Args:`` section or
    reST ``:param x:`` fields; a line indented deeper than a parameter's continues its
    description (even one reading ``word: text``)."""
    paragraphs = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)
    summary = " ".join(paragraphs[0].split()) if doc.strip() else ""
    if re.match(r"^(Args|Arguments|Parameters|Returns|Raises):", summary):
        summary = ""
    params: dict[str, str] = {}

    def add(name: str, line: str) -> None:
        params[name] = f"{params[name]} {line.strip()}".strip()

    # reST: ``:param [type] x: text``; lines indented deeper than it continue the text
    field: tuple[str, int] | None = None
    for line in doc.splitlines():
        depth = len(line) - len(line.lstrip())
        rest = re.match(r"^\s*:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$", line)
        if rest:
            field = (rest.group(1), depth)
            params[field[0]] = rest.group(2).strip()
        elif field is not None and line.strip() and depth > field[1]:
            add(field[0], line)
        else:
            field = None
    # Google: ``x (type): text`` under ``Args:``; lines indented deeper than the
    # parameters continue the text of the one before, even when they read ``word: text``
    section = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?|\s*\n)*)", doc, re.M)
    if section:
        current: str | None = None
        indent: int | None = None
        for line in section.group(1).splitlines():
            if not line.strip():
                continue
            depth = len(line) - len(line.lstrip())
            item = re.match(r"^\s{1,8}\*{0,2}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if item and (indent is None or depth <= indent):
                indent = depth
                current = item.group(1)
                params[current] = item.group(2).strip()
            elif current:
                add(current, line)
    return summary, params


def as_tool(obj: Any) -> Tool:
    """A :class:`Tool` from a plain callable or a ``spec``/``execute`` object."""
    if isinstance(obj, Tool):
        return obj
    spec = getattr(obj, "spec", None)
    execute = getattr(obj, "execute", None)
    if spec is not None and callable(execute):
        return Tool(spec=_coerce_spec(spec, obj), call=execute, source=obj)
    if callable(obj):
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        wants = tuple(p for p in params if p in RUNTIME_PARAMS)
        return Tool(spec=tool_spec(obj), call=obj, wants_runtime=wants, source=obj)
    raise ConfigError(
        f"{obj!r} is not a tool: pass a function, or an object with 'spec' and 'execute'"
    )


def _coerce_spec(spec: Any, obj: Any) -> ToolSpec:
    if isinstance(spec, ToolSpec):
        return spec
    if isinstance(spec, Mapping):
        data = spec.get("function") if spec.get("type") == "function" else spec
        if isinstance(data, Mapping) and isinstance(data.get("name"), str):
            return ToolSpec(
                name=data["name"],
                description=str(data.get("description") or ""),
                parameters=dict(
                    data.get("parameters")
                    or data.get("input_schema")
                    or {"type": "object", "properties": {}}
                ),
            )
    raise ConfigError(
        f"tool {obj!r} has a 'spec' that is neither a ToolSpec nor a dict with "
        "'name', 'description' and 'parameters'"
    )


def check_arguments(tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` checked and converted for ``tool`` (see :func:`validated_arguments`)."""
    return validated_arguments(
        tool.name, tool.spec.parameters, tool.call, arguments, open_kwargs=_has_var_kw(tool)
    )


def validated_arguments(
    name: str,
    parameters: Mapping[str, Any],
    fn: Callable[..., Any] | None,
    arguments: Mapping[str, Any],
    *,
    open_kwargs: bool = False,
) -> dict[str, Any]:
    """The model's ``arguments`` for tool ``name``, converted to ``fn``'s annotated types.

    The one rule for every tool (plain functions and registered ones): required and
    unknown parameters and ``enum`` values come from the ``parameters`` schema; each
    annotated parameter is validated and converted by pydantic in strict JSON mode, so a
    pydantic model, dataclass or Enum parameter arrives as that type, ``"3"`` or ``true``
    is not an ``int``, and an ``int`` is a ``float``. Raises :class:`ToolArgumentError`
    naming each bad parameter.
    """
    properties = parameters.get("properties")
    problems: list[str] = []
    if not isinstance(properties, Mapping):  # a hand-written spec without properties
        properties = {}
    else:
        missing = [p for p in parameters.get("required") or [] if p not in arguments]
        if missing:
            problems.append("missing required " + ", ".join(repr(m) for m in missing))
    closed = parameters.get("additionalProperties") is not True and not open_kwargs
    if closed and isinstance(parameters.get("properties"), Mapping):
        unknown = [a for a in arguments if a not in properties]
        if unknown:
            problems.append("unknown " + ", ".join(repr(u) for u in unknown))
    hints = _parameter_hints(fn) if fn is not None else {}
    bare = _unannotated(fn) if fn is not None else set()
    out = dict(arguments)
    for param, value in arguments.items():
        prop = properties.get(param)
        choices = prop.get("enum") if isinstance(prop, Mapping) else None
        if isinstance(choices, list) and value not in choices:
            if not (isinstance(value, enum.Enum) and value.value in choices):
                problems.append(f"{param!r} must be one of {choices!r}, got {value!r}")
                continue
        adapter = _adapter(hints[param]) if param in hints else None
        if adapter is None:  # a function's parameter with no annotation: the schema's type
            if isinstance(prop, Mapping) and param in bare:
                if not _json_type_ok(value, prop.get("type")):
                    problems.append(f"{param!r} must be {prop['type']}, got {type(value).__name__}")
            continue
        try:
            out[param] = _convert(adapter, value)
        except Exception as exc:  # pydantic.ValidationError
            problems.append(_conversion_problem(param, exc))
    if problems:
        raise ToolArgumentError(
            f"bad arguments for tool {name!r}: {'; '.join(problems)}; "
            f"expected parameters: {', '.join(properties) or '(none)'}"
        )
    return out


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _json_type_ok(value: Any, declared: Any) -> bool:
    """Whether ``value`` is of the schema ``type`` ``declared`` (a name or a list of
    them; anything else, or a name this rule does not know, accepts every value). A
    ``bool`` is not an ``integer`` or a ``number``."""
    names = [declared] if isinstance(declared, str) else declared
    if not isinstance(names, list) or not names:
        return True
    for type_name in names:
        accepted = _JSON_TYPES.get(type_name) if isinstance(type_name, str) else None
        if accepted is None:
            return True
        if isinstance(value, bool) and type_name in ("integer", "number"):
            continue
        if isinstance(value, accepted):
            return True
    return False


def _unannotated(fn: Callable[..., Any]) -> set[str]:
    """The parameters ``fn`` names without an annotation (none for a ``**kwargs``
    wrapper, whose callee checks its own)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.annotation is inspect.Parameter.empty}


def _parameter_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: no conversion
        return {}
    hints.pop("return", None)
    for name in RUNTIME_PARAMS:
        hints.pop(name, None)
    return hints


def _adapter(annotation: Any) -> Any:
    try:
        return _cached_adapter(annotation)
    except TypeError:  # unhashable annotation
        return _make_adapter(annotation)


@functools.lru_cache(maxsize=512)
def _cached_adapter(annotation: Any) -> Any:
    return _make_adapter(annotation)


def _make_adapter(annotation: Any) -> Any:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(annotation)
    except Exception:  # a type pydantic cannot validate: passed through unchanged
        return None


def _convert(adapter: Any, value: Any) -> Any:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # Python objects from a direct call: as they are
        return adapter.validate_python(value, strict=True)
    return adapter.validate_json(text, strict=True)


def _conversion_problem(param: str, exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return f"{param!r}: {exc}"
    parts = []
    for err in errors()[:3]:
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.get("loc", ()))
        parts.append(f"{param + loc!r}: {err.get('msg')}, got {err.get('input')!r}")
    return "; ".join(parts)


def _has_var_kw(tool: Tool) -> bool:
    try:
        params = inspect.signature(tool.call).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _jsonable(value: Any) -> bool:
    """Whether a parameter default goes into the schema as its ``default``: a JSON scalar
    (not ``inf``/``nan``, which JSON cannot carry). Others are left out; the parameter
    stays optional and the function's own default applies."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, (str, int, bool))
