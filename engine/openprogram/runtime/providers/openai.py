"""``openai:`` — the OpenAI-compatible Chat Completions wire format over httpx.

Serves OpenAI and compatible servers (vLLM, Ollama, llama.cpp server, LM Studio, LiteLLM)
through ``base_url`` / ``OPENAI_BASE_URL``. Native tool calls, JSON-schema
``response_format``, ``effort`` sent as ``reasoning_effort``. A reply under a JSON
``response_format`` is read by the rule every provider shares (servers that ignore the
field still read the same): :func:`~openprogram.runtime.providers.replies.text_for_format`.
"""

from __future__ import annotations

import json
import os
from typing import Any

from openprogram.errors import ConfigError
from openprogram.runtime.http import (
    MAX_RESPONSE_BYTES,
    JsonReply,
    JsonTransport,
    is_loopback,
    split_endpoint,
    validate_base_url,
)
from openprogram.runtime.providers.replies import (
    blocks_text,
    check_complete,
    text_for_format,
)
from openprogram.runtime.providers.tool_arguments import tool_call_from_text, tool_call_from_value
from openprogram.runtime.providers.usage import usage_from
from openprogram.runtime.retry import RetryPolicy
from openprogram.runtime.secret import Secret
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall
from openprogram.url_secrets import redact_url

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4.1-mini"


class OpenAIProvider:
    """Chat Completions client. The key comes from ``api_key`` or ``OPENAI_API_KEY``.

    A loopback ``base_url`` (``localhost``/``127.x``) may run without a key.
    """

    name = "openai"

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        env_url = os.environ.get("OPENAI_BASE_URL") or None
        where = "base_url" if base_url else "OPENAI_BASE_URL"
        url = validate_base_url(base_url or env_url or DEFAULT_BASE_URL, where)
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and not is_loopback(url):
            raise ConfigError(
                "OPENAI_API_KEY is not set: export OPENAI_API_KEY=<your key> (or pass api_key=), "
                "or point OPENAI_BASE_URL at a local server such as http://127.0.0.1:11434/v1"
            )
        self.model_id = model_id
        # a base URL given as the whole endpoint (or ending in part of it) is not extended
        # by that part again: requests go to the URL given
        url, self._path = split_endpoint(url, "/chat/completions", "/chat/completions")
        self._transport = JsonTransport(
            provider=self.name,
            base_url=url,
            headers={"content-type": "application/json"},
            secret=Secret(key) if key else None,
            key_env="OPENAI_API_KEY",
            base_url_env=where,
            request_id_header="x-request-id",
            timeout_s=timeout_s,
            retry=retry or RetryPolicy(),
            max_response_bytes=max_response_bytes,
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def __repr__(self) -> str:
        return f"OpenAIProvider(model_id={self.model_id!r}, base_url={redact_url(self.base_url)!r})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        reply = self._transport.post(
            self._path, build_payload(request), timeout_s=request.timeout_s
        )
        return parse_reply(reply, self._transport, request)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        reply = await self._transport.apost(
            self._path, build_payload(request), timeout_s=request.timeout_s
        )
        return parse_reply(reply, self._transport, request)

    def close(self) -> None:
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()


def build_payload(request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions request body for ``request``."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_wire_message(m) for m in request.messages)
    payload: dict[str, Any] = {"model": request.model_id, "messages": messages}
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        if request.tool_choice == "none":  # described for the history's calls only
            payload["tool_choice"] = "none"
    if request.response_format is not None:
        payload["response_format"] = request.response_format
    if request.effort:
        payload["reasoning_effort"] = request.effort
    return payload


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": blocks_text(message.content),
        }
    out: dict[str, Any] = {"role": message.role, "content": _wire_content(message.content)}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = out["content"] or None
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments_text(c)},
            }
            for c in message.tool_calls
        ]
    if message.name and message.role == "user":
        out["name"] = message.name
    return out


def _wire_content(content: str | list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A message's content on the wire: one string when every part is text (some
    OpenAI-compatible servers take only strings), the parts joined by a blank line as a
    prompt's parts read; a list only when a part is not text (an image)."""
    if isinstance(content, str):
        return content
    if all(b.get("type") == "text" and isinstance(b.get("text"), str) for b in content):
        return "\n\n".join(b["text"] for b in content)
    return content


def _arguments_text(call: ToolCall) -> str:
    """The arguments as the model wrote them (its own text when it was unusable)."""
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def parse_reply(reply: JsonReply, transport: JsonTransport, request: ModelRequest) -> ModelResponse:
    """A :class:`ModelResponse` from a Chat Completions response body.

    A reply cut short (``finish_reason`` ``length``) or refused (``content_filter``, a
    ``message.refusal``) raises :class:`~openprogram.errors.IncompleteReply`
    (:mod:`~openprogram.runtime.providers.replies`); ``"content": null`` is no text.
    """
    body = reply.body
    try:
        choice = body["choices"][0]
        message = choice["message"]
        text = blocks_text(message.get("content"))
        calls = [_tool_call(c) for c in message.get("tool_calls") or []]
        refusal = message.get("refusal")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise transport.shape_error(reply, "no usable choices[0].message") from None
    reason = choice.get("finish_reason")
    check_complete(reply, transport, reason=reason, text=text, refusal=refusal)
    text = text_for_format(request, calls, text, reply, transport)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage_from(body.get("usage"), "prompt_tokens", "completion_tokens"),
        model=str(body.get("model") or ""),
        request_id=reply.request_id,
        finish_reason=reason if isinstance(reason, str) else None,
    )


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    function = raw["function"]
    call_id, name = str(raw.get("id") or ""), str(function["name"])
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        return tool_call_from_text(call_id, name, arguments)
    return tool_call_from_value(call_id, name, arguments)  # a server that sent an object
