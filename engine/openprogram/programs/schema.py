"""Tool parameter schemas with ``input`` metadata, built on :mod:`function_tools`.

:func:`build_parameters` takes the signature schema of
:func:`openprogram.programs.function_tools.parameters_schema` (runtime-injected parameters
already excluded) and applies the ``input`` metadata of ``method_options``:
``description``, ``options`` (-> ``enum``) and ``hidden`` (parameter removed). The first
parameter of a method (``self``/``cls``) is dropped. :func:`validate_arguments` checks a
model's arguments against such a schema (required, unknown, JSON types, enums).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import openprogram.runtime  # noqa: F401  (load first: runtime <-> function_tools import cycle)
from openprogram.programs.function_tools import RUNTIME_PARAMS, parameters_schema, parse_docstring

__all__ = ["INJECTED_PARAMS", "build_parameters", "validate_arguments", "visible_params"]

INJECTED_PARAMS = RUNTIME_PARAMS
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _bound_first(fn: Callable[..., Any]) -> str | None:
    """Name of ``self``/``cls`` when ``fn`` is a plain function defined as a method."""
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    return params[0] if params and params[0] in ("self", "cls") else None


def build_parameters(
    fn: Callable[..., Any],
    input_meta: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    drop_first: bool = False,
) -> dict[str, Any]:
    """JSON-schema ``parameters`` of ``fn`` with ``input`` metadata applied."""
    _, docs = parse_docstring(inspect.getdoc(fn) or "")
    schema = parameters_schema(fn, docs)
    props: dict[str, Any] = dict(schema.get("properties") or {})
    required = [r for r in schema.get("required") or []]
    first = _bound_first(fn)
    if drop_first and first is None:
        params = list(inspect.signature(fn).parameters)
        first = params[0] if params else None
    if first is not None:
        props.pop(first, None)
        required = [r for r in required if r != first]
    for name, meta in (input_meta or {}).items():
        if name not in props:
            continue
        if meta.get("hidden"):
            props.pop(name)
            required = [r for r in required if r != name]
            continue
        prop = dict(props[name])
        if meta.get("description"):
            prop["description"] = str(meta["description"])
        if isinstance(meta.get("options"), list):
            prop["enum"] = list(meta["options"])
        props[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if "additionalProperties" in schema:
        out["additionalProperties"] = schema["additionalProperties"]
    return out


def visible_params(parameters: Mapping[str, Any]) -> list[str]:
    """Parameter names of a schema (for messages)."""
    return list((parameters.get("properties") or {}).keys())


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    tp = schema.get("type")
    types = [tp] if isinstance(tp, str) else list(tp) if isinstance(tp, list) else []
    if not types:
        return True
    for name in types:
        py = _JSON_TYPES.get(name)
        if py is None:
            return True
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if isinstance(value, py):
            return True
    return False


def validate_arguments(parameters: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """'' when ``arguments`` fit ``parameters``, else a one-line description of the problem."""
    props = parameters.get("properties")
    if not isinstance(props, Mapping):
        return ""
    problems: list[str] = []
    missing = [r for r in parameters.get("required") or [] if r not in arguments]
    if missing:
        problems.append("missing required " + ", ".join(repr(m) for m in missing))
    if parameters.get("additionalProperties") is not True:
        unknown = [a for a in arguments if a not in props]
        if unknown:
            problems.append("unknown " + ", ".join(repr(u) for u in unknown))
    for name, value in arguments.items():
        prop = props.get(name)
        if not isinstance(prop, Mapping):
            continue
        if "enum" in prop and value not in prop["enum"]:
            problems.append(f"{name!r} must be one of {prop['enum']!r}, got {value!r}")
        elif not _type_ok(value, prop):
            problems.append(f"{name!r} must be {prop.get('type')}, got {type(value).__name__}")
    if problems:
        expected = ", ".join(props) or "(none)"
        return f"{'; '.join(problems)} (expected parameters: {expected})"
    return ""
