"""Bad store input: a file as the store path, a read-only directory, a corrupted
database, a missing session — each a one-line ``StoreError`` and nothing stored is lost."""

from __future__ import annotations

import ctypes
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.errors import StoreError
from openprogram.store import SessionNodeWriter, SessionStore

CLONE_NEWUSER = 0x10000000


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and text
    return text


def test_store_path_that_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "not-a-dir"
    target.write_text("keep me")
    with pytest.raises(StoreError) as info:
        SessionStore(target)
    msg = _one_line(info.value)
    assert str(target) in msg and "is a file" in msg and "--store" in msg
    assert target.read_text() == "keep me"


def test_database_path_that_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "openprogram.db").mkdir()
    with pytest.raises(StoreError, match="not a database file"):
        SessionStore(tmp_path)


def test_corrupted_database_is_reported_and_never_replaced(tmp_path: Path) -> None:
    db = tmp_path / "openprogram.db"
    garbage = b"this is not sqlite\x00\xff" * 400
    db.write_bytes(garbage)
    with pytest.raises(StoreError) as info:
        SessionStore(tmp_path)
    msg = _one_line(info.value)
    assert str(db) in msg and "corrupted" in msg and "move the file aside" in msg
    assert db.read_bytes() == garbage  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["openprogram.db"]


def test_corrupted_pages_in_a_real_store_are_reported(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as s:
        w = SessionNodeWriter(s, s.create_session("s"))
        for i in range(200):
            w.append("code", "n", input={"blob": "x" * 500, "i": i})
    db = tmp_path / "openprogram.db"
    data = bytearray(db.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data), page):  # smash every page after the first two
        data[offset : offset + 64] = b"\xde\xad\xbe\xef" * 16
    db.write_bytes(bytes(data))
    before = db.read_bytes()
    with pytest.raises(StoreError) as info:
        with SessionStore(tmp_path) as s:
            s.list_nodes("s")
            s.list_sessions()
    assert "corrupted" in _one_line(info.value)
    assert db.read_bytes() == before


def test_missing_session_for_writer(tmp_path: Path) -> None:
    with SessionStore(tmp_path) as s:
        with pytest.raises(StoreError) as info:
            SessionNodeWriter(s, "ghost")
        msg = _one_line(info.value)
        assert "'ghost'" in msg and "create_session" in msg


# -- read-only directory -------------------------------------------------------------

READ_ONLY_CHECK = """
import sys
from openprogram.errors import StoreError
from openprogram.store import SessionStore, SessionNodeWriter
for root in sys.argv[1:]:
    try:
        with SessionStore(root) as s:
            SessionNodeWriter(s, "s").append("code", "blocked")
    except StoreError as exc:
        print("StoreError:", exc)
    else:
        print("WROTE", root)
"""


def _drop_dac_override() -> None:  # runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER) failed")


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="op-ro-"))
    d.chmod(0o755)
    yield d
    for p in [d, *d.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
    shutil.rmtree(d)


def test_read_only_store_directory(world_readable_tmp: Path) -> None:
    """As root the check runs in a user namespace, where permission bits apply again."""
    existing = world_readable_tmp / "existing"
    with SessionStore(existing) as s:
        w = SessionNodeWriter(s, s.create_session("s"))
        kept = [w.append("code", f"n{i}").id for i in range(3)]
    parent = world_readable_tmp / "locked"
    parent.mkdir()
    for d in (existing, parent):
        d.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH)
    preexec = _drop_dac_override if os.geteuid() == 0 else None
    try:
        proc = subprocess.run(
            [sys.executable, "-c", READ_ONLY_CHECK, str(existing), str(parent / "new")],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=preexec,
        )
    except subprocess.SubprocessError as exc:  # pragma: no cover - no user namespaces
        pytest.skip(f"cannot drop root's permission override here: {exc}")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2, proc.stdout
    assert lines[0].startswith("StoreError:") and str(existing) in lines[0]
    assert "writable" in lines[0]
    assert lines[1].startswith("StoreError:") and "cannot create the store directory" in lines[1]
    existing.chmod(0o755)
    with SessionStore(existing) as s:  # nothing stored was lost
        assert [n.id for n in s.list_nodes("s")] == kept
