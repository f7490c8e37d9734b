"""The built-in text workflow: ``TextAgent.summarize_text`` calls ``agent(..., tools=[])``,
is exported with its form metadata and runs with ``openprogram run`` (issue 11, item 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from loopback import OpenAIServer

from openprogram import TextAgent
from openprogram.programs.loader import load_entry
from openprogram.runtime import create_runtime

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")
ENTRY = "openprogram.programs.text_agent:summarize_text"


def test_export_keeps_name_and_form_metadata() -> None:
    entry = load_entry(ENTRY)
    assert entry.name == "summarize_text" and entry.qualname == "TextAgent.summarize_text"
    fields = entry.options["input"]
    assert fields["text"]["multiline"] is True and fields["text"]["placeholder"]
    assert fields["style"]["options"] == ["short", "detailed", "bullets"]
    params = TextAgent().summarize_text.spec["parameters"]
    assert params["properties"]["style"]["enum"] == ["short", "detailed", "bullets"]
    assert params["required"] == ["text"]


def test_summarize_text_is_one_turn_without_tools(openai_server: OpenAIServer) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    openai_server.reply_text("- durable runs resume")
    try:
        summary = TextAgent(runtime=rt).summarize_text("Runs resume after a crash.", "bullets")
    finally:
        rt.close()
    assert summary == "- durable runs resume"
    (request,) = openai_server.requests
    assert not request.json.get("tools")  # agent(..., tools=[]) offers no tools
    assert "as a short list of bullet points" in json.dumps(request.json["messages"])


def test_runs_with_openprogram_run(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.reply_text("A short summary.")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENPROGRAM_", "OPENAI_"))}
    env["OPENAI_BASE_URL"] = openai_server.base_url
    args = json.dumps({"text": "OpenProgram runs Programs durably."})
    proc = subprocess.run(
        [OPENPROGRAM, "run", ENTRY, "--args", args, "--model", "openai:loop", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "OPENPROGRAM_STORE": str(tmp_path / "st")},
    )
    out = json.loads(proc.stdout)
    assert out["status"] == "completed" and out["result"] == "A short summary.", proc.stderr
    assert "OpenProgram runs Programs durably." in json.dumps(openai_server.requests[0].json)
