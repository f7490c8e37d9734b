"""Triage a support ticket: the model classifies it, then chooses the next step.

    OPENPROGRAM_MODEL=replay:examples/cassettes/ticket_triage.jsonl \
        openprogram run examples/ticket_triage.py:triage \
        --args '{"ticket": "I was charged twice for my March invoice."}'

With a real model, set ``OPENPROGRAM_MODEL=openai:gpt-4.1-mini`` (and ``OPENAI_API_KEY``)
instead. Every method call is recorded as a ``code`` node and every model request as an
``llm`` node in the session store (``openprogram sessions`` / ``openprogram show ID``).
"""

from __future__ import annotations

from openprogram import Agent


def escalate(team: str, summary: str) -> dict:
    """Hand the ticket to a human team."""
    return {"action": "escalated", "team": team, "summary": summary}


def reply(message: str) -> dict:
    """Answer the customer directly."""
    return {"action": "replied", "message": message}


class TicketTriage(Agent):
    """Classifies support tickets and decides how to handle them."""

    instructions = "You triage customer support tickets for a billing product. Be brief."
    tools = []
    method_options = {
        "classify": {"expose": "io"},
        "triage": {
            "input": {
                "ticket": {
                    "description": "The customer's message",
                    "multiline": True,
                    "placeholder": "I was charged twice...",
                }
            }
        },
    }

    def classify(self, ticket: str) -> str:
        """Classify the ticket as billing, bug, account or other."""
        return (
            self(
                f"Classify this ticket as one of billing, bug, account, other. "
                f"Answer with the single word.\n\nTicket: {ticket}"
            )
            .strip()
            .lower()
        )

    def triage(self, ticket: str) -> dict:
        """Classify the ticket, then let the model pick the next step."""
        category = self.classify(ticket)
        result = self(
            f"The ticket below is about {category}. Decide the next step.\n\nTicket: {ticket}",
            choices={
                "escalate": escalate,
                "reply": reply,
            },
        )
        return {"category": category, **result}


_triage_agent = TicketTriage()
triage = _triage_agent.triage

PROGRAM_ENTRIES = ["triage"]
