"""A step's statement on PostgreSQL runs through libpq on the run's held connection
(``openprogram.store.pg_hot``): what a Program's steps record through it reads back as
written (text, numbers, timestamps), a NUL is refused as psycopg refuses it, a connection
that lost its prepared statement prepares it again, and a connection that is not UTF-8
takes psycopg's path."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from openprogram.durable import start_run
from openprogram.errors import StoreError
from openprogram.store import SessionStore
from openprogram.store.pg_hot import NUL_IN_TEXT, HotStatement
from openprogram.store.postgres import PostgresBackend
from openprogram.store.runs import read_run_store

PROGRAM = """
from openprogram import step


def echo(text: str, x: float) -> dict:
    return {"text": text + " ·", "x": x, "half": x / 2}


def main(label: str, x: float) -> dict:
    first = step(LABEL, echo, label, x)
    return step(AGAIN, echo, first["text"], first["half"])


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def _run(tmp_path: Path, dsn: str, label: str, x: float) -> tuple[object, list[object]]:
    prog = tmp_path / "prog.py"
    source = PROGRAM.replace("AGAIN", repr("again " + label)).replace("LABEL", repr(label))
    prog.write_text(source, encoding="utf-8")
    out = start_run(f"{prog}:main", {"label": label, "x": x}, store=dsn)
    runs = read_run_store(dsn)
    assert runs is not None
    with runs:
        return out, list(runs.load_steps(out.run_id))


@pytest.mark.parametrize("label", ["café — naïve 🚀", "quote ' and $1 and %(x)s", "\\\\N"])
def test_what_steps_record_reads_back_as_written(pg_dsn: str, tmp_path: Path, label: str) -> None:
    out, steps = _run(tmp_path, pg_dsn, label, 0.1)
    assert out.status == "completed", out  # type: ignore[attr-defined]
    assert out.result == {"text": f"{label} · ·", "x": 0.05, "half": 0.025}  # type: ignore[attr-defined]
    assert [(s.name, s.status) for s in steps] == [  # type: ignore[attr-defined]
        (label, "completed"), ("again " + label, "completed"),
    ]  # fmt: skip
    first = json.loads(steps[0].result)  # type: ignore[attr-defined]
    assert first == {"text": f"{label} ·", "x": 0.1, "half": 0.05}
    for s in steps:
        assert s.started_at <= s.finished_at  # type: ignore[attr-defined]
    with SessionStore(pg_dsn) as store:  # each step's node exit: output, status, duration
        nodes = {n.name: n for n in store.list_nodes(out.run_id)}  # type: ignore[attr-defined]
    for s in steps:
        node = nodes[s.name]  # type: ignore[attr-defined]
        assert (node.status, node.output) == ("completed", json.loads(s.result))  # type: ignore[attr-defined]
        assert isinstance(node.metadata["duration_s"], float) and node.metadata["duration_s"] >= 0


def test_a_nul_in_a_step_name_is_refused_not_cut(pg_dsn: str, tmp_path: Path) -> None:
    out, steps = _run(tmp_path, pg_dsn, "before\x00after", 1.0)
    assert out.status == "failed", out  # type: ignore[attr-defined]
    assert NUL_IN_TEXT in out.error  # type: ignore[attr-defined]
    assert all("before" != s.name for s in steps)  # type: ignore[attr-defined]


def test_a_connection_that_is_not_utf8_takes_psycopgs_path(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGCLIENTENCODING", "LATIN1")
    out, steps = _run(tmp_path, pg_dsn, "café", 2.5)
    assert out.status == "completed", out  # type: ignore[attr-defined]
    assert out.result == {"text": "café · ·", "x": 1.25, "half": 0.625}  # type: ignore[attr-defined]
    assert [s.name for s in steps] == ["café", "again café"]  # type: ignore[attr-defined]


VALUES = [0.1, 1e-300, 5e-324, 1.7976931348623157e308, -0.0, 1 / 3, math.inf, -math.inf]


def test_parameters_round_trip_and_a_lost_prepared_statement_is_prepared_again(
    pg_dsn: str,
) -> None:
    echo = HotStatement(
        "test_echo",
        "SELECT %(x)s::float8::text, %(n)s::bigint, %(b)s::boolean::text, %(s)s, %(s)s || %(t)s",
        (float, int, str, str, str),
    )
    backend = PostgresBackend(pg_dsn)
    try:
        with backend.pinned():
            for x in VALUES:
                row = backend.execute_hot(echo, (x, -(2**62), True, "é", None))
                assert row == [(x, -(2**62), "true", "é", None)]
                assert math.copysign(1, row[0][0]) == math.copysign(1, x)
            (nan,) = backend.execute_hot(echo, (math.nan, 0, False, "", ""))
            assert math.isnan(nan[0]) and nan[1:] == (0, "false", "", "")
            backend.execute("DEALLOCATE ALL")  # as a pool's reset (DISCARD ALL) would
            assert backend.execute_hot(echo, (1.5, 1, True, "a", "b")) == [
                (1.5, 1, "true", "a", "ab")
            ]
            with pytest.raises(StoreError, match=r"NUL \(0x00\)"):
                backend.execute_hot(echo, (1.0, 1, True, "a\x00", ""))
            with pytest.raises(StoreError, match=r"NUL \(0x00\)"):  # psycopg's path: the same
                backend.execute("SELECT %s", ("a\x00",))
            with pytest.raises(StoreError, match="invalid input syntax for type bigint"):
                backend.execute_hot(echo, (1.0, "x", True, "", ""))
            assert backend.execute_hot(echo, (2.0, 2, False, "", ""))
    finally:
        backend.close()


def test_a_statement_is_numbered_once_per_name() -> None:
    stmt = HotStatement("n", "SELECT %(a)s, %(b)s, %(a)s", (str, str, str))
    assert stmt.server_sql == b"SELECT $1, $2, $1" and stmt.keys == ("a", "b")
    assert stmt.values((True, 3)) == [b"t", b"3"]  # in its keys' order
    assert stmt.named((True, 3)) == {"a": True, "b": 3}  # for psycopg's path
    for short in [stmt.values, stmt.named]:
        with pytest.raises(ValueError):
            short((True,))
    with pytest.raises(ValueError, match=r"NUL \(0x00\)"):
        stmt.values(("a\x00", 1))
    with pytest.raises(TypeError, match="a bytes parameter"):
        stmt.values((b"x", None))
    with pytest.raises(ValueError, match="placeholders"):
        HotStatement("bad", "SELECT 'x' LIKE '%y'", ())


def test_constants_are_written_into_the_text() -> None:
    consts = {"k": "code", "q": "it's", "m": True, "f": False, "p": None}
    stmt = HotStatement("c", "SELECT %(a)s, %(k)s, %(q)s, %(m)s, %(f)s, %(p)s, %(a)s", (), consts)
    assert stmt.server_sql == b"SELECT $1, 'code', 'it''s', true, false, NULL, $1"
    assert stmt.keys == ("a",) and stmt.values((1,)) == [b"1"]
    assert stmt.sql == "SELECT %(a)s, 'code', 'it''s', true, false, NULL, %(a)s"  # psycopg's
    with pytest.raises(ValueError, match="is not written"):
        HotStatement("bad", "SELECT %(a)s", (), {"a": "100%"})


def test_a_nodes_exit_writes_the_same_metadata_text_either_way(pg_dsn: str) -> None:
    """``FINISH_SQL`` writes a plain node's metadata (``{}``) without parsing it: the text
    is the one the JSON merge writes, which a node with metadata still takes."""
    from openprogram.store.postgres_runs import FINISH_SQL
    from openprogram.store.session_store import SessionNodeWriter

    backend = PostgresBackend(pg_dsn)
    try:
        store = SessionStore(backend=backend)
        writer = SessionNodeWriter(store, store.create_session())
        for duration in (0.0, 1e-7, 0.25, 123.456789, 1e300, -0.0, 3):
            for meta in ({}, {"forks": ["a"], "duration_s": 9}):
                node = writer.append("code", "s", metadata=meta)
                backend.execute(  # in the step statement, whose ``run`` holds the lease
                    "WITH run AS (SELECT true AS held) " + FINISH_SQL,
                    {
                        "now": 1.0, "result": "1", "duration": duration, "done_node": node.id,
                        "run": "r",
                    },
                )  # fmt: skip
                (merged,) = backend.execute(
                    "SELECT (%s::jsonb || jsonb_build_object('duration_s', %s::float8))::text",
                    (json.dumps(meta), duration),
                )[0]
                (text,) = backend.execute("SELECT metadata FROM nodes WHERE id = %s", (node.id,))[0]
                assert text == merged
                written = json.loads(text)
                assert float(written.pop("duration_s")) == duration
                assert written == {k: v for k, v in meta.items() if k != "duration_s"}
    finally:
        backend.close()


FLAKY = """
from pathlib import Path

from openprogram import step

FLAG = Path(__file__).with_name("fail-once")


def count(i: int) -> int:
    if i == 1 and FLAG.exists():
        FLAG.unlink()
        raise RuntimeError("the first try fails")
    return i * 10


def main(n: int) -> list:
    return [step("count", count, i) for i in range(n)]


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def test_a_step_that_failed_runs_again_on_resume(
    pg_cluster: Any, pg_dsn: str, tmp_path: Path
) -> None:
    """The step's record exists from its first try, so its second dispatch is the
    statement that starts a recorded step again (``_STEP_AGAIN``), at once: the server was
    not sent a plain insert that fails (no error line about the run in its log)."""
    from openprogram.durable import resume_run

    prog = tmp_path / "flaky.py"
    prog.write_text(FLAKY, encoding="utf-8")
    (tmp_path / "fail-once").touch()
    first = start_run(f"{prog}:main", {"n": 3}, store=pg_dsn)
    assert first.status == "failed" and "the first try fails" in (first.error or ""), first
    out = resume_run(first.run_id, store=pg_dsn)
    assert out.status == "completed", out
    assert out.result == [0, 10, 20]
    runs = read_run_store(pg_dsn)
    assert runs is not None
    with runs:
        steps = list(runs.load_steps(out.run_id))
    assert [(s.occurrence, s.status, s.result) for s in steps] == [
        (0, "completed", "0"), (1, "completed", "10"), (2, "completed", "20"),
    ]  # fmt: skip
    with SessionStore(pg_dsn) as store:  # the failed try's node and the second one's
        nodes = [n for n in store.list_nodes(out.run_id) if n.name == "count"]
    assert [n.status for n in nodes] == ["completed", "error", "completed", "completed"]
    log = (pg_cluster.base / "log").read_text(errors="replace")
    assert out.run_id not in log, [line for line in log.splitlines() if out.run_id in line]
