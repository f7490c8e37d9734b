"""``scripted:`` — a deterministic test double for your own tests (no network).

Modelled on PydanticAI's ``TestModel``/``FunctionModel``::

    ScriptedProvider(replies=["hello", {"tool_calls": [{"name": "add", "arguments": {"a": 1}}]}])
    ScriptedProvider(function=lambda request: f"saw {len(request.tools)} tools")
    ScriptedProvider.block()     # every request raises BlockedRequestError
    ScriptedProvider.echo()      # replies with the last user text

A reply is a ``str``, a :class:`ModelResponse`, a dict ``{"text": ..., "tool_calls":
[{"name": ..., "arguments": {...}}], "usage": {...}}``, or an exception instance (raised).
The function sees the whole :class:`ModelRequest` (messages, ``tools``, ``choices``,
``response_format``) and returns a reply. ``requests`` keeps every request received.
Model strings: ``scripted:echo``, ``scripted:block``.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from openprogram.errors import ConfigError, OpenProgramError
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall, Usage

Reply = str | ModelResponse | Mapping[str, Any] | BaseException
ReplyFunction = Callable[[ModelRequest], "Reply | Awaitable[Reply]"]
MODES = ("echo", "block")


class BlockedRequestError(OpenProgramError, RuntimeError):
    """A model request was made although the scripted provider blocks all requests."""


class ScriptExhausted(OpenProgramError, RuntimeError):
    """More requests were made than replies were scripted."""


class ScriptedProvider:
    """A provider answering from a script, a function, or by echoing / blocking."""

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] | None = None,
        *,
        function: ReplyFunction | None = None,
        mode: str | None = None,
        model_id: str | None = None,
    ) -> None:
        given = sum(x is not None for x in (replies, function, mode))
        if given != 1:
            raise ConfigError(
                "ScriptedProvider needs exactly one of replies=[...], function=..., "
                "or mode='echo'|'block'"
            )
        if mode is not None and mode not in MODES:
            raise ConfigError(
                f"unknown scripted mode {mode!r}: valid model strings are "
                + ", ".join(f"'scripted:{m}'" for m in MODES)
            )
        self._replies: list[Reply] = list(replies) if replies is not None else []
        self._scripted = replies is not None
        self._function = function
        self.mode = mode
        self.model_id = model_id or (mode or ("function" if function else "script"))
        self.requests: list[ModelRequest] = []
        self._lock = threading.Lock()
        self._calls = 0

    @classmethod
    def block(cls) -> ScriptedProvider:
        """A provider that raises :class:`BlockedRequestError` on every request."""
        return cls(mode="block")

    @classmethod
    def echo(cls) -> ScriptedProvider:
        """A provider that replies with the text of the last user message."""
        return cls(mode="echo")

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._replies)

    def __repr__(self) -> str:
        kind = self.mode or ("function" if self._function else f"{len(self._replies)} replies")
        return f"ScriptedProvider({kind})"

    def complete(self, request: ModelRequest) -> ModelResponse:
        reply, number = self._next(request)
        if inspect.isawaitable(reply):
            close = getattr(reply, "close", None)
            if close is not None:
                close()
            raise ConfigError(
                "ScriptedProvider(function=...) returned an awaitable in a sync call; "
                "use a plain function or Runtime.aexec()"
            )
        return self._to_response(reply, request, number)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        reply, number = self._next(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return self._to_response(reply, request, number)

    def close(self) -> None:
        """Nothing to release."""

    # -- internals ----------------------------------------------------------------

    def _next(self, request: ModelRequest) -> tuple[Any, int]:
        with self._lock:
            self.requests.append(request)
            self._calls += 1
            number = self._calls
            if self.mode == "block":
                raise BlockedRequestError(
                    f"scripted:block: this code must make no model requests, but request "
                    f"#{number} was made (last user text: {_last_user_text(request)[:80]!r})"
                )
            if self.mode == "echo":
                return _last_user_text(request), number
            if self._function is None and not self._replies:
                used = number - 1
                raise ScriptExhausted(
                    f"scripted provider: no scripted reply left for request #{number} "
                    f"({used} {'reply was' if used == 1 else 'replies were'} scripted); "
                    "add replies or check for an unexpected extra model call"
                )
            if self._function is None:
                return self._replies.pop(0), number
        return self._function(request), number  # outside the lock: it may call back

    def _to_response(self, reply: Any, request: ModelRequest, number: int) -> ModelResponse:
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ModelResponse):
            response = reply
        elif isinstance(reply, str):
            response = ModelResponse(text=reply)
        elif isinstance(reply, Mapping):
            response = _from_mapping(reply, number)
        else:
            raise ConfigError(
                f"scripted reply #{number} is a {type(reply).__name__}; expected str, "
                "ModelResponse, dict with 'text'/'tool_calls', or an exception"
            )
        if not response.model:
            response = replace(response, model=f"scripted:{self.model_id}")
        if response.usage == Usage():
            response = replace(response, usage=_estimate_usage(request, response))
        if response.finish_reason is None:
            response = replace(
                response, finish_reason="tool_calls" if response.tool_calls else "stop"
            )
        return response


def _from_mapping(reply: Mapping[str, Any], number: int) -> ModelResponse:
    unknown = set(reply) - {"text", "tool_calls", "usage", "finish_reason"}
    if unknown:
        raise ConfigError(
            f"scripted reply #{number} has unknown keys {sorted(unknown)}; "
            "use 'text', 'tool_calls', 'usage', 'finish_reason'"
        )
    calls: list[ToolCall] = []
    for index, raw in enumerate(reply.get("tool_calls") or [], start=1):
        if not isinstance(raw, Mapping) or "name" not in raw:
            raise ConfigError(
                f"scripted reply #{number}: tool call {index} needs a 'name' "
                "(and optional 'arguments' dict)"
            )
        calls.append(
            ToolCall(
                id=str(raw.get("id") or f"call_{number}_{index}"),
                name=str(raw["name"]),
                arguments=dict(raw.get("arguments") or {}),
            )
        )
    usage = reply.get("usage") or {}
    return ModelResponse(
        text=str(reply.get("text") or ""),
        tool_calls=calls,
        usage=Usage(
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
        ),
        finish_reason=reply.get("finish_reason"),
    )


def _last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if message.role == "user":
            return _text(message)
    return ""


def _text(message: Message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _estimate_usage(request: ModelRequest, response: ModelResponse) -> Usage:
    """Deterministic word-count usage so usage recording can be tested offline."""
    words_in = len((request.system or "").split()) + sum(
        len(_text(m).split()) for m in request.messages
    )
    return Usage(input_tokens=words_in, output_tokens=len(response.text.split()))
