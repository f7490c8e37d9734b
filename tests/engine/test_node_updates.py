"""A node's update through ``SessionNodeWriter``, the same on both store backends: output
and status kept when not given, metadata merged key by key into what is stored (values
that JSON cannot hold exactly, NaN and infinity, included), an unknown node refused."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import pytest

from openprogram.errors import StoreError
from openprogram.store import SessionNodeWriter, SessionStore
from pgcluster import BACKENDS, store_for


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    s = SessionStore(store_for(request, tmp_path))
    s.create_session("s")
    return s


def test_an_update_keeps_what_it_does_not_set_and_merges_metadata(store: SessionStore) -> None:
    writer = SessionNodeWriter(store, "s")
    node = writer.append("llm", "ask", input={"q": 1}, metadata={"model": "m", "tries": 1})
    done = writer.update(node.id, output=("a", 2), status="completed", metadata={"tries": 2})
    # the node as returned: the output as given, the metadata merged
    assert done.output == ("a", 2) and done.status == "completed"
    assert done.metadata == {"model": "m", "tries": 2}
    again = writer.update(node.id, metadata={"usage": {"in": 3, "out": 4}})
    stored = store.get_node(node.id)
    assert stored is not None
    for n in (again, stored):
        assert n.output == ["a", 2]  # read back: JSON's list
        assert n.status == "completed"
        assert n.metadata == {"model": "m", "tries": 2, "usage": {"in": 3, "out": 4}}
        assert n.input == {"q": 1}
    assert stored.output == ["a", 2] and stored.updated_at >= node.updated_at
    # a nested object is replaced whole, as dict.update replaces it
    writer.update(node.id, metadata={"usage": {"in": 5}})
    assert store.get_node(node.id).metadata["usage"] == {"in": 5}  # type: ignore[union-attr]
    # output None stored as null; status alone
    writer.update(node.id, output=None, status="error")
    stored = store.get_node(node.id)
    assert stored is not None and (stored.output, stored.status) == (None, "error")


def test_metadata_json_cannot_hold_is_merged_all_the_same(store: SessionStore) -> None:
    writer = SessionNodeWriter(store, "s")
    node = writer.append("code", "f")
    writer.update(node.id, metadata={"score": math.nan})
    writer.update(node.id, metadata={"best": math.inf, "n": 1})
    writer.update(node.id, metadata={"n": 2})
    stored = store.get_node(node.id)
    assert stored is not None
    assert math.isnan(stored.metadata["score"])
    assert (stored.metadata["best"], stored.metadata["n"]) == (math.inf, 2)


def test_merged_metadata_keeps_its_values_and_their_types(store: SessionStore) -> None:
    """A merge rewrites the stored object as Python merges it: a float written with an
    exponent stays a float, text stays as written (jsonb would print 1e20 as an integer)."""
    writer = SessionNodeWriter(store, "s")
    node = writer.append("llm", "ask", metadata={"big": 1e20, "tiny": 1e-7, "name": "é"})
    writer.update(node.id, metadata={"n": 1})
    stored = store.get_node(node.id)
    assert stored is not None
    assert stored.metadata == {"big": 1e20, "tiny": 1e-7, "name": "é", "n": 1}
    assert [type(v) for v in stored.metadata.values()] == [float, float, str, int]
    assert list(stored.metadata) == ["big", "tiny", "name", "n"]  # in the order merged


def test_concurrent_merges_into_one_node_lose_no_key(store: SessionStore) -> None:
    """Writers merging into one node's metadata at once (a model call's usage, a tool's
    trace) each keep what they merged: no update overwrites another's keys."""
    writer = SessionNodeWriter(store, "s")
    node = writer.append("llm", "ask", metadata={"model": "m"})

    def merge(t: int) -> None:
        for j in range(25):
            SessionNodeWriter(store, "s").update(node.id, metadata={f"t{t}_{j}": j})

    threads = [threading.Thread(target=merge, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stored = store.get_node(node.id)
    assert stored is not None
    assert stored.metadata == {"model": "m"} | {f"t{t}_{j}": j for t in range(4) for j in range(25)}


def test_an_unknown_node_is_refused(store: SessionStore) -> None:
    writer = SessionNodeWriter(store, "s")
    with pytest.raises(StoreError, match="'nope' does not exist"):
        writer.update("nope", status="completed")
    with pytest.raises(StoreError, match="must be JSON values"):
        writer.update(writer.append("code", "f").id, metadata={"x": object()})
