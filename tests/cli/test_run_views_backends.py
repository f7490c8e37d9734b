"""The editor's run views are the same on both store backends: the SQLite store builds the
Runs view's steps and the run graph's nodes in SQL, every other backend (PostgreSQL) in
Python (``openprogram.store.run_views``). The ticket-triage example is run through the CLI
on each, and ``openprogram show --format html`` must draw the same graph."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from openprogram.durable import queries
from openprogram.store.run_views import StepContext
from openprogram.store.runs import RunStore, read_run_store

ROOT = Path(__file__).resolve().parents[2]
OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")
TICKET = '{"ticket": "I was charged twice for my March invoice."}'


def _triage(tmp_path: Path, store: str) -> str:
    (tmp_path / "ticket_triage.py").write_text((ROOT / "examples" / "ticket_triage.py").read_text())
    cassette = ROOT / "examples" / "cassettes" / "ticket_triage.jsonl"
    env = {**os.environ, "OPENPROGRAM_MODEL": f"replay:{cassette}", "OPENPROGRAM_STORE": store}
    run = subprocess.run(
        [OPENPROGRAM, "run", "ticket_triage.py:triage", "--args", TICKET, "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True, env=env,
    )  # fmt: skip
    return str(json.loads(run.stdout)["run_id"])


def _graph(tmp_path: Path, store: str, run_id: str) -> dict[str, Any]:
    proc = subprocess.run(
        [OPENPROGRAM, "show", run_id, "--format", "html", "--store", store],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    data = re.search(
        r'<script id="openprogram-graph-data" type="application/json">(.*?)</script>',
        proc.stdout,
        re.S,
    )
    assert data is not None, proc.stdout[:500]
    return dict(json.loads(data.group(1)))


def _shape(graph: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What must agree between two runs of the same Program (ids and times differ)."""
    return [
        (n["kind"], n["name"], n["status"], n["model"], json.dumps(n["usage"]), n.get("step"))
        for n in graph["nodes"]
    ]


def test_the_run_graph_is_the_same_on_sqlite_and_postgresql(tmp_path: Path, pg_dsn: str) -> None:
    lite_dir, pg_dir = tmp_path / "lite", tmp_path / "pg"
    lite_dir.mkdir()
    pg_dir.mkdir()
    lite_store = str(lite_dir / ".openprogram")
    lite = _graph(lite_dir, lite_store, _triage(lite_dir, lite_store))
    pg = _graph(pg_dir, pg_dsn, _triage(pg_dir, pg_dsn))
    assert _shape(lite) == _shape(pg) and len(lite["nodes"]) == 4
    assert lite["totals"] == pg["totals"]
    assert {n["model"] for n in pg["nodes"] if n["kind"] == "llm"} == {"replay:stand-in"}


def _rounded(value: Any) -> Any:
    """JSON with floats at 9 significant digits (SQLite prints 15 of them, Python 17)."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _short(text: str | None) -> str:
    return (text or "")[:20]


def _pipeline(tmp_path: Path, store: str) -> str:
    (tmp_path / "report_pipeline.py").write_text(
        (ROOT / "examples" / "report_pipeline.py").read_text()
    )
    run = subprocess.run(
        [OPENPROGRAM, "run", "report_pipeline.py:build_report", "--args", '{"topic": "tides"}',
         "--json", "--store", store],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return str(json.loads(run.stdout)["run_id"])


def test_sql_and_python_builders_agree_row_for_row(tmp_path: Path) -> None:
    """The same stored rows through SQLite's SQL and through ``run_views``: equal objects,
    also for a node whose metadata column is not JSON."""
    store = str(tmp_path / ".openprogram")
    run_id = _triage(tmp_path, store)
    pipeline = _pipeline(tmp_path, store)
    run = queries.get_run(str(tmp_path / ".openprogram" / "openprogram.db"), run_id)
    assert run is not None and run.session_id
    with sqlite3.connect(tmp_path / ".openprogram" / "openprogram.db") as conn:
        first = conn.execute(
            "SELECT id FROM nodes WHERE session_id = ? AND kind = 'llm' ORDER BY seq LIMIT 1",
            (run.session_id,),
        ).fetchone()[0]
    for corrupt in (False, True):
        if corrupt:
            with sqlite3.connect(tmp_path / ".openprogram" / "openprogram.db") as conn:
                conn.execute("UPDATE nodes SET metadata = '{\"usage\": [' WHERE id = ?", (first,))
        runs = read_run_store(store)
        assert runs is not None
        with runs:
            for context in (
                StepContext(False, None, False),
                StepContext(True, None, False),
                StepContext(False, ("outline", 0), False),
                StepContext(False, None, False, cancelled=True),
            ):
                views = [
                    [
                        _rounded(json.loads(text))
                        for text in build(runs, pipeline, context, now=9e9, shorten=_short)
                    ]
                    for build in (type(runs).step_view_objects, RunStore.step_view_objects)
                ]
                assert views[0] == views[1] and len(views[0]) == 14
            sql_nodes = runs.graph_node_objects(run.session_id, limit=12)
            py_nodes = RunStore.graph_node_objects(runs, run.session_id, limit=12)
        assert len(sql_nodes) == len(py_nodes) == 4
        for a, b in zip(sql_nodes, py_nodes, strict=True):
            assert a[:-1] == b[:-1] and _rounded(json.loads(a.json)) == _rounded(json.loads(b.json))
        broken = next(json.loads(n.json) for n in py_nodes if n.id == first)
        assert (broken["usage"] is None) is corrupt
