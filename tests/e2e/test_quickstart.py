"""The README quick start: lint the bundled examples clean, then run them offline.

These run the real console scripts in subprocesses, replaying the shipped cassettes,
so a change to an example's prompts that is not re-recorded fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    args: list[str], tmp_path: Path, model: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("OPENPROGRAM_MODEL", None)
    if model:
        env["OPENPROGRAM_MODEL"] = model
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args, "--store", str(tmp_path / "store")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("example", "entry", "args", "expected"),
    [
        (
            "ticket_triage",
            "triage",
            {"ticket": "I was charged twice for my March invoice."},
            {"category": "billing", "action": "escalated", "team": "billing"},
        ),
        (
            "researcher",
            "research",
            {"question": "When was the bridge built?"},
            "1891",
        ),
    ],
)
def test_example_replays_offline(
    tmp_path: Path, example: str, entry: str, args: dict[str, str], expected: object
) -> None:
    cassette = f"replay:examples/cassettes/{example}.jsonl"
    out = run_cli(
        ["run", f"examples/{example}.py:{entry}", "--args", json.dumps(args), "--json"],
        tmp_path,
        model=cassette,
    )
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["status"] == "completed"
    if isinstance(expected, dict):
        assert expected.items() <= payload["result"].items()
    else:
        assert str(expected) in payload["result"]
    # The run is recorded: its session holds the entry's code node and the llm nodes.
    shown = run_cli(["show", payload["run_id"], "--format", "json"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    kinds = [n["kind"] for n in json.loads(shown.stdout)["nodes"]]
    assert "code" in kinds and "llm" in kinds


def test_changed_question_does_not_replay(tmp_path: Path) -> None:
    out = run_cli(
        [
            "run",
            "examples/researcher.py:research",
            "--args",
            json.dumps({"question": "When did the harbour open?"}),
            "--json",
        ],
        tmp_path,
        model="replay:examples/cassettes/researcher.jsonl",
    )
    assert out.returncode == 1
    payload = json.loads(out.stdout)
    assert payload["status"] == "failed" and "ReplayMismatch" in payload["error"]


def test_report_pipeline_runs_without_a_model(tmp_path: Path) -> None:
    out = run_cli(
        [
            "run",
            "examples/report_pipeline.py:build_report",
            "--args",
            '{"topic": "tides"}',
            "--json",
        ],
        tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["status"] == "completed"
