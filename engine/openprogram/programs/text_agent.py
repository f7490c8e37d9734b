"""The built-in text workflow: :class:`TextAgent` and its exported entries.

Run it like any Program::

    openprogram run openprogram.programs.text_agent:summarize_text \\
        --args '{"text": "...", "style": "bullets"}' --model openai:gpt-4.1-mini

``summarize_text`` is an ordinary ``TextAgent`` method that calls ``agent(..., tools=[])``
(one model turn, no tools). The module-level export keeps the public name, and the
class's ``method_options`` carry the form metadata (``input``: descriptions,
placeholders, multi-line fields, the allowed styles) that forms and tool schemas show.
"""

from __future__ import annotations

from openprogram.agentic_programming.calls import agent
from openprogram.agents import Agent

__all__ = ["PROGRAM_ENTRIES", "STYLES", "TextAgent", "summarize_text"]

STYLES: dict[str, str] = {
    "short": "in two or three sentences",
    "detailed": "in a few paragraphs that keep every important point",
    "bullets": "as a short list of bullet points",
}


class TextAgent(Agent):
    """Text workflows: summarising a text."""

    method_options = {
        "summarize_text": {
            "input": {
                "text": {
                    "description": "The text to summarise",
                    "placeholder": "Paste the text here",
                    "multiline": True,
                },
                "style": {
                    "description": "How the summary is written",
                    "options": list(STYLES),
                },
            },
        },
    }

    def summarize_text(self, text: str, style: str = "short") -> str:
        """Summarise ``text`` in the chosen ``style`` (short, detailed or bullets)."""
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}; choose one of {', '.join(STYLES)}")
        return str(
            agent(
                f"Summarise the text below {STYLES[style]}. Reply with the summary only.\n\n"
                f"Text:\n{text}",
                tools=[],
            )
        )


summarize_text = TextAgent().summarize_text
PROGRAM_ENTRIES = ["summarize_text"]
