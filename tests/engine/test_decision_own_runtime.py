"""A runtime of the user's own, written as the seed's sample calls it (``runtime.exec(prompt
+ menu)``, nothing else), serves ``decision.make``, ``route`` and ``conditional`` both
outside and inside an Agent method: a decision passes it only the keywords it takes."""

from __future__ import annotations

from typing import Any

from openprogram import Agent, conditional, decision, route


class EchoRuntime:
    """Answers each decision with the option its prompt asks for."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def exec(self, content):  # type: ignore[no-untyped-def]  # as a user writes it
        self.prompts.append(content)
        if "Which queue?" in content:
            return '{"call": "billing"}'
        if "urgent" in content:
            return '{"call": "yes"}'
        return '```json\n{"call": "close", "args": {"reason": "spam"}}\n```'


def close(reason: str) -> str:
    """Close the ticket."""
    return f"closed: {reason}"


def refund(amount: int) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


class Support(Agent):
    instructions = "You are the support bot."

    def triage(self, ticket: str) -> list[Any]:
        """Triage a ticket."""
        way = decision.make(f"Handle: {ticket}", {"close": close, "refund": refund})
        queue = route("Which queue?", ["billing", "tech"])
        urgent = conditional("the ticket is urgent", ticket, lambda: "urgent", lambda: "calm")
        return [way, queue, urgent]


def test_decision_make_outside_an_agent_uses_a_runtime_with_exec_content_only() -> None:
    rt = EchoRuntime()
    assert decision.make("Handle the ticket", {"close": close}, runtime=rt) == "closed: spam"
    assert len(rt.prompts) == 1
    assert "Handle the ticket" in rt.prompts[0] and "close" in rt.prompts[0]


def test_decisions_in_an_agent_method_use_its_runtime_with_exec_content_only() -> None:
    rt = EchoRuntime()
    assert Support(runtime=rt).triage("spam again") == ["closed: spam", "billing", "urgent"]
    assert len(rt.prompts) == 3
    assert "Handle: spam again" in rt.prompts[0]
