"""``replay:`` — answers from a recording instead of a model; no network.

``replay:PATH.jsonl`` replays a JSONL cassette (see :mod:`openprogram.runtime.cassette`);
``replay:session:SESSION_ID`` replays the ``llm`` nodes of a recorded session (from
``store=`` or the default store root). Recordings are consumed strictly in order, one
ordered stream per branch (:mod:`openprogram.branches`): sequential code consumes the
stream ``""``, each ``parallel`` branch its own, so threads may interleave freely. Each
request must equal the next recording of its branch in ``system``, ``messages``, ``tools``
and ``response_format`` (tools only described, ``tool_choice="none"``, may be absent
from an older recording: :func:`~openprogram.runtime.cassette.as_recorded`); otherwise
-- including a request that equals a *later* recording --
:class:`~openprogram.errors.ReplayMismatch` names the expected and the received
request, with a unified diff.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.branches import current_branch
from openprogram.errors import ConfigError, ProviderError, ReplayMismatch
from openprogram.runtime.cassette import (
    Recording,
    as_recorded,
    comparable,
    load_cassette,
    load_session,
    request_diff,
    request_record,
    response_from_record,
)
from openprogram.runtime.types import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from openprogram.store import SessionStore


class ReplayProvider:
    """Replays recorded replies in order per branch, checking each request against them."""

    name = "replay"

    def __init__(self, recordings: list[Recording], *, source: str, model_id: str = "") -> None:
        self._recordings = list(recordings)
        self._streams: dict[str, list[int]] = {}  # branch -> its recordings, in order
        for index, recording in enumerate(self._recordings):
            self._streams.setdefault(recording.branch, []).append(index)
        self._next: dict[str, int] = {}  # branch -> position of its next recording
        self.source = source
        self.model_id = model_id or (
            str(self._recordings[0].request.get("model") or "replay")
            if self._recordings
            else "replay"
        )
        self._lock = threading.Lock()
        self._count = 0

    @classmethod
    def from_cassette(cls, path: str | Path) -> ReplayProvider:
        """Replay the JSONL cassette at ``path``."""
        return cls(load_cassette(path), source=str(path))

    @classmethod
    def from_session(cls, session_id: str, store: SessionStore | None = None) -> ReplayProvider:
        """Replay the ``llm`` nodes of ``session_id`` (default store when ``store`` is None)."""
        if store is not None:
            return cls(load_session(store, session_id), source=f"session {session_id}")
        from openprogram.store import SessionStore

        with SessionStore(create=False) as default_store:
            recordings = load_session(default_store, session_id)
        return cls(recordings, source=f"session {session_id}")

    @classmethod
    def from_target(cls, target: str, store: SessionStore | None = None) -> ReplayProvider:
        """From the part after ``replay:`` in a model string."""
        if target.startswith("session:"):
            session_id = target[len("session:") :]
            if not session_id:
                raise ConfigError("malformed model string 'replay:session:': add the session id")
            return cls.from_session(session_id, store)
        return cls.from_cassette(target)

    @property
    def remaining(self) -> int:
        """Recordings not replayed yet."""
        return len(self._recordings) - sum(self._next.values())

    def __repr__(self) -> str:
        return f"ReplayProvider({self.source!r}, {self.remaining} of {len(self._recordings)} left)"

    def complete(self, request: ModelRequest) -> ModelResponse:
        return self._replay(request)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        return self._replay(request)

    def close(self) -> None:
        """Nothing to release."""

    def _replay(self, request: ModelRequest) -> ModelResponse:
        actual = request_record(request)
        branch = current_branch()
        where = f" in branch '{branch}'" if branch else ""
        with self._lock:
            self._count += 1
            number = self._count
            stream = self._streams.get(branch, [])
            position = self._next.get(branch, 0)
            if position >= len(stream):
                raise ReplayMismatch(
                    f"replay: request #{number}{where} has no recording left in {self.source} "
                    f"({len(stream)} recorded{where}); the program makes more model calls than "
                    "when it was recorded -- re-record it\n"
                    f"received: {summary(actual)}"
                )
            expected = self._recordings[stream[position]]
            if not _matches(expected, actual, request.tool_choice):
                shown = as_recorded(expected.request, actual, request.tool_choice)
                raise ReplayMismatch(
                    f"replay: request #{number}{where} differs from the recording at "
                    f"{expected.source}, the next one in order; the prompt, system, tools or "
                    "response_format changed, or the calls came in another order -- "
                    "re-record it.\n"
                    f"expected: {summary(expected.request)}\n"
                    f"received: {summary(shown)}"
                    + self._later_match(actual, request.tool_choice, branch, position)
                    + "\n"
                    + request_diff(expected.request, shown)
                )
            self._next[branch] = position + 1
        return _response(expected)

    def _later_match(
        self, actual: dict[str, Any], tool_choice: str | None, branch: str, position: int
    ) -> str:
        """A note naming a recording the request equals, if it is not the next one."""
        for index in self._streams.get(branch, [])[position + 1 :]:
            if _matches(self._recordings[index], actual, tool_choice):
                return (
                    f"\n(the received request equals the later recording at "
                    f"{self._recordings[index].source}: requests are replayed strictly "
                    "in the recorded order)"
                )
        for other, stream in self._streams.items():
            if other == branch:
                continue
            for index in stream:
                if _matches(self._recordings[index], actual, tool_choice):
                    name = f"branch '{other}'" if other else "sequential code"
                    return (
                        f"\n(the received request equals the recording at "
                        f"{self._recordings[index].source}, made by {name})"
                    )
        return ""


def _matches(recording: Recording, actual: dict[str, Any], tool_choice: str | None) -> bool:
    """Whether the request record ``actual`` (sent with ``tool_choice``) replays
    ``recording``."""
    wanted = as_recorded(recording.request, actual, tool_choice)
    return comparable(recording.request) == comparable(wanted)


def summary(request: dict[str, Any]) -> str:
    """One line naming a request: its last message (role and text), shortened."""
    messages = request.get("messages") or []
    if not messages:
        return "(no messages)"
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    content = last.get("content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    text = " ".join(str(text).split())
    if len(text) > 120:
        text = text[:117] + "..."
    return f"{last.get('role', '?')} message {text!r} ({len(messages)} messages)"


def _response(recording: Recording) -> ModelResponse:
    if recording.response is None:
        raise ProviderError(
            f"replay: the recorded request failed ({recording.source}): {recording.error}",
            provider="replay",
        )
    return response_from_record(recording.response, model="replay")
