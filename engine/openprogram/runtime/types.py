"""Provider-neutral request/response types used by ``Runtime`` and every provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
ContentBlocks = list[dict[str, Any]]


@dataclass
class ToolCall:
    """One tool call requested by the model.

    When the model's arguments are unusable (not JSON, or JSON but not an object),
    ``arguments`` is empty, ``raw_arguments`` keeps the model's own text (sent back to it
    unchanged in the history) and ``arguments_error`` says what was wrong.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None
    arguments_error: str | None = None


@dataclass
class Usage:
    """Token usage of one model request."""

    input_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass
class Message:
    """One chat message in provider-neutral form.

    ``content`` is text or a list of content blocks (``{"type": "text", "text": ...}``).
    Assistant messages may carry ``tool_calls``; tool messages carry ``tool_call_id``.
    """

    role: Role
    content: str | ContentBlocks = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


@dataclass
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ModelRequest:
    """One request to a model (one turn of the tool loop)."""

    model_id: str
    messages: list[Message]
    system: str | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    response_format: dict[str, Any] | None = None
    effort: str | None = None
    timeout_s: float | None = None
    # The decision menu offered on this request (for the scripted provider's callable).
    choices: Any = None
    # "none": ``tools`` only describe the tools whose calls the history holds (a wire
    # such as Anthropic's rejects tool blocks without their definitions); the model is
    # told not to call any. ``None``: the tools are offered as usual.
    tool_choice: Literal["none"] | None = None


@dataclass
class ModelResponse:
    """The model's reply to one request."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    request_id: str | None = None
    finish_reason: str | None = None
