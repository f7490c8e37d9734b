"""Next-step decisions: the model picks one option from a text menu (SPEC §2.7).

``make(prompt, options)`` renders the options as a menu, asks the model once (plus
retries), parses the ``{"call": ...}`` JSON of the reply and resolves it: a chosen
function runs and its result is returned, a chosen value is returned as is, a chosen
schema option returns ``{"decision": name, **fields}``.

Pieces usable on their own: :func:`render_options`, :func:`extract_action`,
:func:`parse_args`, :func:`resolve_decision`, and :func:`decide_from_reply` (the
``agent(..., choices=...)`` path, with :data:`DECISION_FINISH_INSTRUCTION`).
"""

from __future__ import annotations

import collections.abc
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Union

from openprogram.errors import MenuViolation
from openprogram.schema_grammar import (
    CALL_KEYS,
    FieldSpec,
    ValueMismatch,
    check_menu,
    compile_field,
    compile_schema,
    describe,
    json_type_name,
    list_item_name,
    placeholder,
    scalar_type_name,
    schema_path_text,
    type_label,
    validate_value,
)

__all__ = [
    "DECISION_FINISH_INSTRUCTION",
    "ERROR_KINDS",
    "DecisionError",
    "Menu",
    "Option",
    "Param",
    "build_retry_message",
    "decide_from_reply",
    "extract_action",
    "make",
    "normalize_options",
    "parse_args",
    "render_options",
    "resolve_decision",
]

DECISION_FINISH_INSTRUCTION = (
    "Do the work first (reason, use tools as needed). When you are done, finish with your "
    "decision: your final reply must end with exactly one JSON object in a ```json block "
    'that chooses one of the options below, written as {"call": "<option name>", ...fields}.'
)

# Every kind a DecisionError / parse error can carry.
ERROR_KINDS: tuple[str, ...] = (
    "no_json",  # no JSON object in the reply
    "invalid_json",  # a JSON block that does not parse (truncated, malformed, too deep)
    "missing_call",  # JSON found, but no call/action/function/tool key
    "multiple_calls",  # several different choices in one reply
    "unknown_call",  # the chosen name is not an option
    "invalid_type",  # a field of the wrong type
    "invalid_option",  # a value outside a field's enum
    "missing_field",  # a required field is absent
)

_SCALAR_NAMES = frozenset({"str", "int", "float", "bool", "list", "dict"})
RUNTIME_PARAM_NAMES = frozenset({"runtime", "exec_runtime", "review_runtime"})
REPLY_START_CHARS = 200
_MAX_REPLY_CHARS = 200_000
_MAX_DECODE_ATTEMPTS = 256
_RETRY_REPLY_CHARS = 4_000


class DecisionError(ValueError):
    """The model never produced a valid choice (retries exhausted).

    ``kind`` is one of :data:`ERROR_KINDS`, ``message`` the last error and
    ``reply_start`` the start of the last reply.
    """

    def __init__(self, kind: str, message: str, reply_start: str = "", *, attempts: int = 1):
        self.kind = kind
        self.message = message
        self.reply_start = reply_start
        self.attempts = attempts
        where = f"; reply started: {reply_start!r}" if reply_start else ""
        super().__init__(f"no valid decision after {attempts} attempt(s): {kind}: {message}{where}")


class _ParseError(Exception):
    """One unusable reply (internal; becomes a retry or a :class:`DecisionError`)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


# ----------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Param:
    """One parameter of a function option. Only ``source="llm"`` ones are shown."""

    name: str
    spec: FieldSpec
    required: bool
    default: Any = None
    source: Literal["llm", "context", "runtime"] = "llm"
    nullable: bool = False


@dataclass(frozen=True)
class Option:
    """One normalized menu entry."""

    name: str
    kind: Literal["function", "value", "schema"]
    description: str | None = None
    handler: Callable[..., Any] | None = None
    value: Any = None
    fields: Mapping[str, FieldSpec] = field(default_factory=dict)
    params: tuple[Param, ...] = ()

    @property
    def llm_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.source == "llm")


@dataclass(frozen=True)
class Menu:
    """Normalized options (``options`` keeps their order) plus the raw input."""

    options: Mapping[str, Option]
    raw: Any = None

    def names(self) -> list[str]:
        return list(self.options)


def normalize_options(options: Any, *, context: Any = None) -> Menu:
    """Turn a dict- or list-form menu into a :class:`Menu`.

    A menu that breaks the grammar raises :class:`~openprogram.errors.MenuViolation` (a
    ``TypeError``) with the code and message ``openprogram-lint`` reports for the same
    menu written literally (:func:`~openprogram.schema_grammar.check_menu`, OP301–OP306);
    an empty menu or a list-form function without a usable name raises ``TypeError``.
    """
    if isinstance(options, Menu):
        return options
    problems = check_menu(options)
    if problems:
        first = problems[0]
        raise MenuViolation(first.code, first.message, _menu_location(options, first.path))
    entries: list[Option]
    if isinstance(options, Mapping):
        entries = [_dict_option(key, handler, context) for key, handler in options.items()]
    else:  # a list or tuple (check_menu)
        entries = [_list_option(item, context) for item in options]
    if not entries:
        raise TypeError("a decision menu needs at least one option")
    return Menu({e.name: e for e in entries}, raw=options)


def _menu_location(options: Any, path: tuple[str | int, ...]) -> str:
    """Where a :class:`~openprogram.schema_grammar.SchemaProblem` is in a menu:
    ``decision option 'a', schema['n']``, ``decision menu item 2 'yes'`` (``path`` starts
    at the option's key or index, then the index of the schema in its tuple, then the
    schema's own path)."""
    if not path:
        return "a decision menu"
    head = path[0]
    if isinstance(options, Mapping):
        where = f"decision option {head!r}"
    else:  # a list: the item's index, then its name if it has one
        name = list_item_name(options[head])
        where = f"decision menu item {head}" + (f" {name!r}" if name else "")
    return f"{where}, {schema_path_text(path[2:])}" if len(path) > 2 else where


def _is_function(handler: Any) -> bool:
    return callable(handler) and not isinstance(handler, type)


# The option builders below read a menu check_menu accepted: every tuple is of a shape
# the grammar allows, every name is a non-empty string, every schema compiles.


def _dict_option(name: str, handler: Any, context: Any) -> Option:
    if isinstance(handler, tuple):
        first, second = handler
        if not isinstance(second, str):
            return _schema_option(name, first, second)
        if _is_function(first):
            return _function_option(name, first, second, context)
        return Option(name, "value", description=second, value=first)
    if _is_function(handler):
        return _function_option(name, handler, None, context)
    return Option(name, "value", value=handler)


def _list_option(item: Any, context: Any) -> Option:
    if isinstance(item, tuple) and len(item) == 3:
        return _schema_option(item[0], item[1], item[2])
    head, desc = item if isinstance(item, tuple) else (item, None)
    if isinstance(head, str):
        return Option(head, "value", description=desc, value=head)
    return _function_option(_callable_name(head), head, desc, context)


def _schema_option(name: str, description: str, schema: Mapping[str, Any]) -> Option:
    return Option(name, "schema", description=description, fields=compile_schema(schema))


def _callable_name(fn: Any) -> str:
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name or name == "<lambda>":
        raise TypeError(
            f"list-form option {describe(fn)} has no usable __name__: use the dict form "
            "{name: callable}"
        )
    return name


def _function_option(name: str, fn: Callable[..., Any], desc: str | None, context: Any) -> Option:
    doc = inspect.getdoc(fn) or ""
    description = desc if desc is not None else (doc.split("\n\n")[0].strip() or None)
    return Option(
        name, "function", description=description, handler=fn, params=_params(fn, context, doc)
    )


def _params(fn: Callable[..., Any], context: Any, doc: str) -> tuple[Param, ...]:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ()
    hints: dict[str, Any] = {}
    for target in (fn, inspect.unwrap(getattr(fn, "__func__", fn))):
        try:
            hints = typing.get_type_hints(target, include_extras=True)
            break
        except Exception:  # unresolvable annotations: fall back to the raw ones
            continue
    arg_docs = _docstring_args(doc)
    params: list[Param] = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        ann = hints.get(p.name, p.annotation)
        spec, nullable = _annotation_spec(ann)
        if spec.description is None and p.name in arg_docs:
            spec = replace(spec, description=arg_docs[p.name])
        source: Literal["llm", "context", "runtime"] = "llm"
        if p.name in RUNTIME_PARAM_NAMES or _is_runtime_annotation(ann):
            source = "runtime"
        elif p.name == "context" or (isinstance(context, Mapping) and p.name in context):
            source = "context"
        has_default = p.default is not p.empty
        default = p.default if has_default else None
        params.append(
            Param(
                p.name,
                spec,
                required=not has_default,
                default=default,
                source=source,
                nullable=nullable or (has_default and p.default is None),
            )
        )
    return tuple(params)


def _is_runtime_annotation(ann: Any) -> bool:
    name = getattr(ann, "__name__", None) if not isinstance(ann, str) else ann
    return name == "Runtime"


def _annotation_spec(ann: Any) -> tuple[FieldSpec, bool]:
    """The schema of a parameter annotation and whether it admits ``None``."""
    if isinstance(ann, str):  # an unresolved string annotation: plain names only
        plain = ann.strip()
        return FieldSpec(plain if plain in _SCALAR_NAMES else "any"), False
    if ann is inspect.Parameter.empty or ann is Any:
        return FieldSpec("any"), False
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is typing.Annotated:
        spec, nullable = _annotation_spec(args[0])
        desc = next((a for a in args[1:] if isinstance(a, str)), None)
        return (replace(spec, description=desc) if desc else spec), nullable
    if origin is Literal:
        values = tuple(args)
        for tp in ("bool", "int", "float", "str"):
            if all(_json_is(v, tp) for v in values):
                return FieldSpec(tp, options=values), False
        return FieldSpec("any", options=values), False
    if origin is Union or origin is types.UnionType:
        rest = [a for a in args if a is not type(None)]
        nullable = len(rest) < len(args)
        if len(rest) == 1:
            return _annotation_spec(rest[0])[0], nullable
        return FieldSpec("any"), nullable
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable, tuple, set, frozenset):
        item = _annotation_spec(args[0])[0] if args and args[0] is not Ellipsis else None
        if item is not None and item.type == "any" and item.options is None:
            item = None
        return FieldSpec("list", items=item), False
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        return FieldSpec("dict"), False
    if scalar_type_name(ann) is not None:
        return compile_field(ann), False
    if ann is None or ann is type(None):
        return FieldSpec("any"), True
    return FieldSpec("any"), False


def _json_is(value: Any, tp: str) -> bool:
    from openprogram.schema_grammar import value_matches_type

    return value_matches_type(value, tp) and not (tp == "float" and isinstance(value, int))


_ARGS_HEADER = re.compile(r"^(Args|Arguments|Parameters|Params):\s*$", re.M)
_ARG_LINE = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _docstring_args(doc: str) -> dict[str, str]:
    """Per-parameter descriptions from a Google-style ``Args:`` section."""
    m = _ARGS_HEADER.search(doc)
    if not m:
        return {}
    out: dict[str, str] = {}
    for line in doc[m.end() :].splitlines()[1:]:
        if line.strip() and not line.startswith((" ", "\t")):
            break
        hit = _ARG_LINE.match(line)
        if hit:
            out[hit.group(1).lstrip("*")] = hit.group(2).strip()
    return out


# ----------------------------------------------------------------------------- rendering


def render_options(options: Any, *, context: Any = None) -> str:
    """The text menu: per option a signature, description, parameter details, ``Call:``."""
    menu = normalize_options(options, context=context)
    lines = [
        "Options (choose exactly one; reply with one JSON object "
        '{"call": "<option name>", ...fields} as in the Call: lines):',
    ]
    for opt in menu.options.values():
        lines.append("")
        lines.extend(_render_option(opt))
    return "\n".join(lines)


def _render_option(opt: Option) -> list[str]:
    fields = _visible_fields(opt)
    sig_parts = []
    for p in opt.llm_params if opt.kind == "function" else ():
        part = f"{p.name}: {type_label(p.spec)}" if p.spec.type != "any" else p.name
        if not p.required:
            part += f" = {_literal(p.default)}"
        sig_parts.append(part)
    if opt.kind == "schema":
        sig_parts = [f"{k}: {type_label(v)}" for k, v in opt.fields.items()]
    head = f"- {opt.name}({', '.join(sig_parts)})" if opt.kind != "value" else f"- {opt.name}"
    out = [head]
    if opt.description:
        out.extend("  " + line for line in opt.description.splitlines())
    if fields:
        out.append("  Parameters:")
        for path, spec, required in fields:
            out.append("    " + _param_line(path, spec, required))
    example: dict[str, Any] = {"call": opt.name}
    if opt.kind == "function":
        example.update({p.name: placeholder(p.spec) for p in opt.llm_params})
    elif opt.kind == "schema":
        example.update({k: placeholder(v) for k, v in opt.fields.items()})
    out.append("  Call: " + json.dumps(example, ensure_ascii=False))
    return out


def _visible_fields(opt: Option) -> list[tuple[str, FieldSpec, str]]:
    top: list[tuple[str, FieldSpec, str]] = []
    if opt.kind == "function":
        for p in opt.llm_params:
            note = "required" if p.required else f"optional, default {_literal(p.default)}"
            top.append((p.name, p.spec, note))
    elif opt.kind == "schema":
        top = [(k, v, "required") for k, v in opt.fields.items()]
    out: list[tuple[str, FieldSpec, str]] = []
    for name, spec, note in top:
        out.append((name, spec, note))
        out.extend(_nested_fields(spec, name))
    return out


def _nested_fields(spec: FieldSpec, prefix: str) -> list[tuple[str, FieldSpec, str]]:
    out: list[tuple[str, FieldSpec, str]] = []
    target, base = spec, prefix
    if spec.type == "list" and spec.items is not None:
        target, base = spec.items, prefix + "[]"
        if target.fields is None and (target.description or target.options):
            out.append((base, target, "each item"))
    if target.fields:
        for k, v in target.fields.items():
            out.append((f"{base}.{k}", v, "required"))
            out.extend(_nested_fields(v, f"{base}.{k}"))
    return out


def _param_line(path: str, spec: FieldSpec, note: str) -> str:
    text = f"{path} ({type_label(spec)}, {note})"
    if spec.description:
        text += f": {spec.description}"
    if spec.options is not None:
        text += "; one of " + ", ".join(_literal(v) for v in spec.options)
    return text


def _literal(value: Any, limit: int = 80) -> str:
    """A short JSON rendering of ``value`` for menus and messages (never raises)."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[ \t]*(json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.S)
_OBJECT_START = re.compile(r"\{\s*(?:\"|\})")


def extract_action(reply: str) -> dict[str, Any]:
    """The JSON object of ``reply`` that names a choice (``call``/``action``/...).

    A fenced json block (```json or bare ```) wins over JSON in prose; several different
    choices, or none, are parse errors.
    """
    if not isinstance(reply, str):
        raise _ParseError("no_json", f"the reply is not text but {json_type_name(reply)}")
    if not reply.strip():
        raise _ParseError(
            "no_json", 'the reply is empty: write one JSON object {"call": "<option name>", ...}'
        )
    text = reply[:_MAX_REPLY_CHARS]
    found: list[dict[str, Any]] = []
    errors: list[str] = []
    plain: list[dict[str, Any]] = []
    for m in _FENCE.finditer(text):
        body = m.group(2).strip()
        if not body.startswith("{"):
            continue
        try:
            value = json.loads(body)
        except (ValueError, RecursionError) as exc:
            errors.append(_decode_error(exc))
            continue
        _sort(value, found, plain)
    if not found:
        _scan_bare(text, found, plain, errors)
    unique: dict[str, dict[str, Any]] = {}
    for obj in found:
        try:
            key = json.dumps(obj, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            key = str(id(obj))
        unique.setdefault(key, obj)
    if len(unique) == 1:
        return next(iter(unique.values()))
    if len(unique) > 1:
        names = [_literal(_call_name(o)[1], 40) for o in unique.values()]
        raise _ParseError(
            "multiple_calls",
            f"the reply holds {len(unique)} different choices ({', '.join(names)}): "
            "reply with exactly one JSON object",
        )
    if plain:
        keys = ", ".join(list(plain[0])[:6]) or "no keys"
        raise _ParseError(
            "missing_call",
            f'the JSON object has no "call" key (found: {keys}): write '
            '{"call": "<option name>", ...}',
        )
    if errors:
        raise _ParseError("invalid_json", f"the JSON in the reply does not parse: {errors[0]}")
    raise _ParseError(
        "no_json", 'no JSON object in the reply: write {"call": "<option name>", ...}'
    )


def _sort(value: Any, found: list[dict[str, Any]], plain: list[dict[str, Any]]) -> None:
    if isinstance(value, dict):
        (found if any(k in value for k in CALL_KEYS) else plain).append(value)


def _scan_bare(
    text: str, found: list[dict[str, Any]], plain: list[dict[str, Any]], errors: list[str]
) -> None:
    decoder = json.JSONDecoder()
    pos, attempts = 0, 0
    while attempts < _MAX_DECODE_ATTEMPTS:
        m = _OBJECT_START.search(text, pos)
        if m is None:
            return
        attempts += 1
        start = m.start()
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError) as exc:
            errors.append(_decode_error(exc))
            pos = start + 1
            continue
        _sort(value, found, plain)
        pos = end


def _decode_error(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return str(exc)


def _call_name(obj: Mapping[str, Any]) -> tuple[str, Any]:
    for key in CALL_KEYS:
        if key in obj:
            return key, obj[key]
    return "", None


_WRAPPER_KEYS = ("args", "arguments", "parameters", "params", "input")


def _split_action(obj: Mapping[str, Any], opt: Option) -> dict[str, Any]:
    key, _ = _call_name(obj)
    args = {k: v for k, v in obj.items() if k != key}
    declared = {p.name for p in opt.params} | set(opt.fields)
    for wrapper in _WRAPPER_KEYS:
        inner = args.get(wrapper)
        if wrapper not in declared and isinstance(inner, dict):
            del args[wrapper]
            args = {**args, **inner}
    return args


def _choose(
    reply: str, menu: Menu, context: Any, runtime: Any
) -> tuple[Callable[..., Any] | str, dict[str, Any]]:
    obj = extract_action(reply)
    key, name = _call_name(obj)
    if not isinstance(name, str) or name not in menu.options:
        shown = _literal(name)
        raise _ParseError(
            "unknown_call",
            f"{key} {shown} is not an option; choose one of: "
            + ", ".join(_literal(n) for n in menu.names()),
        )
    opt = menu.options[name]
    args = _split_action(obj, opt)
    try:
        if opt.kind == "function":
            assert opt.handler is not None
            return opt.handler, _function_kwargs(opt, args, context, runtime)
        kwargs: dict[str, Any] = {}
        for fname, spec in opt.fields.items():
            if fname not in args:
                raise ValueMismatch("missing_field", f"{name}: missing required field {fname!r}")
            kwargs[fname] = validate_value(spec, args[fname], where=f"{name}: field {fname!r}")
        return name, kwargs
    except ValueMismatch as exc:
        raise _ParseError(exc.kind, exc.message) from None


def _function_kwargs(
    opt: Option, args: Mapping[str, Any], context: Any, runtime: Any
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for p in opt.params:
        if p.source == "runtime":
            if runtime is not None or p.required:
                kwargs[p.name] = runtime  # else: leave the default (or the Agent's injection)
            continue
        if p.source == "context":
            if isinstance(context, Mapping) and p.name in context:
                kwargs[p.name] = context[p.name]
            elif p.name == "context" and (context is not None or p.required):
                kwargs[p.name] = context
            continue
        if p.name not in args:
            if p.required:
                raise ValueMismatch(
                    "missing_field", f"{opt.name}: missing required argument {p.name!r}"
                )
            continue
        value = args[p.name]
        if value is None and p.nullable:
            kwargs[p.name] = None
            continue
        kwargs[p.name] = validate_value(p.spec, value, where=f"{opt.name}: argument {p.name!r}")
    return kwargs


def build_retry_message(reply: str, error_kind: str, error_message: str, menu_text: str) -> str:
    """The retry prompt: the previous reply, what was wrong with it, and the menu again."""
    shown = reply if len(reply) <= _RETRY_REPLY_CHARS else reply[:_RETRY_REPLY_CHARS] + "\n[...]"
    return (
        "Your previous reply could not be used as a decision.\n\n"
        f"Previous reply:\n<<<\n{shown}\n>>>\n\n"
        f"Error ({error_kind}): {error_message}\n\n"
        f"{menu_text}\n\n"
        'Reply again with exactly one JSON object {"call": "<option name>", ...fields}.'
    )


def parse_args(
    reply: str,
    options: Any,
    *,
    context: Any = None,
    runtime: Any = None,
    max_retries: int = 1,
    retry: Callable[[str], str] | None = None,
    prompt: str | None = None,
) -> tuple[Callable[..., Any] | str, dict[str, Any]]:
    """Parse and validate a reply into ``(chosen, kwargs)``; retry on errors.

    ``chosen`` is the option's function, or its name for value/schema options. A parse
    error is sent back (previous reply + error + menu) through ``retry(message) -> reply``,
    or ``runtime.exec`` when only ``runtime`` is given, at most ``max_retries`` times;
    then :class:`DecisionError` is raised. Without either, no retry is made. Runtime
    parameters of function options get ``runtime`` (else the enclosing call's runtime).
    """
    menu = normalize_options(options, context=context)
    if retry is None and runtime is not None:
        retry = _runtime_retry(runtime, menu, prompt, context)
    inject = runtime if runtime is not None else _enclosing_runtime()
    budget = max(0, int(max_retries)) if retry is not None else 0
    attempt = 0
    while True:
        attempt += 1
        try:
            return _choose(reply, menu, context, inject)
        except _ParseError as exc:
            if attempt > budget or retry is None:
                start = (
                    reply[:REPLY_START_CHARS]
                    if isinstance(reply, str)
                    else repr(reply)[:REPLY_START_CHARS]
                )
                raise DecisionError(exc.kind, exc.message, start, attempts=attempt) from None
            message = build_retry_message(
                reply if isinstance(reply, str) else repr(reply),
                exc.kind,
                exc.message,
                render_options(menu),
            )
            reply = retry(message)


def resolve_decision(
    chosen: Callable[..., Any] | str, kwargs: Mapping[str, Any], options: Any
) -> Any:
    """The result of a parsed choice: run the function, or look up the value.

    A schema option returns ``{"decision": name, **kwargs}``.
    """
    if callable(chosen) and not isinstance(chosen, str):
        return chosen(**kwargs)
    menu = normalize_options(options)
    opt = menu.options.get(chosen)
    if opt is None:
        raise DecisionError("unknown_call", f"{chosen!r} is not an option")
    if opt.kind == "function":
        assert opt.handler is not None
        return opt.handler(**kwargs)
    if opt.kind == "schema":
        return {"decision": opt.name, **kwargs}
    return opt.value


def decide_from_reply(
    reply_text: str,
    options: Any,
    *,
    retry: Callable[[str], str] | None,
    max_retries: int = 1,
    context: Any = None,
    runtime: Any = None,
) -> Any:
    """The ``agent(..., choices=...)`` path: parse ``reply_text``, retry, resolve."""
    menu = normalize_options(options, context=context)
    chosen, kwargs = parse_args(
        reply_text, menu, context=context, runtime=runtime, max_retries=max_retries, retry=retry
    )
    return resolve_decision(chosen, kwargs, menu)


# ----------------------------------------------------------------------------- make


def make(
    prompt: str,
    options: Any,
    *,
    runtime: Any = None,
    context: Any = None,
    max_retries: int = 1,
) -> Any:
    """Ask the model to pick one option and return the resolved result of the choice.

    Inside an ``Agent`` method (or a run) the call's runtime is used; outside any call
    pass ``runtime=`` (else ``RuntimeError``). Each request, retries included, is a
    recorded model call; inside an Agent method it carries the Agent's instructions and
    Context as ``self(...)`` does (a ``Context`` given as ``context=`` replaces the Agent's).
    """
    menu = normalize_options(options, context=context)
    rt = runtime if runtime is not None else _enclosing_runtime()
    if rt is None:
        raise RuntimeError(
            "decision.make needs a runtime: call it inside an Agent method, or pass "
            "runtime=Runtime(...) / runtime=create_runtime()"
        )
    reply = _exec(rt, f"{prompt}\n\n{render_options(menu)}", menu, context)
    chosen, kwargs = parse_args(
        reply,
        menu,
        context=context,
        runtime=rt,
        max_retries=max_retries,
        retry=_runtime_retry(rt, menu, prompt, context),
    )
    return resolve_decision(chosen, kwargs, menu)


def _enclosing_runtime() -> Any:
    from openprogram.agents import enclosing_agent_request
    from openprogram.scope import runtime_for_call

    found = enclosing_agent_request()  # an Agent's model needs no default configured
    return runtime_for_call(found[2] if found is not None else None)


def _request_settings(context: Any) -> dict[str, Any]:
    """``system``/``context``/``model`` of a decision request: inside an Agent method
    those its ``self(...)`` sends (its instructions, Context and model); a ``Context`` passed as the
    decision's ``context=`` replaces the Agent's. Nothing (``{}``) outside an Agent method
    without a ``Context``, so such requests are the prompt and menu alone."""
    from openprogram.agents import enclosing_agent_request
    from openprogram.context import Context

    found = enclosing_agent_request()
    settings: dict[str, Any] = {}
    if found is not None:
        settings["system"], settings["context"], settings["model"] = found
    if isinstance(context, Context):
        settings["context"] = context
    return {k: v for k, v in settings.items() if v is not None}


def _exec(runtime: Any, content: str, menu: Menu, context: Any = None) -> str:
    settings = _request_settings(context)  # per request: providers run at each one
    ask = getattr(runtime, "ask_for_decision", None)
    if ask is not None:
        reply = ask(content, menu.raw, **_taken_by(ask, settings))
    else:  # a runtime of the user's own may be just ``exec(content)`` (the seed's sample)
        reply = runtime.exec(content, **_taken_by(runtime.exec, {"tools": [], **settings}))
    return reply if isinstance(reply, str) else str(reply)


def _taken_by(method: Callable[..., Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``settings`` that ``method`` takes (all of them when it
    takes ``**kwargs`` or its signature cannot be read)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return settings
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return settings
    return {k: v for k, v in settings.items() if k in params}


def _runtime_retry(
    runtime: Any, menu: Menu, prompt: str | None, context: Any = None
) -> Callable[[str], str]:
    def retry(message: str) -> str:
        content = f"{prompt}\n\n{message}" if prompt else message
        return _exec(runtime, content, menu, context)

    return retry
