"""The decision-option and payload-schema grammar (pure, stdlib only).

This module is the single source of truth for the shapes accepted by
``decision.make`` / ``agent(choices=...)``. Both sides call :func:`check_menu` (returning
:class:`SchemaProblem` with an ``OP3xx`` code): the static analyzer on literal values it
rebuilt from source, the runtime on the menu a call gets (``decision.normalize_options``
raises the first problem as ``openprogram.errors.MenuViolation``, a ``TypeError``), so
a run and a lint finding carry the same code and message. :func:`compile_schema`
compiles a payload schema (``TypeError`` if it is invalid).

Schema grammar (a field's type, recursively):

=========================================  ===========================================
``str`` / ``int`` / ``float`` / ``bool``   a scalar of that type
``list`` / ``dict``                        any JSON array / object
``"some description"``                     a ``str`` scalar with a description
``[subschema]``                            a list whose items match ``subschema``
                                           (exactly one element, else ``TypeError``)
``{"field": subschema, ...}``              a nested object (all fields required)
``{"type": T, "description": ...,          a meta-spec: every key is a meta key
"options": [...], "fields": {...},
"items": subschema}``
=========================================  ===========================================

Values the analyzer cannot evaluate are passed as :data:`OPAQUE` (never reported); a
bare name used in type position (``str``, ``MyClass``) is passed as :class:`TypeRef`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

META_KEYS: frozenset[str] = frozenset({"type", "description", "options", "fields", "items"})
SCALAR_TYPE_NAMES: tuple[str, ...] = ("str", "int", "float", "bool", "list", "dict")
_PY_TYPES: dict[str, type] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
}
ENUM_TYPE_NAMES: tuple[str, ...] = ("str", "int", "float", "bool")
# Keys of a decision reply that name the chosen option, in priority order.
CALL_KEYS: tuple[str, ...] = ("call", "action", "function", "tool")

NodeKind = Literal["scalar", "description", "list", "object", "meta", "invalid"]


@dataclass(frozen=True)
class TypeRef:
    """A bare (possibly dotted) name in source, e.g. ``str`` or ``models.Plan``."""

    name: str

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


class _Opaque:
    """A value the analyzer could not rebuild from source (a call, a variable...)."""

    _instance: _Opaque | None = None

    def __new__(cls) -> _Opaque:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "OPAQUE"


OPAQUE: Any = _Opaque()


def is_opaque(value: Any) -> bool:
    return value is OPAQUE


@dataclass(frozen=True)
class SchemaProblem:
    """One grammar violation. ``path`` locates the offending node (keys and indexes)."""

    code: str
    message: str
    path: tuple[str | int, ...] = ()


@dataclass(frozen=True)
class FieldSpec:
    """A compiled schema node.

    ``type`` is one of ``str int float bool list dict any``; ``items`` is the element
    spec of a typed list, ``fields`` the (all required) fields of a nested object.
    """

    type: str
    description: str | None = None
    options: tuple[Any, ...] | None = None
    items: FieldSpec | None = None
    fields: Mapping[str, FieldSpec] | None = field(default=None)


# ----------------------------------------------------------------------------- messages


def msg_list_arity(count: int) -> str:
    return (
        f"a list schema must hold exactly one element template, got {count}: "
        "write [item_schema] (e.g. [str] or [{'name': str}])"
    )


def msg_meta_lookalike(key: str, found: str) -> str:
    return (
        f"this dict has only meta keys ({', '.join(sorted(META_KEYS))}) so it is read as a "
        f"meta-spec, but its {key!r} value is {found}: for a nested object add a field "
        "outside the meta keys, or write {'type': dict, 'fields': {...}}"
    )


def msg_unsupported_type(found: str) -> str:
    return (
        f"unsupported schema type {found}: use str, int, float, bool, list, dict, a "
        "description string, a one-element list [subschema] or a nested dict"
    )


def msg_bad_meta(detail: str) -> str:
    return f"malformed meta-spec: {detail}"


def msg_bad_enum(detail: str) -> str:
    return f"meta-spec 'options' {detail}"


def msg_handler_tuple(found: str) -> str:
    return (
        f"a 2-tuple in handler position is read as (value, 'description') or "
        f"('description', schema), but its second element is {found}: to return a "
        "tuple value, write ((a, b), 'description')"
    )


def msg_reserved_tuple(length: int, form: str) -> str:
    if form == "list":
        return (
            f"a {length}-tuple is not a list-form option: use (callable, 'description'), "
            "('name', 'description') or ('name', 'description', schema)"
        )
    return (
        f"tuples are reserved in handler position (got a {length}-tuple): to return a "
        "tuple value, write ((...), 'description')"
    )


def msg_duplicate_option(name: str) -> str:
    return f"duplicate option name {name!r} in a decision menu: option names must be unique"


def msg_bad_option_name(found: str) -> str:
    return f"option names must be non-empty strings, got {found}"


def msg_list_schema_description(name: str) -> str:
    return (
        f"list-form schema option {name!r} needs a description: write "
        "('name', 'description', schema)"
    )


def msg_bad_list_item(found: str) -> str:
    return (
        f"a list-form option must be a callable, a name string or a tuple, got {found}: "
        "use the dict form {name: value} for value options"
    )


def msg_reserved_field(name: str) -> str:
    return f"schema field {name!r} is reserved (the result carries the option name under it)"


# ----------------------------------------------------------------------------- predicates


def describe(value: Any) -> str:
    """A short human description of a literal value for messages."""
    if isinstance(value, TypeRef):
        return value.name
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, str):
        text = value if len(value) <= 30 else value[:27] + "..."
        return f"a string {text!r}"
    if isinstance(value, bool):
        return f"a bool ({value})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, Mapping):
        return "a dict"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, tuple):
        return f"a {len(value)}-tuple"
    if value is None:
        return "None"
    if getattr(value, "__origin__", None) is not None:  # list[int], typing.List[int]
        return repr(value)
    return f"a {type(value).__name__} value"


def scalar_type_name(node: Any) -> str | None:
    """``"str"``... when ``node`` is one of the allowed scalar types (object or name)."""
    if isinstance(node, type):
        for name, tp in _PY_TYPES.items():
            if node is tp:
                return name
        return None
    if isinstance(node, TypeRef) and node.name in ("builtins." + n for n in SCALAR_TYPE_NAMES):
        return node.short
    if isinstance(node, TypeRef) and node.name in SCALAR_TYPE_NAMES:
        return node.name
    return None


def is_meta_spec(node: Any) -> bool:
    """True when ``node`` is a dict whose keys are all meta keys (an empty dict is not)."""
    return (
        isinstance(node, Mapping)
        and len(node) > 0
        and all(isinstance(k, str) and k in META_KEYS for k in node)
    )


def classify(node: Any) -> NodeKind:
    """The grammar kind of a schema node (``"invalid"`` for anything unsupported)."""
    if scalar_type_name(node) is not None:
        return "scalar"
    if isinstance(node, str):
        return "description"
    if isinstance(node, list):
        return "list"
    if is_meta_spec(node):
        return "meta"
    if isinstance(node, Mapping):
        return "object"
    return "invalid"


def value_matches_type(value: Any, type_name: str) -> bool:
    """JSON type check: ``bool`` is not ``int``; ``float`` accepts ``int``."""
    if type_name == "any":
        return True
    if type_name == "str":
        return isinstance(value, str)
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_name == "list":
        return isinstance(value, (list, tuple))
    if type_name == "dict":
        return isinstance(value, Mapping)
    return False


def handler_tuple_kind(handler: tuple[Any, ...], *, form: str = "dict") -> str | None:
    """How a tuple in handler position is read; ``None`` if it is not a valid shape.

    Dict form: ``"value_description"`` for ``(value, "description")`` (the value may be a
    callable: a described function option), ``"schema"`` for ``("description", {schema})``.
    List form additionally: ``"named_schema"`` for ``("name", "description", {schema})``.
    Opaque elements are given the benefit of the doubt.
    """
    if len(handler) == 2:
        first, second = handler
        if isinstance(second, str) or is_opaque(second):
            return "value_description"
        if (isinstance(first, str) or is_opaque(first)) and isinstance(second, Mapping):
            return "schema"
        return None
    if len(handler) == 3 and form == "list":
        name, desc, schema = handler
        if (
            (isinstance(name, str) or is_opaque(name))
            and (isinstance(desc, str) or is_opaque(desc))
            and (isinstance(schema, Mapping) or is_opaque(schema))
        ):
            return "named_schema"
    return None


# ----------------------------------------------------------------------------- checking


def check_schema(schema: Any, *, path: tuple[str | int, ...] = ()) -> list[SchemaProblem]:
    """Problems in a top-level payload schema ``{field: subschema}`` (all OP30x codes)."""
    if is_opaque(schema):
        return []
    if not isinstance(schema, Mapping):
        return [SchemaProblem("OP303", msg_unsupported_type(describe(schema)), path)]
    return list(_check_fields(schema, path))


def check_field(node: Any, *, path: tuple[str | int, ...] = ()) -> list[SchemaProblem]:
    """Problems in one field type (a schema node at any depth)."""
    return list(_check_node(node, path))


def _check_fields(
    fields: Mapping[Any, Any], path: tuple[str | int, ...]
) -> Iterator[SchemaProblem]:
    for key, sub in fields.items():
        if is_opaque(key):
            continue
        if not isinstance(key, str) or not key:
            yield SchemaProblem(
                "OP303", f"schema field names must be strings, got {describe(key)}", path
            )
            continue
        yield from _check_node(sub, (*path, key))


def _check_node(node: Any, path: tuple[str | int, ...]) -> Iterator[SchemaProblem]:
    if is_opaque(node):
        return
    kind = classify(node)
    if kind in ("scalar", "description"):
        return
    if kind == "list":
        if len(node) != 1:
            yield SchemaProblem("OP301", msg_list_arity(len(node)), path)
            return
        yield from _check_node(node[0], (*path, 0))
        return
    if kind == "object":
        yield from _check_fields(node, path)
        return
    if kind == "meta":
        yield from _check_meta(node, path)
        return
    yield SchemaProblem("OP303", msg_unsupported_type(describe(node)), path)


def _meta_type(node: Mapping[str, Any]) -> str | None:
    """The declared or implied type name of a meta-spec (``None`` if undecidable)."""
    if "type" in node:
        return scalar_type_name(node["type"])
    if "fields" in node:
        return "dict"
    if "items" in node:
        return "list"
    options = node.get("options")
    if isinstance(options, (list, tuple)) and options:
        for name in ("bool", "int", "float", "str"):
            if all(value_matches_type(v, name) for v in options):
                return name
        return None
    return "str"


def _check_meta(node: Mapping[str, Any], path: tuple[str | int, ...]) -> Iterator[SchemaProblem]:
    tp = node.get("type", None)
    if "type" in node and not is_opaque(tp):
        if isinstance(tp, (Mapping, list, str)):
            kind = "a nested dict" if isinstance(tp, Mapping) else describe(tp)
            yield SchemaProblem("OP302", msg_meta_lookalike("type", kind), (*path, "type"))
            return
        if scalar_type_name(tp) is None:
            yield SchemaProblem("OP303", msg_unsupported_type(describe(tp)), (*path, "type"))
            return
    desc = node.get("description")
    if "description" in node and not is_opaque(desc) and not isinstance(desc, str):
        yield SchemaProblem(
            "OP302", msg_meta_lookalike("description", describe(desc)), (*path, "description")
        )
        return
    declared = _meta_type(node) if not is_opaque(tp) else None
    if "fields" in node:
        sub = node["fields"]
        if declared not in (None, "dict") and not is_opaque(tp):
            yield SchemaProblem(
                "OP303", msg_bad_meta(f"'fields' needs type dict, not {declared}"), path
            )
        elif not is_opaque(sub):
            if not isinstance(sub, Mapping):
                yield SchemaProblem(
                    "OP303",
                    msg_bad_meta(f"'fields' must be a dict, got {describe(sub)}"),
                    (*path, "fields"),
                )
            else:
                yield from _check_fields(sub, (*path, "fields"))
    if "items" in node:
        if declared not in (None, "list") and not is_opaque(tp):
            yield SchemaProblem(
                "OP303", msg_bad_meta(f"'items' needs type list, not {declared}"), path
            )
        else:
            yield from _check_node(node["items"], (*path, "items"))
    if "options" in node:
        yield from _check_enum(node["options"], declared, is_opaque(tp), (*path, "options"))


def _check_enum(
    options: Any, declared: str | None, type_unknown: bool, path: tuple[str | int, ...]
) -> Iterator[SchemaProblem]:
    if is_opaque(options):
        return
    if not isinstance(options, (list, tuple)) or not options:
        yield SchemaProblem(
            "OP304", msg_bad_enum(f"must be a non-empty list, got {describe(options)}"), path
        )
        return
    if type_unknown:
        return
    if declared is None:
        yield SchemaProblem(
            "OP304", msg_bad_enum("mixes value types: add an explicit 'type'"), path
        )
        return
    if declared not in ENUM_TYPE_NAMES:
        yield SchemaProblem(
            "OP304", msg_bad_enum(f"are only allowed on str/int/float/bool, not {declared}"), path
        )
        return
    for i, value in enumerate(options):
        if is_opaque(value):
            continue
        if not value_matches_type(value, declared):
            yield SchemaProblem(
                "OP304",
                msg_bad_enum(f"value {describe(value)} does not match type {declared}"),
                (*path, i),
            )


def check_handler(
    handler: Any, *, form: str = "dict", path: tuple[str | int, ...] = ()
) -> list[SchemaProblem]:
    """Problems in one option handler (dict form) or list item (``form="list"``)."""
    if is_opaque(handler):
        return []
    if isinstance(handler, tuple):
        kind = handler_tuple_kind(handler, form=form)
        if kind is None:
            if len(handler) == 2:
                return [SchemaProblem("OP305", msg_handler_tuple(describe(handler[1])), path)]
            return [SchemaProblem("OP305", msg_reserved_tuple(len(handler), form), path)]
        if kind == "value_description" and form == "list":
            first = handler[0]
            if not (_list_item_head(first) or is_opaque(first)):
                return [SchemaProblem("OP305", msg_bad_list_item(describe(first)), path)]
        if kind == "schema" and form == "list":
            name = handler[0] if isinstance(handler[0], str) else "..."
            return [SchemaProblem("OP305", msg_list_schema_description(name), path)]
        if kind == "schema":
            return _check_option_schema(handler[1], (*path, 1))
        if kind == "named_schema":
            return _check_option_schema(handler[2], (*path, 2))
        return []
    if form == "list" and not _list_item_head(handler):
        return [SchemaProblem("OP305", msg_bad_list_item(describe(handler)), path)]
    return []


def _list_item_head(item: Any) -> bool:
    """A list-form option's head: a name string or a function (a class is not one)."""
    return isinstance(item, (str, TypeRef)) or (callable(item) and not isinstance(item, type))


def _check_option_schema(schema: Any, path: tuple[str | int, ...]) -> list[SchemaProblem]:
    problems = check_schema(schema, path=path)
    if isinstance(schema, Mapping) and "decision" in schema:
        problems.append(SchemaProblem("OP303", msg_reserved_field("decision"), (*path, "decision")))
    return problems


def duplicate_names(names: Iterable[Any]) -> list[tuple[int, str]]:
    """``(index, name)`` of every repeated option name after its first occurrence."""
    seen: set[str] = set()
    out: list[tuple[int, str]] = []
    for i, name in enumerate(names):
        if not isinstance(name, str):
            continue
        if name in seen:
            out.append((i, name))
        seen.add(name)
    return out


def list_item_name(item: Any) -> str | None:
    """The option name of a list-form item (``None`` when not statically known)."""
    if isinstance(item, tuple) and item:
        item = item[0]
    if isinstance(item, str):
        return item
    if isinstance(item, TypeRef):
        return item.short
    name = getattr(item, "__name__", None)
    return name if isinstance(name, str) and name != "<lambda>" else None


def msg_route_description(name: str, found: str) -> str:
    return (
        f"route's dict form maps each option to its description, but option {name!r} maps to "
        f"{found}: write {{{name!r}: 'description'}}, or use decision.make for handlers and "
        "schemas"
    )


def check_route_options(options: Any) -> list[SchemaProblem]:
    """Problems in the options of ``route(question, options)``: a dict maps option names to
    description strings (OP305 on any other value); a list is a decision menu
    (:func:`check_menu`: duplicate names are OP306)."""
    if isinstance(options, Mapping):
        found = [
            SchemaProblem("OP305", msg_route_description(str(key), describe(value)), (key,))
            for key, value in options.items()
            if not is_opaque(value) and not isinstance(value, str)
        ]
        if found:
            return found
    return check_menu(options)


def check_menu(options: Any) -> list[SchemaProblem]:
    """All problems in a literal decision menu (dict or list form), OP301–OP306."""
    problems: list[SchemaProblem] = []
    if is_opaque(options):
        return problems
    if isinstance(options, Mapping):
        for key, handler in options.items():
            if not is_opaque(key) and (not isinstance(key, str) or not key):
                problems.append(SchemaProblem("OP306", msg_bad_option_name(describe(key)), (key,)))
            problems.extend(check_handler(handler, form="dict", path=(key,)))
        return problems
    if isinstance(options, (list, tuple)):
        for i, item in enumerate(options):
            if list_item_name(item) == "":
                problems.append(SchemaProblem("OP306", msg_bad_option_name(describe("")), (i,)))
            problems.extend(check_handler(item, form="list", path=(i,)))
        for i, name in duplicate_names(list_item_name(item) for item in options):
            problems.append(SchemaProblem("OP306", msg_duplicate_option(name), (i,)))
        return problems
    return [
        SchemaProblem("OP303", f"a decision menu must be a dict or a list, got {describe(options)}")
    ]


# ------------------------------------------------------------------------ response_format

#: The JSON Schema type of each Python type the decision schema shorthand names.
JSON_SCHEMA_TYPES: dict[str, str] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "dict": "object",
}


def msg_response_format_type(found: str) -> str:
    json_type = JSON_SCHEMA_TYPES.get(found.rsplit(".", 1)[-1])
    instead = f'{{"type": "{json_type}"}}' if json_type else "a JSON schema"
    return (
        f"response_format takes a JSON schema, not Python types (the decision schema "
        f"shorthand): found {found}; write {instead}, or pass a pydantic model class"
    )


def msg_response_format_value(found: str) -> str:
    return f"response_format takes a JSON schema, whose values are JSON: found {found}"


def response_format_path_text(path: Sequence[str | int]) -> str:
    """Where a node is in a ``response_format``: ``response_format['age']``."""
    return "response_format" + "".join(f"[{p!r}]" for p in path)


def check_response_format(value: Any) -> list[SchemaProblem]:
    """OP307: the Python types (or other non-JSON values) in a ``response_format`` dict
    (a JSON schema or an OpenAI ``response_format``), the first one per branch."""
    problems: list[SchemaProblem] = []

    def walk(node: Any, path: tuple[str | int, ...]) -> None:
        if is_opaque(node) or node is None or isinstance(node, (str, bool, int, float)):
            return
        if isinstance(node, Mapping):
            for key, sub in node.items():
                walk(sub, (*path, key))
        elif isinstance(node, (list, tuple)):
            for i, sub in enumerate(node):
                walk(sub, (*path, i))
        elif isinstance(node, (TypeRef, type)) or getattr(node, "__origin__", None) is not None:
            problems.append(SchemaProblem("OP307", msg_response_format_type(describe(node)), path))
        else:
            problems.append(SchemaProblem("OP307", msg_response_format_value(describe(node)), path))

    if isinstance(value, Mapping):
        walk(value, ())
    return problems


# ----------------------------------------------------------------------------- compiling


def compile_schema(schema: Any) -> dict[str, FieldSpec]:
    """Compile a top-level payload schema ``{field: subschema}``; ``TypeError`` if invalid."""
    problems = _check_option_schema(schema, ())
    if problems:
        raise TypeError(_with_path(problems[0]))
    return {key: compile_field(sub) for key, sub in schema.items()}


def compile_field(node: Any) -> FieldSpec:
    """Compile one schema node into a :class:`FieldSpec`; ``TypeError`` if invalid."""
    problems = check_field(node)
    if problems:
        raise TypeError(_with_path(problems[0]))
    return _compile(node)


def _compile(node: Any) -> FieldSpec:
    kind = classify(node)
    if kind == "scalar":
        return FieldSpec(type=scalar_type_name(node) or "any")
    if kind == "description":
        return FieldSpec(type="str", description=node)
    if kind == "list":
        return FieldSpec(type="list", items=_compile(node[0]))
    if kind == "object":
        return FieldSpec(type="dict", fields={k: _compile(v) for k, v in node.items()})
    # meta-spec
    tp = _meta_type(node) or "str"
    options = node.get("options")
    return FieldSpec(
        type=tp,
        description=node.get("description"),
        options=tuple(options) if options is not None else None,
        items=_compile(node["items"]) if "items" in node else None,
        fields={k: _compile(v) for k, v in node["fields"].items()} if "fields" in node else None,
    )


def _with_path(problem: SchemaProblem) -> str:
    if not problem.path:
        return problem.message
    return f"{schema_path_text(problem.path)}: {problem.message}"


def schema_path_text(path: Sequence[str | int]) -> str:
    """Where a node is in a payload schema: ``schema['steps'][0]``."""
    return "schema" + "".join(f"[{p!r}]" for p in path)


# ----------------------------------------------------------------------------- validating


class ValueMismatch(ValueError):
    """A value does not match its :class:`FieldSpec` (``kind`` names the parse-error kind)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def validate_value(spec: FieldSpec, value: Any, *, where: str = "value") -> Any:
    """Check ``value`` against ``spec`` recursively and return its cleaned form.

    Extra keys of nested objects are dropped, every declared nested field is required,
    ``int`` is widened to ``float`` where a float is expected. Raises :class:`ValueMismatch`
    with kind ``invalid_type``, ``invalid_option`` or ``missing_field``.
    """
    if not value_matches_type(value, spec.type):
        raise ValueMismatch(
            "invalid_type", f"{where} must be {_type_phrase(spec)}, got {json_type_name(value)}"
        )
    if spec.options is not None and not any(_enum_equal(value, o, spec.type) for o in spec.options):
        allowed = ", ".join(_json_literal(o) for o in spec.options)
        raise ValueMismatch(
            "invalid_option", f"{where} must be one of {allowed}, got {_json_literal(value)}"
        )
    if spec.type == "float":
        number = float(value) if abs(value) <= sys.float_info.max else math.inf
        if not math.isfinite(number):  # 1e400, Infinity, NaN, or an int no float can hold
            raise ValueMismatch(
                "invalid_type", f"{where} must be a finite number, got {_json_literal(value)}"
            )
        return number
    if spec.type == "list":
        items = list(value)
        if spec.items is None:
            return items
        return [
            validate_value(spec.items, item, where=f"{where}[{i}]") for i, item in enumerate(items)
        ]
    if spec.type == "dict" and spec.fields is not None:
        return validate_fields(spec.fields, value, where=where)
    return value


def validate_fields(
    fields: Mapping[str, FieldSpec], value: Mapping[str, Any], *, where: str
) -> dict[str, Any]:
    """Validate an object against required ``fields``; extra keys are dropped."""
    out: dict[str, Any] = {}
    for name, sub in fields.items():
        if name not in value:
            raise ValueMismatch("missing_field", f"{where} is missing required field {name!r}")
        out[name] = validate_value(sub, value[name], where=f"{where}.{name}")
    return out


def _enum_equal(value: Any, option: Any, type_name: str) -> bool:
    if type_name == "float":
        return value_matches_type(option, "float") and bool(value == option)
    return type(value) is type(option) and bool(value == option)


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


_PHRASES = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean (true/false)",
    "list": "an array",
    "dict": "an object",
    "any": "any value",
}


def _type_phrase(spec: FieldSpec) -> str:
    return _PHRASES.get(spec.type, spec.type)


def _json_literal(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def type_label(spec: FieldSpec) -> str:
    """A compact type label for menus: ``str``, ``list[str]``, ``{a: int}``..."""
    if spec.type == "list" and spec.items is not None:
        return f"list[{type_label(spec.items)}]"
    if spec.type == "dict" and spec.fields is not None:
        inner = ", ".join(f"{k}: {type_label(v)}" for k, v in spec.fields.items())
        return "{" + inner + "}"
    return spec.type


def placeholder(spec: FieldSpec) -> Any:
    """A native JSON placeholder of ``spec``'s shape for ``Call:`` examples."""
    if spec.options:
        return spec.options[0]
    if spec.type == "str":
        return "<str>"
    if spec.type == "int":
        return 0
    if spec.type == "float":
        return 0.0
    if spec.type == "bool":
        return False
    if spec.type == "list":
        return [placeholder(spec.items)] if spec.items is not None else []
    if spec.type == "dict":
        return {k: placeholder(v) for k, v in spec.fields.items()} if spec.fields else {}
    return "<value>"


def flatten_enums(
    fields: Mapping[str, FieldSpec], prefix: str = ""
) -> Sequence[tuple[str, FieldSpec]]:
    """``(dotted path, spec)`` of every node, depth first, for per-parameter details."""
    out: list[tuple[str, FieldSpec]] = []
    for name, spec in fields.items():
        dotted = f"{prefix}{name}"
        out.append((dotted, spec))
        if spec.fields:
            out.extend(flatten_enums(spec.fields, dotted + "."))
        if spec.items is not None and spec.items.fields:
            out.extend(flatten_enums(spec.items.fields, dotted + "[]."))
    return out
