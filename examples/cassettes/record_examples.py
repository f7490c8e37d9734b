"""Re-record the example cassettes against a scripted stand-in model.

    .venv/bin/python examples/cassettes/record_examples.py

Starts an OpenAI-compatible stand-in server on 127.0.0.1 whose replies are scripted
below, runs each example through the real ``openprogram run`` CLI with
``OPENPROGRAM_RECORD_TO`` set, and leaves ``<example>.jsonl`` beside this file. The
cassettes are what the README quick start replays offline; rerun this script after
changing an example's prompts. To record from a real model instead, run the same
``openprogram run`` command with ``OPENPROGRAM_MODEL=openai:gpt-4.1-mini`` and
``OPENPROGRAM_RECORD_TO=examples/cassettes/<example>.jsonl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def _tool_call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def stand_in_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: a chat.completions message for one request body."""
    messages = body["messages"]
    last = messages[-1]
    text = json.dumps(messages)
    if "Classify this ticket" in text and last["role"] == "user" and "Decide" not in text:
        return {"role": "assistant", "content": "billing"}
    if "Decide the next step" in text:
        decision = {
            "call": "escalate",
            "team": "billing",
            "summary": "Customer was charged twice for the March invoice.",
        }
        return {"role": "assistant", "content": "```json\n" + json.dumps(decision) + "\n```"}
    tool_results = [m for m in messages if m["role"] == "tool"]
    if not tool_results:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [_tool_call("search_notes", {"query": "bridge built"}, 1)],
        }
    if len(tool_results) == 1:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [_tool_call("read_note", {"key": "bridge"}, 2)],
        }
    return {
        "role": "assistant",
        "content": "The Old Town bridge was built in 1891 (rebuilt in 1952) [note: bridge].",
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = stand_in_reply(body)
        payload = json.dumps(
            {
                "id": "chatcmpl-stand-in",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


EXAMPLES = {
    "ticket_triage": ("triage", {"ticket": "I was charged twice for my March invoice."}),
    "researcher": ("research", {"question": "When was the bridge built?"}),
}


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for name, (entry, args) in EXAMPLES.items():
            cassette = HERE / f"{name}.jsonl"
            cassette.unlink(missing_ok=True)
            with tempfile.TemporaryDirectory() as store:
                env = {
                    **os.environ,
                    "OPENPROGRAM_MODEL": "openai:stand-in",
                    "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
                    "OPENPROGRAM_RECORD_TO": str(cassette),
                }
                cmd = [sys.executable, "-m", "openprogram.cli", "run",
                       f"examples/{name}.py:{entry}", "--args", json.dumps(args),
                       "--store", store, "--json"]  # fmt: skip
                out = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
                print(name, out.returncode, out.stdout.strip() or out.stderr.strip())
                if out.returncode != 0:
                    return 1
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
