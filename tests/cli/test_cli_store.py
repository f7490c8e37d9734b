"""``openprogram --version / sessions / show`` through a real subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram import __version__
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, Usage
from openprogram.scope import call_scope, record_llm_call, set_output, use_writer
from openprogram.store import SessionNodeWriter, SessionStore


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openprogram.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**__import__("os").environ, "OPENPROGRAM_STORE": ""},
    )


def _assert_one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("openprogram: error: ")
    return lines[0]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-store")
    with SessionStore(root) as store:
        writer = SessionNodeWriter(store, store.create_session("demo", agent_id="main"))
        writer.append("user", "user", input={"text": "hi"}, status="completed")
        request = ModelRequest("scripted:m", [Message("user", "hi")])
        response = ModelResponse('Hello "there"\nfriend', usage=Usage(3, 4))
        with use_writer(writer):
            with call_scope("main", inputs={"q": "hi"}, doc="Entry.") as frame:
                with call_scope("helper") as inner:
                    record_llm_call(
                        provider="scripted", request=request, response=response, duration_s=1.5
                    )
                    set_output(inner, "x" * 200)
                set_output(frame, {"answer": 42})
        store.create_session("empty")
        one = SessionNodeWriter(store, store.create_session("one"))
        one.append("user", "user", input={"text": "hi"}, status="completed")
    return root


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"openprogram {__version__}"


def test_sessions_table_and_json(store_dir: Path) -> None:
    proc = cli("sessions", "--store", str(store_dir))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["ID", "NAME", "NODES", "UPDATED"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["demo"][2] == "4" and rows["empty"][2] == "0"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", rows["demo"][3])

    proc = cli("sessions", "--json", "--store", str(store_dir))
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert isinstance(data, list)
    by_id = {s["id"]: s for s in data}
    assert by_id["demo"]["node_count"] == 4 and by_id["demo"]["agent_id"] == "main"
    assert {"id", "name", "head_id", "created_at", "updated_at"} <= set(by_id["empty"])


def test_sessions_without_a_store_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    proc = cli("sessions", "--json", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    proc = cli("sessions", cwd=tmp_path)
    assert proc.returncode == 0 and "No sessions" in proc.stdout
    assert list(tmp_path.iterdir()) == []


def test_show_counts_one_node_as_one_node(store_dir: Path) -> None:
    proc = cli("show", "one", "--store", str(store_dir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("session one: 1 node, head ")


def test_show_tree(store_dir: Path) -> None:
    proc = cli("show", "demo", "--store", str(store_dir))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("session demo: 4 nodes, head ")
    assert lines[1] == "user user [completed]"
    assert lines[2].startswith("code main [completed] ") and lines[2].endswith('{"answer": 42}')
    assert re.match(r"^\W+code helper \[completed\] [\d.]+ms -> \"x{10,}\.\.\.$", lines[3])
    assert re.match(r"^\W+llm scripted:m \[completed\] 1\.50s -> Hello \"there\" friend$", lines[4])
    # nesting: the llm line is indented deeper than the helper line
    assert lines[4].index("llm") > lines[3].index("code")


def test_show_json(store_dir: Path) -> None:
    proc = cli("show", "demo", "--format", "json", "--store", str(store_dir))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"session", "nodes"}
    assert data["session"]["id"] == "demo"
    nodes = data["nodes"]
    assert [n["seq"] for n in nodes] == [1, 2, 3, 4]
    assert [n["kind"] for n in nodes] == ["user", "code", "code", "llm"]
    assert nodes[2]["caller_id"] == nodes[1]["id"] and nodes[3]["caller_id"] == nodes[2]["id"]
    assert nodes[1]["metadata"]["doc"] == "Entry."


def test_show_mermaid(store_dir: Path) -> None:
    proc = cli("show", "demo", "--format", "mermaid", "--store", str(store_dir))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "graph TD"
    node_lines = [ln for ln in lines if re.match(r"^  n\d+\[\".*\"\]:::\w+$", ln)]
    assert len(node_lines) == 4
    assert all(ln.count('"') == 2 for ln in node_lines)  # quotes inside labels are escaped
    caller_edges = {ln.strip() for ln in lines if " --> " in ln}
    pred_edges = {ln.strip() for ln in lines if " -.-> " in ln}
    assert caller_edges == {"n2 --> n3", "n3 --> n4"}
    assert pred_edges == {"n1 -.-> n2", "n2 -.-> n3", "n3 -.-> n4"}


def test_show_unknown_session_is_a_usage_error(store_dir: Path, tmp_path: Path) -> None:
    # exit 2 like an unknown run id in resume/cancel (openprogram.cli.exits)
    proc = cli("show", "nope", "--store", str(store_dir))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "'nope'" in _assert_one_line_error(proc)
    proc = cli("show", "nope", "--store", str(tmp_path / "nothing"))
    assert proc.returncode == 2
    assert "no store" in _assert_one_line_error(proc)


def test_usage_errors_are_exit_2(store_dir: Path) -> None:
    for args in (("show",), ("bogus",), ("show", "demo", "--format", "svg"), ()):
        proc = cli(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_store_path_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    for args in (("sessions",), ("show", "demo")):
        proc = cli(*args, "--store", str(target))
        assert proc.returncode == 2
        assert "is a file" in _assert_one_line_error(proc)
    assert target.read_text() == "x"


def test_corrupted_store(tmp_path: Path) -> None:
    db = tmp_path / "openprogram.db"
    db.write_bytes(b"garbage" * 1000)
    for args in (("sessions", "--json"), ("show", "demo")):
        proc = cli(*args, "--store", str(tmp_path))
        assert proc.returncode == 2
        said = _assert_one_line_error(proc)
        assert "corrupted" in said
        if "--json" in args:  # the one JSON object, also for an error
            assert json.loads(proc.stdout)["status"] == "error", proc.stdout
        else:
            assert proc.stdout == ""
    assert db.read_bytes() == b"garbage" * 1000


def test_lint_and_lsp_are_delegated() -> None:
    proc = cli("lint", "--help")
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 0 or "not yet available" in proc.stderr


def test_main_returns_codes_in_process(store_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from openprogram.cli.main import main

    assert main(["sessions", "--json", "--store", str(store_dir)]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), list)
    assert main(["show", "missing", "--store", str(store_dir)]) == 2
    assert main(["--nope"]) == 2
