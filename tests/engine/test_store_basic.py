"""Session store: sessions, nodes, JSON fields, idempotent append, heads and branches."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.errors import StoreError
from openprogram.store import Node, SessionNodeWriter, SessionStore, store_db_path
from openprogram.store.migrations import MIGRATIONS, Migration, split_statements
from openprogram.store.sqlite import SqliteBackend


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    s = SessionStore(tmp_path / "store")
    yield s
    s.close()


def test_one_database_file_under_the_root_with_wal(tmp_path: Path) -> None:
    with SessionStore(tmp_path / "root") as s:
        s.create_session("a")
    db = tmp_path / "root" / "openprogram.db"
    assert db.is_file()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = conn.execute("SELECT version, name FROM schema_version ORDER BY version").fetchall()
    assert [v for v, _ in versions] == [m.version for m in MIGRATIONS]
    conn.close()


def test_default_root_is_env_then_dot_openprogram(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENPROGRAM_STORE", raising=False)
    assert store_db_path() == tmp_path / ".openprogram" / "openprogram.db"
    with SessionStore() as s:
        s.create_session("x")
    assert (tmp_path / ".openprogram" / "openprogram.db").is_file()
    monkeypatch.setenv("OPENPROGRAM_STORE", str(tmp_path / "env"))
    with SessionStore() as s:
        assert s.get_session("x") is None
        s.create_session("y")
    assert (tmp_path / "env" / "openprogram.db").is_file()


def test_create_session_named_is_idempotent_and_unnamed_gets_an_id(store: SessionStore) -> None:
    assert store.create_session("research", agent_id="main", metadata={"k": 1}) == "research"
    assert store.create_session("research", agent_id="other") == "research"
    session = store.get_session("research")
    assert session is not None
    assert (session.name, session.agent_id, session.metadata) == ("research", "main", {"k": 1})
    anon = store.create_session()
    assert anon != "research" and len(anon) == 32
    assert {s.id for s in store.list_sessions()} == {"research", anon}
    assert store.get_session("missing") is None


def test_append_fields_json_roundtrip_and_seq(store: SessionStore) -> None:
    sid = store.create_session("s")
    w = SessionNodeWriter(store, sid)
    payload = {"text": "héllo", "nested": [1, 2.5, None, True, {"a": "b"}]}
    a = w.append("user", "user", input=payload, status="completed", metadata={"doc": "d"})
    b = w.append("code", "f", caller_id=a.id, output=["x"])
    assert (a.seq, b.seq) == (1, 2)
    assert b.predecessor_id == a.id and b.caller_id == a.id
    got = store.get_node(a.id)
    assert got == a
    assert got is not None and got.input == payload and got.metadata == {"doc": "d"}
    assert [n.id for n in store.list_nodes(sid)] == [a.id, b.id]
    assert [n.id for n in w.load_graph()] == [a.id, b.id]
    assert store.children(a.id) == [store.get_node(b.id)]
    assert store.get_node("nope") is None
    assert store.list_nodes("nope") == []


def test_update_sets_output_status_and_merges_metadata(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    n = w.append("code", "f", metadata={"doc": "Doc.", "usage": {"in": 1}})
    u = w.update(n.id, output={"r": 1}, status="completed", metadata={"duration_s": 0.5})
    assert u.output == {"r": 1} and u.status == "completed"
    assert u.metadata == {"doc": "Doc.", "usage": {"in": 1}, "duration_s": 0.5}
    # top-level keys are replaced (dict.update), None is a value, odd keys work
    u2 = w.update(n.id, metadata={"usage": {"out": 2}, "x": None, 'we"ird.key': [1]})
    assert u2.output == {"r": 1} and u2.status == "completed"
    expected = {
        "doc": "Doc.",
        "usage": {"out": 2},
        "duration_s": 0.5,
        "x": None,
        'we"ird.key': [1],
    }
    assert u2.metadata == expected
    assert store.get_node(n.id) == u2
    # output=None clears it; omitted output keeps it
    assert w.update(n.id, output=None).output is None
    assert w.update(n.id, status="error").output is None


def test_update_from_another_store_instance_reads_back_the_row(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as s1, SessionStore(tmp_path) as s2:
        n = SessionNodeWriter(s1, s1.create_session("s")).append("code", "f", metadata={"a": 1})
        u = SessionNodeWriter(s2, "s").update(n.id, status="completed", metadata={"b": 2})
        assert u.metadata == {"a": 1, "b": 2} and u.status == "completed"
        assert u.input is None and u.seq == 1
        assert s1.get_node(n.id) == u


def test_update_with_non_finite_metadata_falls_back_and_keeps_values(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    n = w.append("code", "f")
    w.update(n.id, metadata={"score": float("nan")})
    u = w.update(n.id, status="completed", metadata={"more": 1})
    assert math.isnan(u.metadata["score"]) and u.metadata["more"] == 1
    stored = store.get_node(n.id)
    assert stored is not None and stored.status == "completed"


def test_update_unknown_node_is_a_store_error(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    with pytest.raises(StoreError, match="does not exist"):
        w.update("missing", status="completed")


def test_append_is_idempotent_on_node_id(store: SessionStore) -> None:
    sid = store.create_session("s")
    w = SessionNodeWriter(store, sid)
    first = w.append("llm", "m", node_id="fixed", input={"q": 1}, status="completed")
    again = w.append("llm", "m", node_id="fixed", input={"q": 2}, status="completed")
    assert again == first and again.input == {"q": 1}
    assert len(store.list_nodes(sid)) == 1
    other = SessionNodeWriter(store, store.create_session("t"))
    with pytest.raises(StoreError, match="already belongs"):
        other.append("llm", "m", node_id="fixed")


def test_head_follows_appends_and_move_head_selects_a_branch(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    assert w.head_id is None
    a = w.append("user", "u1")
    b = w.append("llm", "r1")
    assert w.head_id == b.id
    w.move_head(a.id)  # branch from a
    assert w.head_id == a.id
    session = store.get_session("s")
    assert session is not None and session.head_id == a.id
    c = w.append("user", "u2")
    assert c.predecessor_id == a.id and w.head_id == c.id
    # explicit predecessor, head kept where it was
    d = w.append("llm", "side", predecessor_id=b.id, move_head=False)
    assert d.predecessor_id == b.id and w.head_id == c.id
    e = w.append("user", "root", predecessor_id=None)
    assert e.predecessor_id is None and w.head_id == e.id
    assert [n.seq for n in w.load_graph()] == [1, 2, 3, 4, 5]
    with pytest.raises(StoreError, match="not in session"):
        w.move_head("missing")


def test_move_head_false_on_empty_session_keeps_no_head(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    n = w.append("code", "f", move_head=False)
    assert n.predecessor_id is None and w.head_id is None
    m = w.append("code", "g")
    assert m.predecessor_id is None and w.head_id == m.id


def test_two_connections_see_each_others_appends_and_heads(tmp_path: Path) -> None:
    """Cached heads/seq are dropped when another connection committed."""
    with SessionStore(tmp_path) as s1, SessionStore(tmp_path) as s2:
        s1.create_session("s")
        w1, w2 = SessionNodeWriter(s1, "s"), SessionNodeWriter(s2, "s")
        nodes = []
        for i in range(6):
            nodes.append((w1 if i % 2 == 0 else w2).append("code", f"n{i}"))
        assert [n.seq for n in nodes] == [1, 2, 3, 4, 5, 6]
        assert [n.predecessor_id for n in nodes[1:]] == [n.id for n in nodes[:-1]]
        w2.move_head(nodes[1].id)
        nxt = w1.append("user", "branch")
        assert nxt.predecessor_id == nodes[1].id and nxt.seq == 7


def test_reopen_after_close_keeps_everything(tmp_path: Path) -> None:
    s = SessionStore(tmp_path)
    w = SessionNodeWriter(s, s.create_session("s"))
    ids = [w.append("code", f"n{i}", input={"i": i}).id for i in range(5)]
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.list_sessions()
    with SessionStore(tmp_path) as s2:
        assert [n.id for n in s2.list_nodes("s")] == ids
        w2 = SessionNodeWriter(s2, "s")
        assert w2.head_id == ids[-1]
        n = w2.append("code", "after")
        assert n.seq == 6 and n.predecessor_id == ids[-1]
        session = s2.get_session("s")
        assert session is not None and session.node_count == 6


def test_writer_for_a_missing_session_is_a_store_error(store: SessionStore) -> None:
    with pytest.raises(StoreError, match=r"does not exist.*create_session"):
        SessionNodeWriter(store, "nope")


def test_invalid_values_are_store_errors(store: SessionStore) -> None:
    w = SessionNodeWriter(store, store.create_session("s"))
    with pytest.raises(StoreError, match="status"):
        w.append("code", "f", status="done")
    with pytest.raises(StoreError, match="JSON"):
        w.append("code", "f", input={"x": object()})
    n = w.append("code", "f")
    with pytest.raises(StoreError, match="JSON"):
        w.update(n.id, output={1, 2})
    with pytest.raises(StoreError, match="status"):
        w.update(n.id, status="finished")
    with pytest.raises(StoreError, match="name"):
        store.create_session("  ")
    assert [x.id for x in store.list_nodes("s")] == [n.id]


def test_newer_schema_is_refused_and_not_touched(tmp_path: Path) -> None:
    SessionStore(tmp_path).close()
    db = tmp_path / "openprogram.db"
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_version VALUES (99, 'future', 0)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SessionStore(tmp_path)


def test_adding_a_migration_is_one_entry(tmp_path: Path) -> None:
    SessionStore(tmp_path).close()
    extra = Migration(len(MIGRATIONS) + 1, "notes", "CREATE TABLE notes (t TEXT); -- a;b\n")
    backend = SqliteBackend(tmp_path / "openprogram.db", migrations=[*MIGRATIONS, extra])
    assert backend.schema_version() == extra.version
    backend.connection().execute("INSERT INTO notes VALUES ('x;y')")
    backend.close()
    assert split_statements("CREATE TABLE a (x TEXT DEFAULT ';'); SELECT 1;") == [
        "CREATE TABLE a (x TEXT DEFAULT ';');",
        "SELECT 1;",
    ]


def test_node_to_json_has_every_field(store: SessionStore) -> None:
    n = SessionNodeWriter(store, store.create_session("s")).append("code", "f")
    assert isinstance(n, Node)
    assert set(n.to_json()) == {
        "id",
        "session_id",
        "seq",
        "kind",
        "name",
        "caller_id",
        "predecessor_id",
        "input",
        "output",
        "status",
        "metadata",
        "created_at",
        "updated_at",
        "step_key",
    }


def _next_millisecond() -> None:
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 == start:
        pass


def test_ids_start_with_their_creation_millisecond_so_later_ids_sort_later(
    store: SessionStore,
) -> None:
    before = time.time_ns() // 1_000_000
    sid = store.create_session()
    w = SessionNodeWriter(store, sid)
    ids = []
    for name in ("a", "b", "c"):
        _next_millisecond()
        ids.append(w.append("code", name).id)
    after = time.time_ns() // 1_000_000
    for made in (sid, *ids):
        assert len(made) == 32 and int(made, 16) >= 0
        assert before <= int(made[:12], 16) <= after
    assert ids == sorted(ids)  # created in different milliseconds: in creation order
    # many ids in one millisecond stay distinct (80 random bits each)
    many = [w.append("code", "n").id for _ in range(500)]
    assert len(set(many)) == 500


def test_threads_opening_one_new_store_at_once_all_get_it(tmp_path: Path) -> None:
    """Several threads (a web app, a worker) open a store that does not exist yet: each
    gets it (turning the new file into WAL answered "database is locked" at once to all
    but one of them)."""
    import threading

    def open_it(root: Path, barrier: threading.Barrier, errors: list[BaseException]) -> None:
        barrier.wait()
        try:
            SessionStore(root).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    for attempt in range(15):
        root, barrier = tmp_path / f"store{attempt}", threading.Barrier(6)
        errors: list[BaseException] = []
        threads = [threading.Thread(target=open_it, args=(root, barrier, errors)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], (attempt, errors)


RUN_PROGRAM = """
from openprogram import step


def tiny(i: int) -> int:
    return i


def chain(n: int) -> int:
    return sum(step("s", tiny, i) for i in range(n))


chain.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["chain"]
"""


def test_a_sessions_summary_reads_only_its_own_nodes(tmp_path: Path) -> None:
    """A session's node count and last update read its own nodes through the index, in
    ``nodes`` and in the step log: a new run's session costs the same in a store of
    millions of nodes (an aggregate over the view ``nodes_all`` read them all)."""
    from openprogram.durable import start_run
    from openprogram.store.sqlite import _SESSION_SELECT

    (tmp_path / "prog.py").write_text(RUN_PROGRAM, encoding="utf-8")
    root = tmp_path / "store"
    big = start_run(f"{tmp_path}/prog.py:chain", {"n": 40}, store=root)
    small = start_run(f"{tmp_path}/prog.py:chain", {"n": 2}, store=root)
    with SessionStore(root) as s:
        counts = {x.id: x.node_count for x in s.list_sessions()}
        assert counts == {big.run_id: 41, small.run_id: 3}  # the entry's node and a step's
        latest = max(n.updated_at for n in s.list_nodes(small.run_id))
        assert s.get_session(small.run_id).updated_at >= latest
    with sqlite3.connect(store_db_path(root)) as conn:
        plan = [
            row[3]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN " + _SESSION_SELECT + " WHERE s.id = ?", (small.run_id,)
            )
        ]
    conn.close()
    assert not [step for step in plan if step.startswith("SCAN nodes")], plan
    assert [step for step in plan if "USING" in step and "nodes_session_seq" in step], plan


def test_the_runs_of_a_program_file_are_read_through_its_index(tmp_path: Path) -> None:
    """The Runs view's per-folder reads and ``program_paths`` search ``runs_program``
    (schema v10) instead of scanning every run."""
    from openprogram.store.runs import RunSql

    with SessionStore(tmp_path / "root"):
        pass
    conn = sqlite3.connect(tmp_path / "root" / "openprogram.db")
    sql = RunSql()
    for name in (
        "newest_finished_runs_of_entry",
        "newest_finished_runs_of_pathless_entry",
        "runs_of_program_path",
        "program_paths",
    ):
        text = getattr(sql, name)
        plan = conn.execute("EXPLAIN QUERY PLAN " + text, (None,) * text.count("?")).fetchall()
        assert any("INDEX runs_program" in row[-1] for row in plan), (name, plan)
    conn.close()


def test_runs_cancelled_before_v10_keep_no_pause(tmp_path: Path) -> None:
    """A run cancelled while paused by an older version kept its pause (step, occurrence,
    reason) and ``runs --json`` printed it; opening the store (v10) clears it, as the
    cancel statement now does."""
    from openprogram.store.runs import read_run_store

    with SessionStore(tmp_path / "root"):
        pass
    db = tmp_path / "root" / "openprogram.db"
    conn = sqlite3.connect(db)
    with conn:
        for rid, status in (("gone", "cancelled"), ("held", "paused")):
            conn.execute(
                "INSERT INTO runs (id, entry, function_qualname, status, paused_step, "
                "paused_occurrence, pause_reason, created_at, updated_at) "
                "VALUES (?, 'p.py:f', 'f', ?, 'ship', 0, 'awaiting_approval', 0, 0)",
                (rid, status),
            )
        conn.execute("DELETE FROM schema_version WHERE version = 10")  # as v9 left it
    conn.close()
    with SessionStore(tmp_path / "root"):  # opening migrates
        pass
    runs = read_run_store(tmp_path / "root")
    assert runs is not None
    with runs:
        gone, held = runs.get_run("gone"), runs.get_run("held")
    assert gone is not None and held is not None
    assert (gone.paused_step, gone.paused_occurrence, gone.pause_reason) == (None, None, None)
    assert (held.paused_step, held.pause_reason) == ("ship", "awaiting_approval")
