"""A loopback model server speaking the OpenAI Chat Completions wire format.

Replies come from a script (one per request, in order); every request body is kept so
tests can read exactly what the model was sent.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

Reply = str | Callable[[dict[str, Any]], str]


class ChatServer:
    """Scripted ``/v1/chat/completions`` endpoint on an ``HTTPServer``."""

    def __init__(self, httpserver: HTTPServer) -> None:
        self._server = httpserver
        self._lock = threading.Lock()
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        httpserver.expect_request("/v1/chat/completions", method="POST").respond_with_handler(
            self._handle
        )

    @property
    def base_url(self) -> str:
        return self._server.url_for("/v1")

    def script(self, replies: Iterable[Reply]) -> ChatServer:
        self.replies.extend(replies)
        return self

    def user_text(self, index: int) -> str:
        """The text of the last user message of request ``index``."""
        messages = self.requests[index]["messages"]
        content = [m for m in messages if m["role"] == "user"][-1]["content"]
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content)
        return str(content)

    def _handle(self, request: Request) -> Response:
        body = json.loads(request.get_data(as_text=True))
        with self._lock:
            self.requests.append(body)
            reply = self.replies.popleft() if self.replies else None
        if reply is None:
            error = {"error": {"message": "script exhausted", "type": "invalid_request_error"}}
            return Response(json.dumps(error), status=400, content_type="application/json")
        text = reply(body) if callable(reply) else reply
        payload = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", "test"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return Response(json.dumps(payload), status=200, content_type="application/json")
