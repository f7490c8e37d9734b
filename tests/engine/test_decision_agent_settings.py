"""Decisions made inside an Agent method carry the Agent's instructions and Context, as
``self(..., choices=...)`` does: ``decision.make`` (its retry too), ``route`` and the
string conditions of ``conditional`` / ``repeat_until`` / ``validate_and_retry``. Outside
an Agent method a decision request is the prompt and menu alone (real HTTP, OpenAI wire)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from loopback import OpenAIServer, prompt_parts

from openprogram import Agent, Context, conditional, decision, route
from openprogram.runtime import Runtime

INSTRUCTIONS = "You are the SUPPORT-POLICY bot. Never refund over 100."
TIER = '<context name="customer_tier">\nGOLD-TIER\n</context>'
OPEN = '<context name="open_tickets">\n3\n</context>'


class Support(Agent):
    instructions = INSTRUCTIONS
    tools = []

    def triage(self, ticket: str) -> list[Any]:
        """Triage a ticket."""
        way = decision.make(f"Pick a way to handle: {ticket}", {"refund": "R", "close": "C"})
        queue = route("Which queue?", ["billing", "tech"])
        urgent = conditional("the ticket is urgent", ticket, lambda: "urgent", lambda: "calm")
        return [way, queue, urgent]

    def pick_with(self, ctx: Context) -> Any:
        """Decide with a Context of the caller's own."""
        return decision.make("Pick one.", {"a": 1, "b": 2}, context=ctx)


@pytest.fixture
def rt(openai_server: OpenAIServer) -> Iterator[Runtime]:
    runtime = Runtime("openai:gpt-test", base_url=openai_server.base_url, api_key="sk-test")
    yield runtime
    runtime.close()


def system_of(body: dict[str, Any]) -> str | None:
    found = [m["content"] for m in body["messages"] if m["role"] == "system"]
    return found[0] if found else None


def user_texts(body: dict[str, Any]) -> list[str]:
    return prompt_parts(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def test_decisions_in_an_agent_method_send_its_instructions_and_context(
    openai_server: OpenAIServer, rt: Runtime
) -> None:
    count = {"n": 0}

    def open_tickets(ctx: Context) -> int:
        count["n"] += 1
        return 3

    support = Support(
        runtime=rt,
        context=Context({"customer_tier": "GOLD-TIER"}, providers={"open_tickets": open_tickets}),
    )
    openai_server.reply_text("I would refund it.")  # unusable: decision.make retries
    openai_server.reply_text('{"call": "refund"}')
    openai_server.reply_text('{"call": "tech"}')
    openai_server.reply_text('{"call": "yes"}')

    assert support.triage("double charge") == ["R", "tech", "urgent"]

    bodies = [r.json for r in openai_server.requests]
    assert len(bodies) == 4
    for body in bodies:  # the first try, the retry, the route, the judgement
        assert system_of(body) == INSTRUCTIONS
        texts = user_texts(body)
        assert texts[:2] == [TIER, OPEN]
    assert count["n"] == 4  # the provider ran at every request
    assert user_texts(bodies[0])[-1].startswith("Pick a way to handle: double charge")
    assert "Your previous reply could not be used" in user_texts(bodies[1])[-1]
    assert user_texts(bodies[2])[-1].startswith("Which queue?")
    assert "Condition: the ticket is urgent" in user_texts(bodies[3])[-1]


def test_a_context_given_to_decision_make_replaces_the_agents(
    openai_server: OpenAIServer, rt: Runtime
) -> None:
    support = Support(runtime=rt, context=Context({"customer_tier": "GOLD-TIER"}))
    openai_server.reply_text('{"call": "b"}')
    assert support.pick_with(Context({"mine": "only this"})) == 2
    body = openai_server.requests[0].json
    assert system_of(body) == INSTRUCTIONS
    texts = user_texts(body)
    assert '<context name="mine">\nonly this\n</context>' in texts
    assert TIER not in texts


def test_outside_an_agent_method_a_decision_is_the_prompt_and_menu_alone(
    openai_server: OpenAIServer, rt: Runtime
) -> None:
    Support(runtime=rt, context=Context({"customer_tier": "GOLD-TIER"}))  # not in a method
    openai_server.reply_text('{"call": "close"}')
    assert decision.make("Pick.", {"refund": "R", "close": "C"}, runtime=rt) == "C"
    body = openai_server.requests[0].json
    assert system_of(body) is None
    assert user_texts(body) == [
        f"Pick.\n\n{decision.render_options({'refund': 'R', 'close': 'C'})}"
    ]
