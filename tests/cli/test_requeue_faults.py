"""A hand-over to the workers (``resume RUN_ID --queue Q``) that the store refuses
half-way leaves the run as it was: still paused for its person (not interrupted, which
``resume --all-interrupted`` would resume), and its uncertain step still uncertain (the
"re-run approved" records roll back with the refused hand-over)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cli_programs import calls, cli, cli_json, ctrl_c_in_step_slow, write_program

_SQLITE_TRIGGER = (
    "CREATE TRIGGER refuse_queued BEFORE UPDATE OF status ON runs "
    "WHEN NEW.status = 'queued' BEGIN SELECT RAISE(ABORT, 'injected: no queue today'); END"
)
_PG_TRIGGER = """
CREATE FUNCTION refuse_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'injected: no queue today';
END $$;
CREATE TRIGGER refuse_queued BEFORE UPDATE OF status ON runs
    FOR EACH ROW WHEN (NEW.status = 'queued') EXECUTE FUNCTION refuse_queued();
"""


def _refuse_queueing(folder: Path, st: str, refuse: bool) -> None:
    """Make the store itself refuse (or accept again) a run's move to ``queued``."""
    if st.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(st, autocommit=True) as conn:
            if refuse:
                conn.execute(_PG_TRIGGER)
            else:
                conn.execute("DROP TRIGGER refuse_queued ON runs")
        return
    with sqlite3.connect(Path(st) / "openprogram.db") as conn:
        conn.execute(_SQLITE_TRIGGER if refuse else "DROP TRIGGER refuse_queued")
    conn.close()


def test_a_refused_hand_over_leaves_the_run_paused_and_its_step_uncertain(
    tmp_path: Path, st: str
) -> None:
    write_program(tmp_path)
    code, _, stderr = ctrl_c_in_step_slow(tmp_path, store=st)
    assert code == 130, stderr
    (tmp_path / "block_slow").unlink()
    _, [run] = cli_json("runs", "--store", st, cwd=tmp_path)
    rid = run["run_id"]
    before = (run["status"], run["pause_reason"], run["paused_step"])
    assert before == ("paused", "requested", "slow")

    _refuse_queueing(tmp_path, st, refuse=True)
    proc = cli("resume", rid, "--queue", "q", "--rerun-uncertain", "--store", st, cwd=tmp_path)
    assert proc.returncode != 0 and "injected: no queue today" in proc.stderr, proc
    _, [run] = cli_json("runs", "--store", st, cwd=tmp_path)
    assert (run["status"], run["pause_reason"], run["paused_step"]) == before
    assert run["queue"] is None
    code, none = cli_json("resume", "--all-interrupted", "--store", st, cwd=tmp_path)
    assert code == 0 and none == {"runs": []}  # nothing interrupted to take it
    _refuse_queueing(tmp_path, st, refuse=False)

    # handed over again without --rerun-uncertain: the worker finds step 'slow' still
    # uncertain (its re-run approval rolled back) and pauses the run instead of running it
    code, out = cli_json("resume", rid, "--queue", "q", "--store", st, cwd=tmp_path)
    assert code == 0 and out["status"] == "queued", out
    proc = cli(
        *("worker", "--queue", "q", "--exit-when-idle", "--poll", "0.05", "--store", st),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    _, [run] = cli_json("runs", "--store", st, cwd=tmp_path)
    assert (run["status"], run["pause_reason"], run["paused_step"]) == (
        "paused",
        "uncertain",
        "slow",
    )
    assert calls(tmp_path) == ["a 1", "slow 2"]  # step slow did not run again
