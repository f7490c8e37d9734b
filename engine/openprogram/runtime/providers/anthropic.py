"""``anthropic:`` — the Anthropic Messages wire format over httpx, with native tool use.

``response_format`` has no native equivalent here, so it is emulated: the JSON schema is
appended to the system prompt with an instruction to answer with JSON only; the reply is
read by the rule every provider shares (:func:`~openprogram.runtime.providers.replies.text_for_format`:
a code fence is stripped, the bare JSON is returned, anything else is a
:class:`~openprogram.errors.ProviderError`). ``effort`` is not sent (Messages has no portable equivalent).
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
    block_text,
    blocks_text,
    check_complete,
    text_for_format,
)
from openprogram.runtime.providers.tool_arguments import tool_call_from_value
from openprogram.runtime.providers.usage import usage_from
from openprogram.runtime.retry import RetryPolicy
from openprogram.runtime.secret import Secret
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall
from openprogram.url_secrets import redact_url

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_MODEL = "claude-sonnet-4-5"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
JSON_INSTRUCTION = (
    "Respond with only one JSON value, no prose and no code fence, that matches this JSON schema:\n"
)


class AnthropicProvider:
    """Messages API client. The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``."""

    name = "anthropic"

    def __init__(
        self,
        model_id: str = DEFAULT_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        env_url = os.environ.get("ANTHROPIC_BASE_URL") or None
        where = "base_url" if base_url else "ANTHROPIC_BASE_URL"
        url = validate_base_url(base_url or env_url or DEFAULT_BASE_URL, where)
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key and not is_loopback(url):
            raise ConfigError(
                "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your key> "
                "(or pass api_key=)"
            )
        self.model_id = model_id
        # a base URL given as the whole endpoint (or ending in part of it) is not extended
        # by that part again: requests go to the URL given
        url, self._path = split_endpoint(url, "/v1/messages", "/messages")
        self.max_tokens = max_tokens
        self._transport = JsonTransport(
            provider=self.name,
            base_url=url,
            headers={"content-type": "application/json", "anthropic-version": API_VERSION},
            secret=Secret(key) if key else None,
            key_env="ANTHROPIC_API_KEY",
            base_url_env=where,
            request_id_header="request-id",
            timeout_s=timeout_s,
            retry=retry or RetryPolicy(),
            max_response_bytes=max_response_bytes,
        )

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def __repr__(self) -> str:
        return (
            f"AnthropicProvider(model_id={self.model_id!r}, base_url={redact_url(self.base_url)!r})"
        )

    def complete(self, request: ModelRequest) -> ModelResponse:
        payload = build_payload(request, max_tokens=self.max_tokens)
        reply = self._transport.post(self._path, payload, timeout_s=request.timeout_s)
        return parse_reply(reply, self._transport, request)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        payload = build_payload(request, max_tokens=self.max_tokens)
        reply = await self._transport.apost(self._path, payload, timeout_s=request.timeout_s)
        return parse_reply(reply, self._transport, request)

    def close(self) -> None:
        self._transport.close()

    async def aclose(self) -> None:
        await self._transport.aclose()


def response_schema(response_format: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema inside an OpenAI-style ``response_format`` (None for json_object)."""
    spec = response_format.get("json_schema")
    if isinstance(spec, dict) and isinstance(spec.get("schema"), dict):
        return spec["schema"]
    return None


def build_payload(request: ModelRequest, *, max_tokens: int) -> dict[str, Any]:
    """The Messages API request body for ``request``.

    Every body it builds is one the Messages API accepts: a text block that is empty or
    only whitespace is dropped (the API rejects both), a message left with no block is
    dropped too (its neighbours of the same role are joined into one turn, as the API
    itself would join them), and when the history holds ``tool_use`` / ``tool_result``
    blocks ``tools`` is always sent -- the request's definitions, plus a bare one for a
    tool the history names but the request does not define -- with ``tool_choice``
    ``none`` when the request offers no tool to call.
    """
    system_parts = [request.system] if request.system else []
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        if message.role == "system":
            system_parts.append(blocks_text(message.content))
            continue
        role, blocks = _wire_blocks(message)
        if not blocks:
            continue  # an empty reply (or one of only whitespace) is no message
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)  # tool results + follow-up user text
        else:
            messages.append({"role": role, "content": blocks})
    if request.response_format is not None and request.response_format.get("type") != "text":
        schema = response_schema(request.response_format)
        system_parts.append(
            JSON_INSTRUCTION + json.dumps(schema, indent=2)
            if schema is not None
            else "Respond with only one JSON object, no prose and no code fence."
        )
    payload: dict[str, Any] = {
        "model": request.model_id,
        "max_tokens": max_tokens,
        "messages": messages,
    }
    if system_parts:
        payload["system"] = "\n\n".join(system_parts)
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]
    defined = {t.name for t in request.tools}
    for name in _tool_names_used(messages):
        if name not in defined:  # a history from elsewhere: its tool is named, not served
            defined.add(name)
            tools.append({"name": name, "description": "", "input_schema": {"type": "object"}})
    if tools:
        payload["tools"] = tools
        if request.tool_choice == "none" or not request.tools:
            payload["tool_choice"] = {"type": "none"}
    return payload


def _tool_names_used(messages: list[dict[str, Any]]) -> list[str]:
    """The tools the history's ``tool_use`` blocks name, in order."""
    names: list[str] = []
    for message in messages:
        for block in message["content"]:
            name = block.get("name")
            if block.get("type") == "tool_use" and name not in names:
                names.append(str(name))
    return names


def _is_blank_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not str(block.get("text") or "").strip()


def _wire_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": blocks_text(message.content),
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    content = message.content
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": content}]
        if isinstance(content, str)
        else [dict(b) for b in content]
    )
    blocks = [b for b in blocks if not _is_blank_text(b)]
    if message.role == "assistant":
        blocks.extend(
            # (unusable arguments go back as {}: the Messages API takes only an object)
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
            for c in message.tool_calls
        )
        return "assistant", blocks
    return "user", blocks


def parse_reply(reply: JsonReply, transport: JsonTransport, request: ModelRequest) -> ModelResponse:
    """A :class:`ModelResponse` from a Messages API response body.

    A reply cut short (``stop_reason`` ``max_tokens``) or refused (``refusal``) raises
    :class:`~openprogram.errors.IncompleteReply` (:mod:`~openprogram.runtime.providers.replies`);
    a ``null`` text block is no text; a text that is no string, or an empty ``content``
    without a ``stop_reason``, is an unexpected response shape (as on every provider).
    """
    body = reply.body
    content = body.get("content")
    if not isinstance(content, list):
        raise transport.shape_error(reply, "no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    try:
        for block in content:
            if block.get("type") == "text":
                texts.append(block_text(block))  # a null text is no text
            elif block.get("type") == "tool_use":
                call = tool_call_from_value(
                    str(block["id"]), str(block["name"]), block.get("input")
                )
                calls.append(call)
    except (KeyError, AttributeError, TypeError):
        raise transport.shape_error(reply, "malformed content block") from None
    text = "".join(texts)
    reason = body.get("stop_reason")
    if not content and reason is None:  # no reply at all, not an empty one that ended
        raise transport.shape_error(reply, "empty content and no stop_reason")
    check_complete(reply, transport, reason=reason, text=text)
    text = text_for_format(request, calls, text, reply, transport)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage_from(body.get("usage"), "input_tokens", "output_tokens"),
        model=str(body.get("model") or ""),
        request_id=reply.request_id,
        finish_reason=reason if isinstance(reason, str) else None,
    )
