"""Ownership of a running run: a lease renewed by a heartbeat.

A process executing a run holds its lease: the run's ``owner_token`` (a random token of
this execution) and ``lease_expires_at``. Claiming a run is a compare-and-set on the
token read before (:meth:`RunStore.claim_run`), so of two processes resuming the same run
exactly one wins. While it executes, a :class:`Heartbeat` thread pushes
``lease_expires_at`` forward every ``ttl / 3`` seconds; every step dispatch and the final
state write are fenced on the token, so a process whose lease was taken over stops at its
next step instead of writing over the new owner.

A run is *owned by a live process* (:func:`owner_alive`) while its lease has not
expired — except that when the owner was a process in this very machine and PID
namespace (same boot id and namespace, recorded in ``owner_proc``), a process that
provably no longer exists (no such PID, or a PID reused by a process started at another
time) releases it at once. No PID or host-name guess ever keeps a run locked past its
lease: a reused PID or a renamed container only delays a takeover until expiry. A
``running`` run that no live owner holds is *interrupted* (:func:`is_interrupted`).
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from openprogram.errors import ConfigError
from openprogram.store.fork_guard import no_fork

LEASE_ENV = "OPENPROGRAM_LEASE_S"
DEFAULT_LEASE_S = 30.0


def env_seconds(env: str, default: float, what: str) -> float:
    """``$env`` as a number of seconds, or ``default`` when it is unset or empty.

    Raises :class:`~openprogram.errors.ConfigError` (one line, naming ``what`` the setting
    is) for a value that is not a finite number of seconds > 0 (``abc``, ``0``, ``-5``,
    ``nan``, ``inf``).
    """
    raw = os.environ.get(env)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise ConfigError(
            f"{env}={raw!r} is not {what}: use a finite number of seconds > 0 (default {default:g})"
        )
    return value


def lease_seconds() -> float:
    """The lease length: ``$OPENPROGRAM_LEASE_S`` (seconds) or 30 when unset or empty
    (a bad value: :func:`env_seconds`)."""
    return env_seconds(LEASE_ENV, DEFAULT_LEASE_S, "a lease length")


@lru_cache(maxsize=1)
def _namespace() -> str:
    """``boot_id/pid-namespace`` of this machine and container ('' when unknown)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            boot = fh.read().strip()
        ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot}/{ns}"


def _start_ticks(pid: int) -> str | None:
    """Start time of process ``pid`` (clock ticks since boot), ``None`` if it is gone
    (or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else None


def process_identity(pid: int | None = None) -> str:
    """``boot_id/pidns/pid/start`` of a process of this machine ('' when unknown)."""
    pid = os.getpid() if pid is None else pid
    ns = _namespace()
    start = _start_ticks(pid)
    if not ns or start is None:
        return ""
    return f"{ns}/{pid}/{start}"


@dataclass(frozen=True)
class Owner:
    """Who executes a run: a fresh token per execution, and this process's identity."""

    token: str
    pid: int
    host: str
    proc: str

    @classmethod
    def this_process(cls) -> Owner:
        return cls(uuid.uuid4().hex, os.getpid(), socket.gethostname(), process_identity())


def _local_parts(owner_proc: str | None) -> tuple[int, str] | None:
    """``(pid, start)`` when ``owner_proc`` is a process of this machine and namespace."""
    if not owner_proc:
        return None
    parts = owner_proc.split("/")
    if len(parts) != 4 or f"{parts[0]}/{parts[1]}" != _namespace() or not parts[2].isdigit():
        return None
    return int(parts[2]), parts[3]


def local_process_gone(owner_proc: str | None) -> bool:
    """Whether ``owner_proc`` names a process of this machine and PID namespace that no
    longer exists (certain). ``False`` when it is alive or not of this namespace."""
    local = _local_parts(owner_proc)
    return local is not None and _start_ticks(local[0]) != local[1]


def local_pid(owner_proc: str | None) -> int | None:
    """The PID of ``owner_proc`` when it is a live process of this namespace."""
    local = _local_parts(owner_proc)
    if local is None or _start_ticks(local[0]) != local[1]:
        return None
    return local[0]


def owner_alive(run: Any, now: float | None = None) -> bool:
    """Whether a ``running`` run is held by a live owner (see the module docstring)."""
    if run.status != "running":
        return False
    now = time.time() if now is None else now
    expires = run.lease_expires_at
    if expires is None or expires <= now:
        return False
    return not local_process_gone(run.owner_proc)


def is_interrupted(run: Any, now: float | None = None) -> bool:
    """Whether ``run`` is *interrupted*: ``running``, but no live owner holds its lease
    (:func:`owner_alive`; its process was killed or crashed). Nothing executes it; it is
    resumable. ``openprogram runs`` and ``show`` say ``interrupted``, the editor's Runs
    view too, and ``resume --all-interrupted`` resumes such runs."""
    return run.status == "running" and not owner_alive(run, now)


class Heartbeat:
    """Renews a lease every ``ttl / 3`` seconds in a daemon thread until stopped.

    ``renew()`` returns ``False`` once the lease is no longer ours (taken over or the run
    left ``running``); then ``lost`` is set and the thread ends. A failing renewal
    (database unreachable) is retried at the next beat.
    """

    def __init__(self, renew: Callable[[], bool], ttl: float) -> None:
        self._renew = renew
        self.interval = max(ttl / 3.0, 0.05)
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="openprogram-lease", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with no_fork():  # a child forked meanwhile never inherits a renewal mid-call
                    renewed = self._renew()
            except Exception:
                continue
            if not renewed:
                self.lost.set()
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
