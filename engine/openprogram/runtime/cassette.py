"""JSONL cassettes: recorded model requests and replies, one JSON object per line.

Line format::

    {"request": {"model": ..., "system": ..., "messages": [...], "tools": [...],
                 "response_format": ..., "effort": ...},
     "response": {"text": ..., "tool_calls": [...], "finish_reason": ...,
                  "usage": {"input_tokens": ..., "output_tokens": ...}}}

``request`` is :func:`openprogram.scope.request_to_json` without ``provider``;
``response`` is :func:`openprogram.scope.response_to_json` plus ``usage``. A line may
instead carry ``"error": "..."`` for a request that failed when it was recorded. A request
made inside a ``parallel`` branch carries ``"branch": PATH`` (see
:mod:`openprogram.branches`); replay consumes each branch's lines in file order.
Replay compares ``system``, ``messages``, ``tools`` and ``response_format`` (a
request whose tools are only described, the decision retry after tool calls, also
matches a recording made without them: :func:`as_recorded`).
"""

from __future__ import annotations

import difflib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.branches import current_branch
from openprogram.errors import ConfigError
from openprogram.runtime.types import ModelRequest, ModelResponse, ToolCall
from openprogram.scope import request_to_json, response_to_json

if TYPE_CHECKING:
    from openprogram.store import SessionStore

COMPARED_FIELDS = ("system", "messages", "tools", "response_format")


@dataclass
class Recording:
    """One recorded request and its reply (or the error it ended with)."""

    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    source: str  # where it came from, e.g. "run.jsonl:3" or "session abc node 7"
    branch: str = ""  # the parallel branch that made it ("" = sequential code)


def request_record(request: ModelRequest) -> dict[str, Any]:
    """The cassette form of a request (no provider, no credentials)."""
    record = request_to_json(request, "")
    record.pop("provider", None)
    return _normalize(record)


def response_record(response: ModelResponse) -> dict[str, Any]:
    """The cassette form of a reply, including token usage."""
    record = response_to_json(response)
    record["usage"] = response.usage.to_json()
    return _normalize(record)


def response_from_record(data: dict[str, Any], *, model: str = "") -> ModelResponse:
    """The reply a :func:`response_record` describes (``model`` names who answered)."""
    from openprogram.runtime.providers.usage import usage_from  # providers import this module

    return ModelResponse(
        text=str(data.get("text") or ""),
        tool_calls=[tool_call_from_record(c) for c in data.get("tool_calls") or []],
        usage=usage_from(data.get("usage"), "input_tokens", "output_tokens"),
        model=model,
        request_id=None,
        finish_reason=data.get("finish_reason"),
    )


def tool_call_from_record(data: dict[str, Any]) -> ToolCall:
    """A tool call from its recorded form (``{"id", "name", "arguments", ...}``)."""
    return ToolCall(
        id=str(data.get("id", "")),
        name=str(data["name"]),
        arguments=data.get("arguments") or {},
        raw_arguments=data.get("raw_arguments"),
        arguments_error=data.get("arguments_error"),
    )


def comparable(request: dict[str, Any]) -> dict[str, Any]:
    """The part of a request record that replay compares."""
    return _normalize({key: request.get(key) for key in COMPARED_FIELDS})


def as_recorded(
    recorded: dict[str, Any], actual: dict[str, Any], tool_choice: str | None
) -> dict[str, Any]:
    """``actual`` (a request record) as it is compared with ``recorded``.

    A request whose tools are only described (``tool_choice="none"``: the decision retry
    after tool calls, whose history names them) is compared without its tools with a
    recording that has none: one made before such requests carried the definitions. The
    model could call none of them either way, so the recorded reply answers the same
    conversation. (Request records do not hold ``tool_choice``: it is the live
    request's.)"""
    if tool_choice == "none" and not recorded.get("tools") and actual.get("tools"):
        return {**actual, "tools": []}
    return actual


def request_diff(recorded: dict[str, Any], actual: dict[str, Any]) -> str:
    """A unified diff between two request records (compared fields only)."""
    left = json.dumps(comparable(recorded), indent=2, sort_keys=True).splitlines()
    right = json.dumps(comparable(actual), indent=2, sort_keys=True).splitlines()
    return "\n".join(
        difflib.unified_diff(left, right, "recorded request", "actual request", lineterm="")
    )


class CassetteWriter:
    """Writes a cassette as requests complete.

    The file is truncated when opened, unless ``append=True`` (used for
    ``OPENPROGRAM_RECORD_TO``, where every runtime of a run adds to one cassette).
    """

    def __init__(self, path: str | Path, *, append: bool = False) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot write cassette {self.path}: {exc.strerror}") from None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CassetteWriter({str(self.path)!r})"

    def append(
        self,
        request: ModelRequest,
        response: ModelResponse | None,
        error: BaseException | None = None,
    ) -> None:
        """Add one line for a finished request."""
        line: dict[str, Any] = {"request": request_record(request)}
        if response is not None:
            line["response"] = response_record(response)
        else:
            line["error"] = f"{type(error).__name__}: {error}"
        branch = current_branch()
        if branch:
            line["branch"] = branch
        text = json.dumps(line, sort_keys=True, ensure_ascii=False)
        with self._lock:
            if not self._file.closed:
                self._file.write(text + "\n")
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def load_cassette(path: str | Path) -> list[Recording]:
    """Read a JSONL cassette; ConfigError with ``path:line`` on a bad line."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(f"replay cassette not found: {file}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read replay cassette {file}: {exc}") from None
    recordings: list[Recording] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{file}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(item, dict) or not isinstance(item.get("request"), dict):
            raise ConfigError(f"{where}: expected an object with a 'request' object")
        response = item.get("response")
        error = item.get("error")
        if not isinstance(response, dict) and not isinstance(error, str):
            raise ConfigError(f"{where}: expected a 'response' object or an 'error' string")
        branch = item.get("branch", "")
        if not isinstance(branch, str):
            raise ConfigError(f"{where}: 'branch' must be a string, got {branch!r}")
        recordings.append(
            Recording(
                request=item["request"],
                response=response if isinstance(response, dict) else None,
                error=error if not isinstance(response, dict) else None,
                source=where,
                branch=branch,
            )
        )
    return recordings


def load_session(store: SessionStore, session_id: str) -> list[Recording]:
    """The ``llm`` nodes of a recorded session, in ``seq`` order."""
    if store.get_session(session_id) is None:
        raise ConfigError(
            f"replay: session {session_id!r} not found in the store; "
            "list sessions with `openprogram sessions`"
        )
    recordings: list[Recording] = []
    for node in store.list_nodes(session_id):
        if node.kind != "llm" or not isinstance(node.input, dict):
            continue
        request = dict(node.input)
        request.pop("provider", None)
        output = node.output if isinstance(node.output, dict) else {}
        where = f"session {session_id} node seq {node.seq}"
        meta = node.metadata or {}
        branch = meta.get("branch")
        branch = branch if isinstance(branch, str) else ""
        if node.status == "error" or ("error" in output and "text" not in output):
            error = str(output.get("error", "error"))
            recordings.append(Recording(request, None, error, where, branch))
            continue
        response = dict(output)
        usage = meta.get("usage")
        if isinstance(usage, dict):
            response["usage"] = usage
        recordings.append(Recording(request, response, None, where, branch))
    return recordings


def write_cassette(path: str | Path, recordings: list[Recording]) -> Path:
    """Write ``recordings`` as a JSONL cassette (e.g. exported from a session)."""
    file = Path(path)
    lines = []
    for rec in recordings:
        line: dict[str, Any] = {"request": rec.request}
        if rec.response is not None:
            line["response"] = rec.response
        else:
            line["error"] = rec.error or "error"
        if rec.branch:
            line["branch"] = rec.branch
        lines.append(json.dumps(line, sort_keys=True, ensure_ascii=False))
    file.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    return file


def _normalize(value: Any) -> Any:
    """JSON round trip: tuples become lists, keys become strings."""
    return json.loads(json.dumps(value, default=repr))
