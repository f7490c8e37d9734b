"""The one-statement append trusts a per-connection guess of the session's last node;
another connection's appends, a pinned head, a rolled-back transaction and an id reused
must all be noticed (the general path then runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import StoreError
from openprogram.store import SessionNodeWriter, SessionStore


def test_two_connections_alternating_keep_seq_and_predecessors(tmp_path: Path) -> None:
    a, b = SessionStore(tmp_path), SessionStore(tmp_path)
    a.create_session("s")
    wa, wb = SessionNodeWriter(a, "s"), SessionNodeWriter(b, "s")
    made = []
    for i in range(12):
        w = wa if i % 3 else wb  # runs of appends on one connection, then the other
        made.append(w.append("code", f"n{i}", status="completed"))
    nodes = a.list_nodes("s")
    assert [n.seq for n in nodes] == list(range(1, 13))
    assert [n.id for n in nodes] == [n.id for n in made]
    assert [n.seq for n in made] == list(range(1, 13))
    assert [n.predecessor_id for n in nodes] == [None] + [n.id for n in nodes[:-1]]
    assert [n.predecessor_id for n in made] == [n.predecessor_id for n in nodes]
    a.close()
    b.close()


def test_head_pinned_by_another_connection_is_the_next_predecessor(tmp_path: Path) -> None:
    a, b = SessionStore(tmp_path), SessionStore(tmp_path)
    a.create_session("s")
    wa, wb = SessionNodeWriter(a, "s"), SessionNodeWriter(b, "s")
    first = wa.append("user", "q1")
    wa.append("user", "q2")
    wb.move_head(first.id)  # branch from the first node, on the other connection
    branch = wa.append("user", "q2b")
    assert branch.predecessor_id == first.id
    assert wa.head_id == branch.id and wb.head_id == branch.id
    nxt = wa.append("user", "q3")
    assert nxt.predecessor_id == branch.id and nxt.seq == 4
    a.close()
    b.close()


def test_append_inside_a_rolled_back_transaction_leaves_no_trace(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as store:
        store.create_session("s")
        w = SessionNodeWriter(store, "s")
        kept = w.append("code", "kept")
        with pytest.raises(RuntimeError):
            with store.backend.transaction():  # type: ignore[attr-defined]
                w.append("code", "lost")
                raise RuntimeError("roll back")
        after = w.append("code", "after")
        assert (after.seq, after.predecessor_id) == (2, kept.id)
        assert [n.name for n in store.list_nodes("s")] == ["kept", "after"]


def test_reused_id_returns_the_stored_node_and_foreign_id_is_refused(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as store:
        store.create_session("s")
        store.create_session("t")
        w = SessionNodeWriter(store, "s")
        n = w.append("code", "x", node_id="fixed")
        again = w.append("code", "other name", node_id="fixed")
        assert (again.id, again.name, again.seq) == ("fixed", "x", n.seq)
        assert len(store.list_nodes("s")) == 1
        with pytest.raises(StoreError, match="already belongs"):
            SessionNodeWriter(store, "t").append("code", "y", node_id="fixed")
        w.append("code", "y")
        assert [x.seq for x in store.list_nodes("s")] == [1, 2]
