"""A loopback OpenAI Chat Completions server for Agent/llm/context/registry tests.

``ChatServer`` answers ``POST /v1/chat/completions`` from a queue of scripted replies
(text, tool calls, or a callable that sees the request body) and keeps every request
body it received, so tests can assert the exact prompt sent on the wire.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import prompt_parts
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from openprogram.programs.registry import isolated_registry
from openprogram.runtime import Runtime
from openprogram.store import SessionNodeWriter, SessionStore

Reply = str | dict[str, Any] | Callable[[dict[str, Any]], Any]


def tool_call(name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    """A scripted reply that asks for one tool call."""
    return {"tool_calls": [(name, arguments, call_id)]}


class ChatServer:
    """Scripted Chat Completions endpoint on 127.0.0.1."""

    def __init__(self, httpserver: HTTPServer) -> None:
        self.httpserver = httpserver
        self.requests: list[dict[str, Any]] = []
        self.replies: deque[Reply] = deque()
        self.default: Reply = "ok"
        self._lock = threading.Lock()
        self._ids = 0
        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(
            self._handle
        )

    @property
    def base_url(self) -> str:
        return self.httpserver.url_for("/v1")

    def reply(self, *items: Reply) -> ChatServer:
        self.replies.extend(items)
        return self

    def runtime(self, model: str = "openai:test-model") -> Runtime:
        return Runtime(model, base_url=self.base_url, api_key="sk-test-sentinel", max_retries=0)

    # -- inspection ---------------------------------------------------------------
    def messages(self, index: int = -1) -> list[dict[str, Any]]:
        return list(self.requests[index]["messages"])

    def user_texts(self, index: int = -1) -> list[str]:
        """Text parts of the first user message of request ``index``."""
        for message in self.messages(index):
            if message["role"] == "user":
                return prompt_parts(message["content"])
        return []

    def system(self, index: int = -1) -> str | None:
        for message in self.messages(index):
            if message["role"] == "system":
                return str(message["content"])
        return None

    def tool_names(self, index: int = -1) -> list[str]:
        return [t["function"]["name"] for t in self.requests[index].get("tools", [])]

    def tool_results(self, index: int = -1) -> list[str]:
        return [m["content"] for m in self.messages(index) if m["role"] == "tool"]

    # -- wire -----------------------------------------------------------------------
    def _handle(self, request: Request) -> Response:
        body = json.loads(request.get_data(as_text=True))
        with self._lock:
            self.requests.append(body)
            item = self.replies.popleft() if self.replies else self.default
        if callable(item):
            item = item(body)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if isinstance(item, str):
            message["content"] = item
        else:
            message["content"] = item.get("text")
            calls = []
            for name, args, call_id in item.get("tool_calls", []):
                with self._lock:
                    self._ids += 1
                    cid = call_id or f"call_{self._ids}"
                calls.append(
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                )
            message["tool_calls"] = calls
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": body.get("model", "test-model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
        return Response(json.dumps(payload), status=200, content_type="application/json")


@pytest.fixture
def chat(httpserver: HTTPServer) -> ChatServer:
    return ChatServer(httpserver)


@pytest.fixture
def rt(chat: ChatServer) -> Iterator[Runtime]:
    runtime = chat.runtime()
    yield runtime
    runtime.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    s = SessionStore(root_path=tmp_path / "store")
    yield s
    s.close()


@pytest.fixture
def writer(store: SessionStore) -> SessionNodeWriter:
    store.create_session("s1", agent_id="test")
    return SessionNodeWriter(store, "s1")


@pytest.fixture(autouse=True)
def _restore_registry() -> Iterator[None]:
    with isolated_registry():
        yield


def history_block(texts: list[str]) -> str | None:
    """The ``<history>`` part of a user message (without the tags), or None."""
    for text in texts:
        if text.startswith("<history>\n"):
            return text[len("<history>\n") : -len("\n</history>")]
    return None
