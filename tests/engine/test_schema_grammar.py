"""The pure schema grammar shared by the runtime and the analyzer (OP301–OP306)."""

from __future__ import annotations

import pytest

from openprogram.schema_grammar import (
    OPAQUE,
    FieldSpec,
    TypeRef,
    ValueMismatch,
    check_field,
    check_handler,
    check_menu,
    check_schema,
    classify,
    compile_field,
    compile_schema,
    is_meta_spec,
    msg_list_arity,
    placeholder,
    scalar_type_name,
    validate_value,
)


def codes(problems: list) -> list[str]:
    return [p.code for p in problems]


@pytest.mark.parametrize(
    ("node", "kind"),
    [
        (str, "scalar"),
        (bool, "scalar"),
        (TypeRef("int"), "scalar"),
        ("a description", "description"),
        ([str], "list"),
        ({"name": str}, "object"),
        ({"type": int, "description": "n"}, "meta"),
        ({"name": str, "type": int}, "object"),
        (set, "invalid"),
        (3, "invalid"),
    ],
)
def test_classify(node: object, kind: str) -> None:
    assert classify(node) == kind


def test_scalar_type_names_accept_objects_and_names() -> None:
    assert scalar_type_name(float) == "float"
    assert scalar_type_name(TypeRef("builtins.dict")) == "dict"
    assert scalar_type_name(TypeRef("Plan")) is None
    assert scalar_type_name(tuple) is None


def test_meta_spec_needs_only_meta_keys() -> None:
    assert is_meta_spec({"type": str, "options": ["a"]})
    assert not is_meta_spec({"type": str, "other": 1})
    assert not is_meta_spec({})


def test_list_with_two_templates_raises_type_error() -> None:
    with pytest.raises(TypeError, match="exactly one element template, got 2"):
        compile_field([str, int])
    assert codes(check_field([str, int])) == ["OP301"]
    assert codes(check_field([])) == ["OP301"]
    assert msg_list_arity(0) in check_field([])[0].message


def test_meta_lookalike_is_op302() -> None:
    problems = check_schema({"x": {"type": {"a": str}}})
    assert codes(problems) == ["OP302"]
    assert problems[0].path == ("x", "type")
    assert codes(check_field({"type": "the kind", "description": "d"})) == ["OP302"]
    assert codes(check_field({"description": str})) == ["OP302"]
    assert codes(check_field({"type": [str]})) == ["OP302"]
    with pytest.raises(TypeError, match="read as a meta-spec"):
        compile_schema({"x": {"type": "kind"}})


def test_unsupported_types_are_op303() -> None:
    class Plan:
        pass

    assert codes(check_field(Plan)) == ["OP303"]
    assert codes(check_field(TypeRef("Plan"))) == ["OP303"]
    assert codes(check_field({"type": tuple})) == ["OP303"]
    assert codes(check_field(None)) == ["OP303"]
    with pytest.raises(TypeError, match="unsupported schema type Plan"):
        compile_field(Plan)


def test_enum_rules_are_op304() -> None:
    assert codes(check_field({"type": str, "options": []})) == ["OP304"]
    assert codes(check_field({"type": str, "options": "abc"})) == ["OP304"]
    assert codes(check_field({"type": int, "options": [1, "2"]})) == ["OP304"]
    assert codes(check_field({"type": int, "options": [1, True]})) == ["OP304"]
    assert codes(check_field({"type": list, "options": [[1]]})) == ["OP304"]
    assert codes(check_field({"type": float, "options": [1, 2.5]})) == []
    assert codes(check_field({"options": [1, 2]})) == []
    assert compile_field({"options": [1, 2]}).type == "int"


def test_handler_tuples_are_op305() -> None:
    assert codes(check_handler((1, 2))) == ["OP305"]
    assert codes(check_handler(("a", "b"))) == []
    assert codes(check_handler(("describe", {"x": str}))) == []
    assert codes(check_handler((1, 2, 3))) == ["OP305"]
    assert codes(check_handler(("n", "d", {"x": [str, int]}), form="list")) == ["OP301"]
    assert codes(check_handler(42, form="list")) == ["OP305"]
    assert codes(check_handler(OPAQUE)) == []
    assert codes(check_handler((OPAQUE, OPAQUE))) == []


def test_duplicate_names_are_op306() -> None:
    def a() -> None: ...

    problems = check_menu([a, ("b", "desc"), TypeRef("mod.a"), "b"])
    assert sorted(codes(problems)) == ["OP306", "OP306"]
    assert {p.path for p in problems} == {(2,), (3,)}


def test_schema_option_may_not_declare_decision_field() -> None:
    assert codes(check_handler(("d", {"decision": str}))) == ["OP303"]


def test_nested_problems_report_paths() -> None:
    problems = check_schema({"steps": [{"action": str, "bad": [int, int]}]})
    assert problems[0].path == ("steps", 0, "bad")


def test_opaque_values_are_never_reported() -> None:
    assert check_schema({"a": OPAQUE, "b": [OPAQUE]}) == []
    assert check_field({"type": OPAQUE, "options": [1, "x"]}) == []


def test_compile_nested_schema() -> None:
    spec = compile_schema(
        {
            "steps": [{"action": str, "target": "file path"}],
            "mode": {"type": str, "options": ["fast", "slow"], "description": "speed"},
            "meta": {"type": dict, "fields": {"n": int}},
            "tags": {"items": str},
        }
    )
    assert spec["steps"].type == "list"
    assert spec["steps"].items is not None and spec["steps"].items.fields is not None
    assert spec["steps"].items.fields["target"] == FieldSpec(type="str", description="file path")
    assert spec["mode"].options == ("fast", "slow")
    assert spec["meta"].fields == {"n": FieldSpec(type="int")}
    assert spec["tags"].items == FieldSpec(type="str")
    assert placeholder(spec["steps"]) == [{"action": "<str>", "target": "<str>"}]
    assert placeholder(spec["mode"]) == "fast"


def test_validate_value_rules() -> None:
    assert validate_value(FieldSpec("float"), 3) == 3.0
    with pytest.raises(ValueMismatch) as err:
        validate_value(FieldSpec("int"), True)
    assert err.value.kind == "invalid_type"
    with pytest.raises(ValueMismatch) as err:
        validate_value(FieldSpec("str", options=("a",)), "b")
    assert err.value.kind == "invalid_option"
    obj = FieldSpec("dict", fields={"a": FieldSpec("int")})
    assert validate_value(obj, {"a": 1, "extra": 2}) == {"a": 1}
    with pytest.raises(ValueMismatch) as err:
        validate_value(obj, {})
    assert err.value.kind == "missing_field"
    with pytest.raises(ValueMismatch, match=r"x\[1\] must be an integer"):
        validate_value(FieldSpec("list", items=FieldSpec("int")), [1, "2"], where="x")
