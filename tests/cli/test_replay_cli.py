"""``openprogram replay``: re-run a recorded run offline from its own llm nodes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARGS = {"ticket": "I was charged twice for my March invoice."}


def cli(*args: str, model: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.pop("OPENPROGRAM_MODEL", None)
    if model:
        env["OPENPROGRAM_MODEL"] = model
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def record(tmp_path: Path) -> tuple[Path, Path, str]:
    program = tmp_path / "ticket_triage.py"
    shutil.copy(ROOT / "examples" / "ticket_triage.py", program)
    store = tmp_path / "store"
    out = cli(
        "run", f"{program}:triage", "--args", json.dumps(ARGS), "--store", str(store), "--json",
        model=f"replay:{ROOT / 'examples' / 'cassettes' / 'ticket_triage.jsonl'}",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return program, store, json.loads(out.stdout)["run_id"]


def test_replay_matches_the_recorded_run_without_any_model(tmp_path: Path) -> None:
    _, store, run_id = record(tmp_path)
    out = cli("replay", run_id, "--store", str(store), "--json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["replayed"] == run_id and payload["matches"] is True
    assert payload["run_id"] != run_id and payload["result"]["team"] == "billing"


def test_replay_of_an_edited_program_fails_with_a_diff(tmp_path: Path) -> None:
    program, store, run_id = record(tmp_path)
    text = program.read_text(encoding="utf-8")
    program.write_text(text.replace("Decide the next step.", "Choose what to do."), "utf-8")
    out = cli("replay", run_id, "--store", str(store), "--json")
    assert out.returncode == 1
    payload = json.loads(out.stdout)
    assert payload["status"] == "failed" and "ReplayMismatch" in payload["error"]
    assert "Choose what to do." in payload["error"]  # the diff shows the changed prompt


def test_replay_exports_a_cassette_that_replays(tmp_path: Path) -> None:
    program, store, run_id = record(tmp_path)
    cassette = tmp_path / "exported.jsonl"
    out = cli("replay", run_id, "--store", str(store), "--cassette", str(cassette))
    assert out.returncode == 0, out.stderr
    assert len(cassette.read_text(encoding="utf-8").splitlines()) == 2
    again = cli(
        "run", f"{program}:triage", "--args", json.dumps(ARGS),
        "--store", str(tmp_path / "other"), "--json", model=f"replay:{cassette}",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr


def test_replay_of_an_unknown_run_is_a_usage_error(tmp_path: Path) -> None:
    _, store, _ = record(tmp_path)
    out = cli("replay", "no-such-run", "--store", str(store))
    assert out.returncode == 2 and "no run 'no-such-run'" in out.stderr


def test_a_cassette_that_cannot_be_written_is_one_error_line(tmp_path: Path) -> None:
    _, store, run_id = record(tmp_path)
    for target, reason in (
        (tmp_path / "missing" / "out.jsonl", "No such file or directory"),
        (tmp_path, "Is a directory"),
    ):
        out = cli("replay", run_id, "--store", str(store), "--cassette", str(target))
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.splitlines() == [f"openprogram: error: cannot write {target}: {reason}"]
        out = cli("replay", run_id, "--store", str(store), "--cassette", str(target), "--json")
        assert out.returncode == 2 and json.loads(out.stdout)["status"] == "error"
    assert not (tmp_path / "missing").exists()
