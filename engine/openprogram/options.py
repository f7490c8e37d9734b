"""The one table of ``method_options`` keys, and the checks shared by runtime and analyzer.

Pure module (stdlib only). The runtime calls :func:`check_method_options` on the real,
MRO-merged ``method_options`` of an ``Agent`` subclass and raises ``ValueError`` with the
message; the static analyzer (``openprogram_analyzers``) calls the same function on the
literal values it reads from source, so a lint finding and a runtime error carry the same
code (``OP101``...``OP107``) and the same message.

Values the analyzer cannot evaluate statically are passed as :data:`UNKNOWN`; every check
skips them.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "EXPOSE_VALUES",
    "INPUT_FIELDS",
    "OPTIONS",
    "RENDER_RANGE_DOCS",
    "RENDER_RANGE_KEYS",
    "TOOL_FLAG_KEYS",
    "TOOL_ONLY_KEYS",
    "UNKNOWN",
    "OptionProblem",
    "OptionSpec",
    "bad_expose_message",
    "bad_render_range_message",
    "check_method_options",
    "did_you_mean",
    "input_field_message",
    "merge_method_options",
    "tool_methods",
    "tool_only_message",
    "unknown_key_message",
    "unknown_method_message",
    "wrong_type_message",
]


class _Unknown:
    """Marker for a value that is not known statically (a name, a call, ...)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""A value the analyzer could not evaluate; every check skips it."""


@dataclass(frozen=True)
class OptionSpec:
    """One ``method_options`` key.

    ``kind`` is one of ``str``, ``bool``, ``int``, ``float``, ``dict``, ``str_tuple``,
    ``callable``, ``any``, ``expose``, ``render_range``, ``input``. ``nullable`` says whether
    ``None`` is accepted. ``allowed`` lists the allowed values of enum-like keys.
    """

    key: str
    kind: str
    default: Any
    doc: str
    tool_only: bool = False
    nullable: bool = False
    allowed: tuple[Any, ...] | None = None

    @property
    def type_label(self) -> str:
        """Human-readable expected type, used in messages and hovers."""
        label = _KIND_LABELS.get(self.kind, self.kind)
        if self.allowed is not None:
            label = " | ".join(repr(v) for v in self.allowed)
        return f"{label} or None" if self.nullable else label


_KIND_LABELS = {
    "str": "str",
    "bool": "bool",
    "int": "int",
    "float": "float",
    "dict": "dict",
    "str_tuple": "tuple of str",
    "callable": "callable",
    "any": "any value",
    "render_range": 'dict {"callers": int | None, "subcalls": int}',
    "input": "dict {param: {description, placeholder, multiline, options, hidden}}",
}

EXPOSE_VALUES: tuple[str, ...] = ("full", "io", "llm", "hidden")
RENDER_RANGE_KEYS: tuple[str, ...] = ("callers", "subcalls")
RENDER_RANGE_DOCS: dict[str, str] = {
    "callers": "`int >= 0 | None` — how many nodes before this call are rendered "
    "(None = all, 0 = none).",
    "subcalls": "`int >= -1` — how many nodes inside this call are rendered (-1 = all).",
}
INPUT_FIELDS: dict[str, str] = {
    "description": "str",
    "placeholder": "str",
    "multiline": "bool",
    "options": "list",
    "hidden": "bool",
}
TOOL_FLAG_KEYS: tuple[str, ...] = ("tool", "as_tool")


def _spec(key: str, kind: str, default: Any, doc: str, **kw: Any) -> OptionSpec:
    return OptionSpec(key=key, kind=kind, default=default, doc=doc, **kw)


OPTIONS: dict[str, OptionSpec] = {
    s.key: s
    for s in (
        _spec(
            "expose",
            "expose",
            "full",
            'What others see of this call in the DAG: "full" (default), "io" (default for tools), "llm", or "hidden" (no node).',
            allowed=EXPOSE_VALUES,
        ),
        _spec(
            "render_range",
            "render_range",
            None,
            'History slicing for llm() inside this call: {"callers": N|None, "subcalls": M}; callers None=all, 0=none; subcalls -1=all.',
            nullable=True,
        ),
        _spec(
            "input",
            "input",
            None,
            "UI/schema metadata per parameter: {param: {description, placeholder, multiline, options, hidden}}; options becomes a JSON-schema enum.",
            nullable=True,
        ),
        _spec(
            "system",
            "str",
            None,
            "System prompt for model calls inside this method.",
            nullable=True,
        ),
        _spec(
            "resumable",
            "bool",
            False,
            "The method is a resumable orchestration: its step() calls are checkpointed.",
        ),
        _spec("tool", "bool", False, "Register the method as a model-callable tool."),
        _spec("as_tool", "bool", False, "Alias of tool."),
        _spec(
            "name",
            "str",
            None,
            "Tool name override (default: the method name).",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "description",
            "str",
            None,
            "Tool description override (default: the docstring).",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "parameters",
            "dict",
            None,
            "JSON-schema parameters override (default: from the signature and input metadata).",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "label",
            "str",
            None,
            "Human-readable label shown in tool UIs.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "toolset",
            "str_tuple",
            (),
            "Names of the toolsets this tool belongs to.",
            tool_only=True,
        ),
        _spec(
            "unsafe_in",
            "str_tuple",
            (),
            "Channel sources where the tool is filtered out.",
            tool_only=True,
        ),
        _spec(
            "check_fn",
            "callable",
            None,
            "Per-call gate run before dispatch; a falsy result blocks the call.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "can_use",
            "callable",
            None,
            "Dynamic availability predicate evaluated when tools are resolved.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "available_if",
            "callable",
            None,
            "Registration gate: a falsy result (or an exception) skips tool registration.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "requires_env",
            "str_tuple",
            (),
            "Environment variables that must be set for the tool to be offered.",
            tool_only=True,
        ),
        _spec(
            "max_result_chars",
            "int",
            30_000,
            "Truncation limit of the result fed back to the model (registry default 30,000).",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "persist_full",
            "bool",
            False,
            "Save the untruncated result so the agent can read it back.",
            tool_only=True,
        ),
        _spec(
            "head_ratio",
            "float",
            0.7,
            "Share of a truncated result kept from the head (the rest from the tail).",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "requires_approval",
            "any",
            None,
            "Approval requirement forwarded to the tool registry.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "cache",
            "bool",
            False,
            "Memoise tool dispatches by (name, args).",
            tool_only=True,
        ),
        _spec(
            "cache_ttl",
            "float",
            300.0,
            "Lifetime in seconds of cached results when cache=True.",
            tool_only=True,
        ),
        _spec(
            "timeout",
            "float",
            None,
            "Hard wall-clock limit in seconds of a tool dispatch; the model receives an error result.",
            tool_only=True,
            nullable=True,
        ),
        _spec(
            "defer",
            "bool",
            False,
            "Register as a deferred tool (schema loaded on demand).",
            tool_only=True,
        ),
        _spec(
            "register_globally",
            "bool",
            True,
            "False builds the tool without adding it to the global registry.",
            tool_only=True,
        ),
    )
}
"""Every valid ``method_options`` key (SPEC §2.3)."""

TOOL_ONLY_KEYS: frozenset[str] = frozenset(k for k, s in OPTIONS.items() if s.tool_only)


class OptionProblem(tuple):
    """``(code, message, path)``; ``on_key`` says whether the problem is the key itself.

    ``path`` is the chain of keys from the method name down to the offending key/value,
    e.g. ``("f", "render_range", "callers")``.
    """

    on_key: bool

    def __new__(
        cls, code: str, message: str, path: tuple[str, ...], on_key: bool = False
    ) -> OptionProblem:
        self = super().__new__(cls, (code, message, path))
        self.on_key = on_key
        return self

    @property
    def code(self) -> str:
        return str(self[0])

    @property
    def message(self) -> str:
        return str(self[1])

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self[2])


# --------------------------------------------------------------------------- messages


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to ``word`` (difflib), or None."""
    matches = difflib.get_close_matches(word, sorted(set(candidates)), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _suggest(word: str, candidates: Iterable[str]) -> str:
    best = did_you_mean(word, candidates)
    return f"; did you mean {best!r}?" if best else ""


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def unknown_key_message(key: str, method: str | None = None) -> str:
    """OP102: unknown option key, with a did-you-mean."""
    where = f" (method {method!r})" if method else ""
    return f"unknown method_options key {key!r}{where}{_suggest(key, OPTIONS)}"


def wrong_type_message(method: str, key: str, expected: str, value: Any) -> str:
    """OP103: option value of the wrong type."""
    return (
        f"method_options[{method!r}][{key!r}] must be {expected}, "
        f"got {_type_name(value)} {_short_repr(value)}"
    )


def bad_expose_message(value: Any) -> str:
    """OP104: invalid ``expose`` value."""
    allowed = ", ".join(repr(v) for v in EXPOSE_VALUES)
    hint = _suggest(value, EXPOSE_VALUES) if isinstance(value, str) else ""
    return f"invalid expose value {_short_repr(value)}: expected one of {allowed}{hint}"


def bad_render_range_message(detail: str) -> str:
    """OP105: malformed ``render_range``."""
    return (
        f"malformed render_range: {detail} "
        '(expected {"callers": int >= 0 or None, "subcalls": int >= -1})'
    )


def tool_only_message(key: str, method: str) -> str:
    """OP106: tool-only option on a method without ``tool=True``."""
    return (
        f"{key!r} is a tool-only option but method {method!r} is not a tool; "
        f'add "tool": True to method_options[{method!r}] or remove {key!r}'
    )


def unknown_method_message(method: str, available: Iterable[str]) -> str:
    """OP101: ``method_options`` key that names no method of the class."""
    return (
        f"method_options key {method!r} names no method of the class{_suggest(method, available)}"
    )


def input_field_message(
    method: str, param: str, *, field: str | None = None, problem: str = "unknown_field"
) -> str:
    """OP107: malformed ``input`` metadata.

    ``problem`` is ``unknown_field``, ``unknown_param`` or ``options_not_list``.
    """
    if problem == "unknown_param":
        return f"input metadata of method {method!r} names {param!r}, which is not a parameter of {method!r}"
    if problem == "options_not_list":
        return f"input[{param!r}]['options'] of method {method!r} must be a list of allowed values"
    assert field is not None
    return (
        f"unknown input field {field!r} for parameter {param!r} of method {method!r}"
        f"{_suggest(field, INPUT_FIELDS)} (allowed: {', '.join(INPUT_FIELDS)})"
    )


def _short_repr(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- checks


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _kind_ok(kind: str, v: Any) -> bool:
    if kind == "str":
        return isinstance(v, str)
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return _is_int(v)
    if kind == "float":
        return _is_int(v) or isinstance(v, float)
    if kind == "dict":
        return isinstance(v, Mapping)
    if kind == "str_tuple":
        return isinstance(v, (tuple, list)) and all(isinstance(x, str) or x is UNKNOWN for x in v)
    if kind == "callable":
        return callable(v)
    return True


def _param_names(sig: inspect.Signature | Sequence[str]) -> tuple[set[str], bool]:
    """Parameter names and whether arbitrary keywords (``**kwargs``) are accepted."""
    if isinstance(sig, inspect.Signature):
        names = set()
        var_kw = False
        for p in sig.parameters.values():
            if p.kind is inspect.Parameter.VAR_KEYWORD:
                var_kw = True
            elif p.kind is not inspect.Parameter.VAR_POSITIONAL:
                names.add(p.name)
        return names, var_kw
    names = {n for n in sig if not n.startswith("*")}
    return names, any(n.startswith("**") for n in sig)


def _check_render_range(method: str, value: Any) -> list[OptionProblem]:
    path = (method, "render_range")
    if value is None or value is UNKNOWN:
        return []
    if not isinstance(value, Mapping):
        return [
            OptionProblem(
                "OP105",
                bad_render_range_message(f"got {_type_name(value)}, not a dict"),
                path,
            )
        ]
    out: list[OptionProblem] = []
    for k, v in value.items():
        if k is UNKNOWN:
            continue
        if k not in RENDER_RANGE_KEYS:
            out.append(
                OptionProblem(
                    "OP105",
                    bad_render_range_message(
                        f"unknown key {k!r}{_suggest(str(k), RENDER_RANGE_KEYS)}"
                    ),
                    (*path, str(k)),
                    on_key=True,
                )
            )
        elif v is UNKNOWN:
            continue
        elif k == "callers" and not (v is None or (_is_int(v) and v >= 0)):
            out.append(
                OptionProblem(
                    "OP105",
                    bad_render_range_message(
                        f"'callers' must be an int >= 0 or None, got {_short_repr(v)}"
                    ),
                    (*path, k),
                )
            )
        elif k == "subcalls" and not (_is_int(v) and v >= -1):
            out.append(
                OptionProblem(
                    "OP105",
                    bad_render_range_message(
                        f"'subcalls' must be an int >= -1, got {_short_repr(v)}"
                    ),
                    (*path, k),
                )
            )
    return out


def _check_input(
    method: str, value: Any, signature: inspect.Signature | Sequence[str] | None
) -> list[OptionProblem]:
    path = (method, "input")
    if value is None or value is UNKNOWN:
        return []
    if not isinstance(value, Mapping):
        return [OptionProblem("OP103", wrong_type_message(method, "input", "dict", value), path)]
    params, var_kw = _param_names(signature) if signature is not None else (set(), True)
    out: list[OptionProblem] = []
    for param, meta in value.items():
        if param is UNKNOWN:
            continue
        ppath = (*path, str(param))
        if not var_kw and param not in params:
            msg = input_field_message(method, str(param), problem="unknown_param")
            msg += _suggest(str(param), params)
            out.append(OptionProblem("OP107", msg, ppath, on_key=True))
        if meta is UNKNOWN:
            continue
        if not isinstance(meta, Mapping):
            out.append(
                OptionProblem(
                    "OP107",
                    f"input[{param!r}] of method {method!r} must be a dict of "
                    f"{', '.join(INPUT_FIELDS)}, got {_type_name(meta)}",
                    ppath,
                )
            )
            continue
        for field, fval in meta.items():
            if field is UNKNOWN:
                continue
            fpath = (*ppath, str(field))
            if field not in INPUT_FIELDS:
                out.append(
                    OptionProblem(
                        "OP107",
                        input_field_message(method, str(param), field=str(field)),
                        fpath,
                        on_key=True,
                    )
                )
            elif fval is UNKNOWN:
                continue
            elif field == "options":
                if not isinstance(fval, list):
                    out.append(
                        OptionProblem(
                            "OP107",
                            input_field_message(method, str(param), problem="options_not_list"),
                            fpath,
                        )
                    )
            elif not _kind_ok(INPUT_FIELDS[field], fval):
                out.append(
                    OptionProblem(
                        "OP103",
                        f"input[{param!r}][{field!r}] of method {method!r} must be "
                        f"{INPUT_FIELDS[field]}, got {_type_name(fval)} {_short_repr(fval)}",
                        fpath,
                    )
                )
    return out


def merge_method_options(tables: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``method_options`` tables merged the way a class inherits them (SPEC §2.3): given
    base first, each method's entry is updated by the later tables' entries for it (what
    is not a dict is left out). The runtime passes its classes' MRO, reversed; the
    analyzer the literal tables of a class and its bases in the module."""
    merged: dict[str, dict[str, Any]] = {}
    for table in tables:
        if isinstance(table, Mapping):
            for method, entry in table.items():
                if isinstance(entry, Mapping):
                    merged.setdefault(str(method), {}).update(entry)
    return merged


def tool_methods(merged: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The methods a merged ``method_options`` makes tools (``tool`` or ``as_tool``)."""
    return {m for m, entry in merged.items() if any(entry.get(k) for k in TOOL_FLAG_KEYS)}


def check_method_entry(
    method: str,
    entry: Any,
    signature: inspect.Signature | Sequence[str] | None = None,
    *,
    is_tool: bool | None = None,
) -> list[OptionProblem]:
    """Check the options of one method. ``is_tool=None`` derives it from ``entry``."""
    if entry is UNKNOWN:
        return []
    if not isinstance(entry, Mapping):
        return [
            OptionProblem(
                "OP103",
                f"method_options[{method!r}] must be a dict of options, got {_type_name(entry)}",
                (method,),
            )
        ]
    out: list[OptionProblem] = []
    if is_tool is None:
        flags = [entry.get(k) for k in TOOL_FLAG_KEYS if k in entry]
        is_tool = any(f is True for f in flags) or any(f is UNKNOWN for f in flags)
    for key, value in entry.items():
        if key is UNKNOWN:
            continue
        spec = OPTIONS.get(key) if isinstance(key, str) else None
        path = (method, str(key))
        if spec is None:
            out.append(
                OptionProblem("OP102", unknown_key_message(str(key), method), path, on_key=True)
            )
            continue
        if spec.tool_only and not is_tool:
            out.append(OptionProblem("OP106", tool_only_message(key, method), path, on_key=True))
        if value is UNKNOWN or (value is None and spec.nullable):
            continue
        if spec.kind == "expose":
            if value not in EXPOSE_VALUES:
                out.append(OptionProblem("OP104", bad_expose_message(value), path))
        elif spec.kind == "render_range":
            out.extend(_check_render_range(method, value))
        elif spec.kind == "input":
            out.extend(_check_input(method, value, signature))
        elif not _kind_ok(spec.kind, value):
            out.append(
                OptionProblem(
                    "OP103", wrong_type_message(method, key, spec.type_label, value), path
                )
            )
        elif key == "head_ratio" and not 0 < value <= 1:
            out.append(
                OptionProblem(
                    "OP103",
                    wrong_type_message(method, key, "a float in (0, 1]", value),
                    path,
                )
            )
    return out


def check_method_options(
    options: Any,
    methods: Mapping[str, inspect.Signature | Sequence[str]] | None,
    *,
    tool_methods: Iterable[str] = (),
) -> list[OptionProblem]:
    """Check a whole ``method_options`` mapping against the class's methods.

    ``methods`` maps each method name to its signature (or list of parameter names; a name
    starting with ``**`` accepts any keyword). ``methods=None`` means the method set is not
    known completely (OP101 and parameter checks are skipped). ``tool_methods`` are
    methods made tools elsewhere (e.g. a base class's options). Returns
    ``[(code, message, path), ...]`` as :class:`OptionProblem` tuples.
    """
    if options is UNKNOWN:
        return []
    if not isinstance(options, Mapping):
        return [
            OptionProblem(
                "OP103",
                f"method_options must be a dict {{method: {{option: value}}}}, got {_type_name(options)}",
                (),
            )
        ]
    tools = set(tool_methods)
    out: list[OptionProblem] = []
    for method, entry in options.items():
        if method is UNKNOWN:
            continue
        name = str(method)
        sig = None
        if methods is not None:
            if name not in methods:
                out.append(
                    OptionProblem(
                        "OP101", unknown_method_message(name, methods), (name,), on_key=True
                    )
                )
            else:
                sig = methods[name]
        is_tool: bool | None = True if name in tools else None
        if methods is None:
            is_tool = True  # base classes we cannot see may make it a tool: skip OP106
        out.extend(check_method_entry(name, entry, sig, is_tool=is_tool))
    return out
