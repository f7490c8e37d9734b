"""method_options are validated at class creation with the analyzer's codes and text."""

from __future__ import annotations

import inspect
from typing import Any

import agent_server
import pytest

from openprogram import Agent
from openprogram.options import check_method_options

# fixtures shared by the Agent/llm/registry tests (tests/engine/agent_server.py)
_restore_registry = agent_server._restore_registry


def make(options: Any, base: type[Agent] = Agent) -> type[Agent]:
    def summarize(self: Any, text: str) -> str:
        """Summarize."""
        return text

    def lookup(self: Any, key: str) -> str:
        return key

    return type(
        "Probe",
        (base,),
        {"method_options": options, "summarize": summarize, "lookup": lookup},
    )


def expected(options: Any) -> str:
    methods = {
        "summarize": inspect.signature(lambda self, text: None),
        "lookup": inspect.signature(lambda self, key: None),
    }
    code, message, _ = check_method_options(options, methods)[0]
    return f"{code} {message}"


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"summarise": {"expose": "io"}}, "OP101"),
        ({"summarize": {"exposee": "io"}}, "OP102"),
        ({"summarize": {"system": 3}}, "OP103"),
        ({"lookup": {"tool": True, "cache_ttl": "long"}}, "OP103"),
        ({"lookup": {"tool": True, "toolset": "files"}}, "OP103"),
        ({"summarize": {"expose": "public"}}, "OP104"),
        ({"summarize": {"render_range": {"callers": -1}}}, "OP105"),
        ({"summarize": {"render_range": {"caller": 1}}}, "OP105"),
        ({"summarize": {"timeout": 3.0}}, "OP106"),
        ({"summarize": {"cache": True}}, "OP106"),
        ({"summarize": {"input": {"text": {"hint": "x"}}}}, "OP107"),
        ({"summarize": {"input": {"txt": {"description": "x"}}}}, "OP107"),
        ({"summarize": {"input": {"text": {"options": "a,b"}}}}, "OP107"),
    ],
)
def test_invalid_options_raise_with_the_analyzer_code_and_text(options: Any, code: str) -> None:
    with pytest.raises(ValueError) as info:
        make(options)
    text = str(info.value)
    assert text.startswith(expected(options))
    assert text.startswith(code + " ")
    assert "Probe" in text  # says which class


def test_did_you_mean_is_included() -> None:
    with pytest.raises(ValueError, match=r"^OP102 .*did you mean 'expose'\?"):
        make({"summarize": {"exposee": "io"}})


def test_valid_options_pass() -> None:
    cls = make(
        {
            "summarize": {
                "expose": "llm",
                "render_range": {"callers": 0, "subcalls": -1},
                "system": "Be brief.",
                "input": {"text": {"description": "Text", "multiline": True}},
            },
            "lookup": {"as_tool": True, "timeout": 2, "cache": True, "toolset": ("kv",)},
        }
    )
    assert cls._op_method_options["lookup"]["timeout"] == 2


def test_options_merge_along_the_mro() -> None:
    base = make({"lookup": {"tool": True, "timeout": 1.0}, "summarize": {"expose": "io"}})

    class Child(base):  # type: ignore[misc, valid-type]
        method_options = {"lookup": {"cache": True}, "summarize": {"system": "S"}}

    assert Child._op_method_options == {
        "lookup": {"tool": True, "timeout": 1.0, "cache": True},
        "summarize": {"expose": "io", "system": "S"},
    }
    # a tool-only key is fine in the child because the base made the method a tool
    with pytest.raises(ValueError, match=r"^OP106"):

        class Bad(base):  # type: ignore[misc, valid-type]
            method_options = {"summarize": {"timeout": 1.0}}


def test_subclass_options_apply_to_inherited_methods() -> None:
    base = make({})

    class Child(base):  # type: ignore[misc, valid-type]
        method_options = {"summarize": {"expose": "io"}}

    assert Child().summarize.method_options == {"expose": "io"}
    assert base().summarize.method_options == {}
