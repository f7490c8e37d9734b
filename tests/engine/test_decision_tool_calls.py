"""A decision answered as a native tool call, through real HTTP servers on 127.0.0.1
speaking the OpenAI and Anthropic wire formats, from the user's side (``decision.make``,
``agent(choices=...)``).

Models trained on tool use often "call" an option: ``tool_calls`` with the option's name
instead of the ``{"call": ...}`` JSON the menu asks for. ``decision.make`` then failed
with "the model still requested tools (ship) after max_iterations=1 model requests", and
``agent(choices=)`` fed back "unknown tool 'ship'", no word of how to answer. A reply whose
tool calls all name options (and no offered tool) is now that decision; an option called
beside real tools gets a tool result that names it and says how to answer.
"""

from __future__ import annotations

import json

from loopback import LoopbackServer, runtime_for

from openprogram import agent, decision
from openprogram.runtime import RetryPolicy, Runtime


def runtime(server: LoopbackServer) -> Runtime:
    return runtime_for(server, retry=RetryPolicy(max_retries=0))


def ship(when: str) -> str:
    """Ship the release."""
    return f"shipped {when}"


def inventory() -> str:
    """How many items are in stock."""
    return "12 in stock"


MENU = {"ship": ship, "hold": ("held", "Wait for the next window")}


def test_decision_make_accepts_an_option_called_as_a_tool(server: LoopbackServer) -> None:
    server.reply_tool_calls([("c1", "ship", {"when": "today"})])
    with runtime(server) as rt:
        assert decision.make("Ship the release?", MENU, runtime=rt) == "shipped today"
    assert len(server.requests) == 1  # taken as the answer, no retry


def test_two_different_options_called_as_tools_are_retried_as_an_ambiguous_reply(
    server: LoopbackServer,
) -> None:
    server.reply_tool_calls([("c1", "ship", {"when": "today"}), ("c2", "hold", {})])
    server.reply_text('```json\n{"call": "hold"}\n```')
    with runtime(server) as rt:
        assert decision.make("Ship the release?", MENU, runtime=rt) == "held"
    retry = json.dumps(server.requests[1].json)
    assert "multiple_calls" in retry


def test_agent_with_choices_accepts_an_option_called_as_a_tool(server: LoopbackServer) -> None:
    server.reply_tool_calls([("c1", "inventory", {})])
    server.reply_tool_calls([("c2", "ship", {"when": "now"})])
    with runtime(server) as rt:
        got = agent("Check stock, then decide.", tools=[inventory], choices=MENU, runtime=rt)
    assert got == "shipped now"
    assert len(server.requests) == 2


def test_an_option_called_beside_a_real_tool_is_told_how_to_answer(
    server: LoopbackServer,
) -> None:
    server.reply_tool_calls([("c1", "inventory", {}), ("c2", "ship", {"when": "now"})])
    server.reply_text('In stock.\n```json\n{"call": "ship", "when": "now"}\n```')
    with runtime(server) as rt:
        got = agent("Check stock, then decide.", tools=[inventory], choices=MENU, runtime=rt)
    assert got == "shipped now"
    sent = json.dumps(server.requests[1].json)
    assert "12 in stock" in sent
    assert "'ship' is a decision option, not a tool" in sent
    assert "unknown tool" not in sent
