"""Loopback model servers speaking the OpenAI and Anthropic wire formats, and their fixtures.

``openai_server`` speaks Chat Completions (``base_url`` ends in ``/v1``), ``anthropic_server``
speaks the Messages API. Tests queue replies (``reply_text``, ``reply_tool_calls``,
``reply_error``, ``reply_raw``, ``reply_stream`` or ``reply_with(handler)``), run the client,
then inspect ``server.requests``. When the queue is empty the server answers HTTP 418 so a missing
reply is a clear, non-retried failure. ``closed_port_url`` is a URL nobody listens on.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from openprogram.runtime import RetryPolicy, Runtime

SENTINEL_KEY = "sk-SENTINEL-7f3a9c1e5b2d4f60a8e9"


_PART_END = re.compile(r"(?<=</context>)\n\n|(?<=</history>)\n\n")


def prompt_parts(content: Any) -> list[str]:
    """The text parts of a user message's content as the prompt was composed: a list's
    text parts, or a string (OpenAI gets text-only parts as one string joined by a blank
    line) cut after each ``</context>`` / ``</history>`` block."""
    if isinstance(content, list):
        return [part["text"] for part in content if part.get("type") == "text"]
    return _PART_END.split(content)


@dataclass
class Received:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    """What the server sends back for one request."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # When set, the body is these chunks (``body`` is ignored), each sent after
    # ``chunk_delay_s``; Content-Length only if ``headers`` names one.
    chunks: Iterable[bytes] | None = None
    chunk_delay_s: float = 0.0


Handler = Callable[[Received], Reply]


class LoopbackServer:
    """A threaded HTTP server answering from a FIFO queue of replies/handlers."""

    wire = "generic"
    request_id_header = "x-request-id"
    prefix = ""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._queue: list[Reply | Handler] = []
        self._lock = threading.Lock()
        self._count = 0
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer._serve(self)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """The base URL to give the provider."""
        return self.url + self.prefix

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- queueing -----------------------------------------------------------------

    def reply_with(self, *items: Reply | Handler) -> None:
        with self._lock:
            self._queue.extend(items)

    def reply_json(
        self, payload: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        self.reply_with(self._json_reply(payload, status, headers))

    def reply_raw(
        self,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str = "text/html",
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self.reply_with(
            Reply(status, raw, {"content-type": content_type, **(headers or {})}, delay_s)
        )

    def reply_stream(
        self,
        chunks: Iterable[bytes],
        *,
        chunk_delay_s: float = 0.0,
        headers: dict[str, str] | None = None,
        status: int = 200,
    ) -> None:
        """Send ``chunks`` one by one (a trickle or a body too big to build in memory)."""
        all_headers = {"content-type": "application/json", **(headers or {})}
        self.reply_with(Reply(status, b"", all_headers, 0.0, chunks, chunk_delay_s))

    def reply_text(self, text: str, **kw: Any) -> None:
        self.reply_with(self._json_reply(self.text_payload(text, **kw)))

    def reply_tool_calls(self, calls: list[tuple[str, str, dict[str, Any]]], **kw: Any) -> None:
        """``calls`` are ``(call_id, tool_name, arguments)``."""
        self.reply_with(self._json_reply(self.tool_payload(calls, **kw)))

    def reply_error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.reply_with(self._json_reply(self.error_payload(message), status, headers))

    def _json_reply(
        self, payload: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> Reply:
        return Reply(
            status,
            json.dumps(payload).encode(),
            {"content-type": "application/json", **(headers or {})},
        )

    # -- wire formats (overridden) ----------------------------------------------------

    def text_payload(
        self, text: str, *, usage: tuple[int, int] = (11, 7), model: str = ""
    ) -> dict[str, Any]:
        raise NotImplementedError

    def tool_payload(
        self, calls: list[tuple[str, str, dict[str, Any]]], *, usage: tuple[int, int] = (13, 5)
    ) -> dict[str, Any]:
        raise NotImplementedError

    def error_payload(self, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": "error"}}

    # -- serving --------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length) if length else b""
        received = Received(
            handler.command,
            handler.path,
            {k.lower(): v for k, v in handler.headers.items()},
            body,
        )
        with self._lock:
            self.requests.append(received)
            self._count += 1
            number = self._count
            item = self._queue.pop(0) if self._queue else None
        if item is None:
            reply = Reply(418, b'{"error": {"message": "loopback server: no reply queued"}}')
        elif isinstance(item, Reply):
            reply = item
        else:
            try:
                reply = item(received)
            except Exception as exc:  # surfaced to the client as a non-retried error
                reply = Reply(418, json.dumps({"error": {"message": f"handler: {exc!r}"}}).encode())
        if reply.delay_s:
            time.sleep(reply.delay_s)
        headers = {self.request_id_header: f"req_{number}", **reply.headers}
        if reply.chunks is None:
            headers["content-length"] = str(len(reply.body))
        try:
            handler.send_response(reply.status)
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            if reply.chunks is None:
                handler.wfile.write(reply.body)
                return
            handler.wfile.flush()
            for chunk in reply.chunks:
                if reply.chunk_delay_s:
                    time.sleep(reply.chunk_delay_s)
                handler.wfile.write(chunk)
                handler.wfile.flush()
        except OSError:  # the client gave up (timeout and size-limit tests)
            pass


class OpenAIServer(LoopbackServer):
    """Chat Completions wire format."""

    wire = "openai"
    request_id_header = "x-request-id"
    prefix = "/v1"

    def text_payload(
        self, text: str, *, usage: tuple[int, int] = (11, 7), model: str = ""
    ) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model or "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }

    def tool_payload(
        self, calls: list[tuple[str, str, dict[str, Any]]], *, usage: tuple[int, int] = (13, 5)
    ) -> dict[str, Any]:
        return {
            "id": "chatcmpl-2",
            "object": "chat.completion",
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(args)},
                            }
                            for call_id, name, args in calls
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": sum(usage),
            },
        }


class AnthropicServer(LoopbackServer):
    """Messages API wire format."""

    wire = "anthropic"
    request_id_header = "request-id"
    prefix = ""

    def text_payload(
        self, text: str, *, usage: tuple[int, int] = (11, 7), model: str = ""
    ) -> dict[str, Any]:
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model or "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }

    def tool_payload(
        self, calls: list[tuple[str, str, dict[str, Any]]], *, usage: tuple[int, int] = (13, 5)
    ) -> dict[str, Any]:
        return {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "tool_use", "id": call_id, "name": name, "input": args}
                for call_id, name, args in calls
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }

    def error_payload(self, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A Chat Completions server on 127.0.0.1 (``.base_url`` ends in ``/v1``)."""
    server = OpenAIServer()
    yield server
    server.close()


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    """A Messages API server on 127.0.0.1."""
    server = AnthropicServer()
    yield server
    server.close()


#: The wire formats every provider test runs on.
WIRES = ("openai", "anthropic")


@pytest.fixture(params=WIRES, name="server")
def wire_server(request: pytest.FixtureRequest) -> LoopbackServer:
    """``server``: the loopback server of the wire format under test (a test asking for it
    runs once per wire format)."""
    found: LoopbackServer = request.getfixturevalue(f"{request.param}_server")
    return found


def runtime_for(
    server: LoopbackServer, *, retry: RetryPolicy, api_key: str = SENTINEL_KEY, **kw: Any
) -> Runtime:
    """A runtime of ``server``'s wire format talking to it (a test model name)."""
    model = "gpt-test" if server.wire == "openai" else "claude-test"
    return Runtime(
        f"{server.wire}:{model}", base_url=server.base_url, api_key=api_key, retry=retry, **kw
    )


@pytest.fixture
def closed_port_url() -> str:
    """``http://127.0.0.1:PORT`` where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class RecordedSleeps:
    """A retry policy whose sleeps are recorded, not slept (delays stay inspectable)."""

    delays: list[float] = field(default_factory=list)

    def policy(self, max_retries: int = 3, **kw: Any) -> RetryPolicy:
        async def asleep(seconds: float) -> None:
            self.delays.append(seconds)

        return RetryPolicy(max_retries=max_retries, sleep=self.delays.append, asleep=asleep, **kw)


@pytest.fixture
def sleeps() -> RecordedSleeps:
    """Retry delays recorded instead of slept: ``sleeps.policy(max_retries=...)``."""
    return RecordedSleeps()
