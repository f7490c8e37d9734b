"""``openprogram show RUN --format html``: one self-contained page of the run graph."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def test_show_html_is_one_offline_file_with_the_run_graph(tmp_path: Path) -> None:
    (tmp_path / "report_pipeline.py").write_text(
        (ROOT / "examples" / "report_pipeline.py").read_text()
    )
    run = subprocess.run(
        [OPENPROGRAM, "run", "report_pipeline.py:build_report", "--args", '{"topic": "tides"}', "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    run_id = json.loads(run.stdout)["run_id"]
    out = tmp_path / "graph.html"
    proc = subprocess.run(
        [OPENPROGRAM, "show", run_id, "--format", "html", "--output", str(out)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    data = re.search(
        r'<script id="openprogram-graph-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert data is not None
    payload = json.loads(data.group(1))
    assert payload["run"]["status"] == "completed" and payload["totals"]["nodes"] == 14
    assert {n["step"] for n in payload["nodes"]} >= {"outline #0", "review #2", "publish #0"}
    # Self-contained: the drawing library is inlined, nothing is fetched.
    assert "cytoscape" in page and not re.search(r"<script[^>]+src=|<link[^>]+href=", page)
    assert len(re.findall(r"</script>", page)) == 2
    # stdout works too, and an unknown id is a one-line error.
    printed = subprocess.run(
        [OPENPROGRAM, "show", run_id, "--format", "html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert printed.stdout.strip() == page.strip()
    bad = subprocess.run(
        [OPENPROGRAM, "show", "nope", "--format", "html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode != 0 and "no session 'nope'" in bad.stderr


def _graph_of(page: str) -> dict[str, Any]:
    data = re.search(
        r'<script id="openprogram-graph-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert data is not None
    return dict(json.loads(data.group(1)))


def test_model_calls_in_the_graph_and_a_malformed_metadata_column(tmp_path: Path) -> None:
    """llm nodes carry ``provider:model`` and their token usage; a node whose stored metadata
    is not JSON is still drawn (its duration unknown), not the whole graph lost."""
    (tmp_path / "ticket_triage.py").write_text((ROOT / "examples" / "ticket_triage.py").read_text())
    cassette = ROOT / "examples" / "cassettes" / "ticket_triage.jsonl"
    env = {**os.environ, "OPENPROGRAM_MODEL": f"replay:{cassette}"}
    ticket = '{"ticket": "I was charged twice for my March invoice."}'
    run = subprocess.run(
        [OPENPROGRAM, "run", "ticket_triage.py:triage", "--args", ticket, "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True, env=env,
    )  # fmt: skip
    run_id = json.loads(run.stdout)["run_id"]

    def show() -> dict[str, Any]:
        proc = subprocess.run(
            [OPENPROGRAM, "show", run_id, "--format", "html"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return _graph_of(proc.stdout)

    graph = show()
    llm = [n for n in graph["nodes"] if n["kind"] == "llm"]
    assert len(llm) == graph["totals"]["llmCalls"] == 2
    assert {n["model"] for n in llm} == {"replay:stand-in"}
    assert all(n["usage"] == {"input_tokens": 50, "output_tokens": 12} for n in llm)
    assert graph["totals"]["input_tokens"] == 100 and graph["totals"]["output_tokens"] == 24
    assert all(n["durationMs"] is not None and n["durationMs"] >= 0 for n in graph["nodes"])

    broken = llm[0]["id"]
    with sqlite3.connect(tmp_path / ".openprogram" / "openprogram.db") as conn:
        conn.execute("UPDATE nodes SET metadata = ? WHERE id = ?", ('{"duration_s": 1,', broken))
    graph = show()
    by_id = {n["id"]: n for n in graph["nodes"]}
    assert len(by_id) == 4 and by_id[broken]["durationMs"] is None
    assert by_id[broken]["usage"] is None and by_id[broken]["model"] == "replay:stand-in"
    assert graph["totals"]["llmCalls"] == 2 and graph["totals"]["input_tokens"] == 50
