"""``replay:`` — answers from a recording instead of a model; no network.

``replay:PATH.jsonl`` replays a JSONL cassette (see :mod:`openprogram.runtime.cassette`);
``replay:session:SESSION_ID`` replays the ``llm`` nodes of a recorded session (from
``store=`` or the default store root). Each request must equal the next recorded one in
``system``, ``messages``, ``tools`` and ``response_format``; if it does not, another
not-yet-used recording that equals it exactly is used (so parallel branches may replay in
a different order); otherwise :class:`~openprogram.errors.ReplayMismatch` is raised with a
unified diff against the next recording.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import ConfigError, ProviderError, ReplayMismatch
from openprogram.runtime.cassette import (
    Recording,
    comparable,
    load_cassette,
    load_session,
    request_diff,
    request_record,
)
from openprogram.runtime.providers.usage import usage_from
from openprogram.runtime.types import ModelRequest, ModelResponse, ToolCall

if TYPE_CHECKING:
    from openprogram.store import SessionStore


class ReplayProvider:
    """Replays recorded replies in order, checking each request against the recording."""

    name = "replay"

    def __init__(self, recordings: list[Recording], *, source: str, model_id: str = "") -> None:
        self._recordings = list(recordings)
        self._used = [False] * len(self._recordings)
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
        return self._used.count(False)

    def __repr__(self) -> str:
        return f"ReplayProvider({self.source!r}, {self.remaining} of {len(self._used)} left)"

    def complete(self, request: ModelRequest) -> ModelResponse:
        return self._replay(request)

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        return self._replay(request)

    def close(self) -> None:
        """Nothing to release."""

    def _replay(self, request: ModelRequest) -> ModelResponse:
        actual = request_record(request)
        wanted = comparable(actual)
        with self._lock:
            self._count += 1
            number = self._count
            pending = [i for i, used in enumerate(self._used) if not used]
            if not pending:
                raise ReplayMismatch(
                    f"replay: request #{number} has no recording left in {self.source} "
                    f"({len(self._used)} recorded); the program makes more model calls than "
                    "when it was recorded -- re-record it"
                )
            match = next(
                (i for i in pending if comparable(self._recordings[i].request) == wanted), None
            )
            if match is None:
                expected = self._recordings[pending[0]]
                raise ReplayMismatch(
                    f"replay: request #{number} differs from the recording at {expected.source}; "
                    "the prompt, system, tools or response_format changed -- re-record it.\n"
                    + request_diff(expected.request, actual)
                )
            self._used[match] = True
            recording = self._recordings[match]
        return _response(recording)


def _response(recording: Recording) -> ModelResponse:
    if recording.response is None:
        raise ProviderError(
            f"replay: the recorded request failed ({recording.source}): {recording.error}",
            provider="replay",
        )
    data: dict[str, Any] = recording.response
    return ModelResponse(
        text=str(data.get("text") or ""),
        tool_calls=[
            ToolCall(
                id=str(c.get("id", "")),
                name=str(c["name"]),
                arguments=c.get("arguments") or {},
                raw_arguments=c.get("raw_arguments"),
                arguments_error=c.get("arguments_error"),
            )
            for c in data.get("tool_calls") or []
        ],
        usage=usage_from(data.get("usage"), "input_tokens", "output_tokens"),
        model="replay",
        request_id=None,
        finish_reason=data.get("finish_reason"),
    )
