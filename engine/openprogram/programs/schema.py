"""Tool parameter schemas with ``input`` metadata, built on :mod:`function_tools`.

:func:`build_parameters` takes the signature schema of
:func:`openprogram.programs.function_tools.parameters_schema` (runtime-injected parameters
already excluded) and applies the ``input`` metadata of ``method_options``:
``description``, ``options`` (-> ``enum``) and ``hidden`` (parameter removed). The first
parameter of a method (``self``/``cls``) is dropped. A model's arguments are checked and
converted by :func:`openprogram.programs.function_tools.validated_arguments`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import openprogram.runtime  # noqa: F401  (load first: runtime <-> function_tools import cycle)
from openprogram.programs.function_tools import RUNTIME_PARAMS, parameters_schema, parse_docstring

__all__ = ["INJECTED_PARAMS", "build_parameters", "visible_params"]

INJECTED_PARAMS = RUNTIME_PARAMS


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
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    return out


def visible_params(parameters: Mapping[str, Any]) -> list[str]:
    """Parameter names of a schema (for messages)."""
    return list((parameters.get("properties") or {}).keys())
