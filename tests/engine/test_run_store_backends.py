"""The run store answers the same on both backends: its compare-and-set writes match a run
by its state and lease token, a missing token (a queued run's) included, and refuse a run
that changed meanwhile; steps and approvals read back as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.contract.runs import PauseReason, Policy, RunStatus
from openprogram.store.lease import Owner
from openprogram.store.runs import RunStore, open_run_store
from pgcluster import BACKENDS, store_for

A = Owner("token-a", 101, "host-a", "boot/ns/101/1")
B = Owner("token-b", 202, "host-b", "boot/ns/202/1")


@pytest.fixture(params=BACKENDS)
def runs(request: pytest.FixtureRequest, tmp_path: Path) -> RunStore:
    db = open_run_store(store_for(request, tmp_path))
    request.addfinalizer(db.close)
    return db


def _insert(db: RunStore, run_id: str, owner: Owner | None) -> None:
    db.insert_run(
        run_id=run_id, entry="p.py:main", program_path=None, function_qualname="main",
        args={"n": 1}, policy=Policy.USE_LATEST, model=None, source_snapshot=None,
        session_id=None, owner=owner, lease_s=60.0, queue=None if owner else "jobs",
    )  # fmt: skip


def test_claims_and_ends_compare_the_state_and_token_read_before(runs: RunStore) -> None:
    _insert(runs, "queued", None)
    _insert(runs, "running", A)
    assert [r.id for r in runs.list_runs(RunStatus.QUEUED)] == ["queued"]
    assert runs.count_unfinished("jobs") == 1

    # a queued run has no token: only a claim that read "no token" takes it
    claim = {"expected_status": RunStatus.QUEUED, "owner": B, "lease_s": 60.0}
    assert not runs.claim_run("queued", expected_token="token-a", **claim)
    assert runs.claim_run("queued", expected_token=None, **claim)
    assert not runs.claim_run("queued", expected_token=None, **claim)
    run = runs.get_run("queued")
    assert run is not None
    assert (run.status, run.owner_token, run.owner_pid) == ("running", "token-b", 202)

    assert not runs.renew_lease("queued", "token-a", 60.0)
    assert runs.renew_lease("queued", "token-b", 60.0)
    assert runs.release_run("queued", "token-b", requeue=True)
    assert runs.control_state("queued") == ("queued", False, False, "token-b")

    # a pause or cancel request reaches only a running run under the token read
    assert not runs.request_pause("queued", token="token-b")  # not running
    assert not runs.request_pause("running", token="token-b")
    assert not runs.request_cancel("running", token="token-b")
    assert runs.control_state("running") == ("running", False, False, "token-a")
    assert runs.request_pause("running", token="token-a")
    assert runs.request_cancel("running", token="token-a")
    assert runs.control_state("running") == ("running", True, True, "token-a")

    # a pause by a stale token is refused; by the holder it is stored
    pause = {"step": "fetch", "occurrence": 2}
    assert not runs.set_paused("running", PauseReason.UNCERTAIN, "m", token="token-b", **pause)
    assert runs.set_paused("running", PauseReason.UNCERTAIN, "m", token="token-a", **pause)
    run = runs.get_run("running")
    assert run is not None
    assert (run.status, run.pause_reason, run.paused_step, run.paused_occurrence) == (
        "paused", "uncertain", "fetch", 2,
    )  # fmt: skip

    # an end by an execution that lost the run keeps what is stored
    assert runs.claim_run("running", expected_status="paused", expected_token="token-a",
                          owner=B, lease_s=60.0)  # fmt: skip
    assert runs.finish_run("running", RunStatus.COMPLETED, result=[1], token="token-a") == (
        "running"
    )
    assert runs.finish_run("running", RunStatus.COMPLETED, result=[1], token="token-b") == (
        "completed"
    )
    run = runs.get_run("running")
    assert run is not None and run.result == [1]
    assert runs.finish_run("missing", RunStatus.FAILED, error="x") == "failed"

    assert not runs.cancel_run("queued", expected_status="queued", expected_token=None, error="c")
    assert runs.cancel_run("queued", expected_status="queued", expected_token="token-b", error="c")
    assert runs.control_state("queued")[0] == "cancelled"
    assert runs.control_state("missing") == ("cancelled", False, False, None)

    # a paused run cancelled is paused nowhere: no step, no reason kept (as ``finish_run``
    # records a cancel), on both backends alike
    _insert(runs, "paused", A)
    assert runs.set_paused("paused", PauseReason.AWAITING_APPROVAL, "m", token="token-a", **pause)
    assert runs.cancel_run("paused", expected_status="paused", expected_token="token-a", error="c")
    run = runs.get_run("paused")
    assert run is not None
    assert (run.status, run.pause_reason, run.paused_step, run.paused_occurrence) == (
        "cancelled", None, None, None,
    )  # fmt: skip


def test_steps_and_approvals_read_back_as_written(runs: RunStore) -> None:
    _insert(runs, "r", A)
    step = {"kind": "step", "occurrence": 0}
    runs.dispatch_step("r", step_key="a#0", scope="", position=0, name="a", input_hash="h0", **step)
    runs.dispatch_step("r", step_key="b#0", scope="", position=1, name="b", input_hash="h1", **step)
    runs.dispatch_step(
        "r", step_key="b#0/c#0", scope="b#0", position=0, name="c", input_hash="h2", **step
    )
    runs.complete_step("r", "a#0", '{"v": 1}', token=A.token)
    runs.fail_step("r", "b#0/c#0", "boom", token=A.token)
    # an execution that does not hold the run (its lease taken over) changes no outcome
    runs.fail_step("r", "a#0", "late failure", token="token-b")
    runs.complete_step("r", "b#0/c#0", '"late"', token="token-b")
    assert [(s.step_key, s.status, s.result) for s in runs.top_level_steps("r")] == [
        ("a#0", "completed", '{"v": 1}'),
        ("b#0", "dispatched", None),
    ]
    assert sorted((s.step_key, s.status) for s in runs.replay_steps("r")) == [
        ("a#0", "completed"), ("b#0", "dispatched"), ("b#0/c#0", "failed"),
    ]  # fmt: skip
    assert (runs.count_steps("r"), runs.count_steps("r", "failed")) == (3, 1)

    runs.request_approval("r", "t#0", "t", 0, "pay", '{"amount": 5}')
    runs.request_approval("r", "t#0", "t", 0, "pay", '{"amount": 9}')  # requested: kept
    assert runs.pending_approval("r") == ("t#0", "pay", '{"amount": 5}')
    assert runs.latest_approval("r", "h0") is None  # a step, not an approval
    assert not runs.consume_approval("r", "t#0")  # not approved yet
    assert runs.decide_approval("r", "t#0", "approved")
    assert not runs.decide_approval("r", "t#0", "denied")
    assert (runs.latest_approval("r", "t"), runs.pending_approval("r")) == (
        ("t#0", "approved", 0),
        None,
    )
    # one approval, one execution: the first use marks it executed, a second finds none
    assert runs.consume_approval("r", "t#0")
    assert not runs.consume_approval("r", "t#0")
    runs.request_approval("r", "t#1", "t", 1, "pay", '{"amount": 5}')  # the call again
    assert runs.latest_approval("r", "t") == ("t#1", "requested", 1)
    assert runs.pending_approval("r") == ("t#1", "pay", '{"amount": 5}')
    # notes: kept (replaced), read, taken once; never listed as steps
    runs.keep_approval_note("r", "n", "approval_loops", "[1]")
    runs.keep_approval_note("r", "n", "approval_loops", "[2]")
    assert runs.approval_note("r", "n", "approval_loops") == "[2]"
    assert runs.take_approval_note("r", "n", "approval_loops") == "[2]"
    assert runs.take_approval_note("r", "n", "approval_loops") is None
    assert "n" not in [s.step_key for s in runs.load_steps("r")]
    assert runs.count_steps("r") == 3


@pytest.fixture(params=BACKENDS)
def linguistic(request: pytest.FixtureRequest, tmp_path: Path) -> RunStore:
    """A run store; on PostgreSQL one whose database orders text as ICU's ``en-US`` does
    (``ab_1 < AB_1 < ab-1 < ab%1 < abX1``: no range of it is a prefix)."""
    db = open_run_store(store_for(request, tmp_path, icu_locale="en-US"))
    request.addfinalizer(db.close)
    return db


def test_runs_by_id_prefix_takes_the_prefix_as_written(linguistic: RunStore) -> None:
    runs = linguistic
    top = chr(0x10FFFF)  # the last code point: nothing follows a prefix made of it
    ids = [
        "ab_1", "abX1", "ab%1", "AB_1", "ab-1", "ac", f"ab{top}", f"ab{top}z", "ab\ud7ff1", "ab\ue000",
        top, f"{top}{top}", f"{top}{top}a",
    ]  # fmt: skip
    for run_id in ids:  # inserted in this order: the later, the newer
        _insert(runs, run_id, A)

    def found(prefix: str, limit: int = 10) -> tuple[int, list[str]]:
        count, newest = runs.runs_by_id_prefix(prefix, limit)
        return count, [r.id for r in newest]

    # ``_`` and ``%`` are no wildcards and case counts
    assert found("ab_") == (1, ["ab_1"])
    assert found("ab%") == (1, ["ab%1"])
    assert found("ab-") == (1, ["ab-1"])
    assert found("AB") == (1, ["AB_1"])
    assert found("ad") == (0, [])
    # every id with the prefix, the newest first, however many are read
    with_ab = ["ab\ue000", "ab\ud7ff1", f"ab{top}z", f"ab{top}", "ab-1", "ab%1", "abX1", "ab_1"]
    assert found("ab") == (8, with_ab)
    assert found("ab", 2) == (8, with_ab[:2])
    # the first string after a prefix skips the surrogates (no character of an id), and
    # a prefix ending in U+10FFFF, or made of it, still finds its ids
    assert found("ab\ud7ff") == (1, ["ab\ud7ff1"])
    assert found(f"ab{top}") == (2, [f"ab{top}z", f"ab{top}"])
    assert found(top) == (3, [f"{top}{top}a", f"{top}{top}", top])
    assert found(f"{top}{top}", 1) == (2, [f"{top}{top}a"])


@pytest.mark.parametrize("told", [True, False])
def test_a_recorded_step_is_dispatched_again_whether_or_not_the_caller_said_so(
    runs: RunStore, told: bool
) -> None:
    """A failed step run again is recorded anew. ``StepCall.again`` (the run knows it
    recorded the step) lets PostgreSQL go straight to its statement for that; without it
    (the key recorded at another position) the plain insert meets the record and the
    statement that records it anew follows: the same outcome either way."""
    from openprogram.store.runs import StepCall, StepNode

    runs.store.create_session("r")
    _insert(runs, "r", A)
    first = StepCall("a#0", "", 0, "step", "a", 0, "h0")
    again = StepCall("a#0", "", 0, "step", "a", 0, "h1", again=told)
    with runs.pinned():  # as a run's steps are written (PostgreSQL: through libpq)
        assert runs.write_step("r", A.token, None, first, StepNode("r", "a", "{}", None))[0]
        runs.fail_step("r", "a#0", "boom", token=A.token)
        dispatched, node = runs.write_step(
            "r", A.token, None, again, StepNode("r", "a", "{}", None)
        )
    assert dispatched and node is not None
    assert [(s.step_key, s.status, s.result) for s in runs.replay_steps("r")] == [
        ("a#0", "dispatched", None),
    ]
    assert [n.status for n in runs.store.list_nodes("r")] == ["running", "running"]


def test_a_head_is_moved_only_to_a_node_of_its_own_session(runs: RunStore) -> None:
    from openprogram.errors import StoreError
    from openprogram.store import SessionNodeWriter

    store = runs.store
    mine = SessionNodeWriter(store, store.create_session("mine"))
    other = SessionNodeWriter(store, store.create_session("other"))
    first, _ = mine.append("user", "q1"), mine.append("user", "q2")
    foreign = other.append("user", "elsewhere")
    for bad in (foreign.id, "missing"):
        with pytest.raises(StoreError, match=f"node '{bad}' is not in session 'mine'"):
            mine.move_head(bad)
    session = store.get_session("mine")
    assert session is not None and session.head_id != first.id  # refused: not moved
    mine.move_head(first.id)
    assert mine.append("user", "q2b").predecessor_id == first.id  # a branch from q1
    session = store.get_session("mine")
    assert session is not None and session.head_id != foreign.id


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return store_for(request, tmp_path)


def test_the_runs_of_a_program_are_read_by_its_path_however_it_is_spelled(
    location: str, tmp_path: Path
) -> None:
    """``queries.list_runs(db, program_path)`` (the editor's runs of a file) read every
    run and compared paths in Python: a run of another Program whose ``args`` column
    cannot be decoded made it fail. Now only the runs of the file are read (SQL, one
    query per spelling of its path), and they are the same runs: recorded through a
    symlink, with ``..``, or named only by the entry's path; newest first."""
    import sqlite3

    from openprogram.durable import queries
    from openprogram.store import store_db_path

    folder = tmp_path / "ws"
    folder.mkdir()
    real = folder / "prog.py"
    real.write_text("", encoding="utf-8")
    link = tmp_path / "link"
    link.symlink_to(folder)
    spelled = {
        "direct": (str(real), f"{real}:main"),
        "via-link": (str(link / "prog.py"), f"{link / 'prog.py'}:main"),
        "dotted": (str(folder / "sub" / ".." / "prog.py"), "prog.py:main"),
        "entry-only": (None, f"{link / 'prog.py'}:main"),
        "empty-path": ("", f"{real}:main"),
        "other": (str(folder / "other.py"), f"{folder / 'other.py'}:main"),
        "broken": (str(folder / "other.py"), f"{folder / 'other.py'}:main"),
        "other-entry": (None, f"{folder / 'other.py'}:main"),
    }
    with open_run_store(location) as db:
        for run_id, (path, entry) in spelled.items():
            db.insert_run(
                run_id=run_id, entry=entry, program_path=path, function_qualname="main",
                args={}, policy=Policy.USE_LATEST, model=None, source_snapshot=None,
                session_id=None, owner=A, lease_s=60.0,
            )  # fmt: skip
    damage = ("UPDATE runs SET args = '{not json' WHERE id = 'broken'",)
    if location.startswith("postgresql"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(*damage)
    else:
        with sqlite3.connect(store_db_path(location)) as conn:
            conn.execute(*damage)
    db_path = location if location.startswith("postgresql") else str(store_db_path(location))
    mine = {"direct", "via-link", "dotted", "entry-only", "empty-path"}
    for spelling in (str(real), str(link / "prog.py"), f"{folder}/./prog.py"):
        found = queries.list_runs(db_path, spelling, strict=True)
        assert {r.id for r in found} == mine, spelling
        assert [r.created_at for r in found] == sorted((r.created_at for r in found), reverse=True)
    assert [r.id for r in queries.list_runs(db_path, str(real), limit=2, strict=True)] == [
        r.id for r in queries.list_runs(db_path, str(real), strict=True)[:2]
    ]
    assert queries.list_runs(db_path, str(folder / "none.py"), strict=True) == []


def test_the_newest_runs_of_some_programs_are_theirs_and_count_theirs_left_out(
    runs: RunStore,
) -> None:
    """``newest_runs(limit, belongs)`` (a folder's Runs view on a store several folders
    share): the unfinished runs and the ``limit`` newest finished ones of the Programs
    ``belongs`` accepts, however the run names its file (``program_path``, or only the
    entry's path when that is NULL or ''), and how many of *theirs* were left out; not the
    store's newest, nor the store's count."""
    from openprogram.contract.runs import program_file

    spelled = [  # (program_path, entry): four of mine.py, three of other.py
        ("/ws/a/mine.py", "/ws/a/mine.py:main"),
        (None, "/ws/a/mine.py:main"),
        ("", "/ws/a/mine.py:other"),
        ("/ws/a/mine.py", "/ws/a/mine.py:other"),
        ("/ws/b/other.py", "/ws/b/other.py:main"),
        (None, "/ws/b/other.py:main"),
        ("", "/ws/b/other.py:main"),
    ]
    for i in range(14):
        path, entry = spelled[i % len(spelled)]
        runs.insert_run(
            run_id=f"r{i:02d}", entry=entry, program_path=path, function_qualname="main",
            args={}, policy=Policy.USE_LATEST, model=None, source_snapshot=None,
            session_id=None, owner=A, lease_s=60.0,
        )  # fmt: skip
        if i not in (3, 4):  # r03 (mine) and r04 (other's) stay running
            runs.finish_run(f"r{i:02d}", RunStatus.COMPLETED, result=i, token=A.token)

    def mine(path: str) -> bool:
        return path == "/ws/a/mine.py"

    every = runs.list_runs()
    newest = sorted(every, key=lambda r: (-r.created_at, r.id))
    of_mine = [r for r in newest if mine(program_file(r.program_path, r.entry))]
    finished = [r.id for r in of_mine if r.status == RunStatus.COMPLETED]
    assert len(finished) == 7
    found, left_out = runs.newest_runs(3, mine)
    assert {r.id for r in found} == {"r03", *finished[:3]} and left_out == 4
    assert [r.id for r in found] == [r.id for r in of_mine if r.id in {r.id for r in found}]
    everything, store_left_out = runs.newest_runs(3)
    assert store_left_out == 12 - 3 and len(everything) == 2 + 3
    assert runs.newest_runs(3, lambda path: True) == (everything, store_left_out)
    assert runs.newest_runs(3, lambda path: False) == ([], 0)
    assert runs.newest_runs(20, mine) == (of_mine, 0)
