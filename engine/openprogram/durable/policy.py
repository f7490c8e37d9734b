"""The code-change policy of a run: per-run choice > project default > the run's own.

The project default is ``code_change_policy`` under ``[tool.openprogram.execution]`` in
the nearest ``pyproject.toml`` (searching upward from the Program's folder, else the
working directory) that has a ``[tool.openprogram]`` table::

    [tool.openprogram.execution]
    code_change_policy = "use_latest"   # or "keep_original" (the default)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.contract.pyproject import nearest_openprogram_table
from openprogram.contract.runs import DEFAULT_POLICY, POLICIES, Policy, RunStatus
from openprogram.errors import ConfigError

if TYPE_CHECKING:
    from openprogram.store.runs import RunRecord

__all__ = [
    "RESUMABLE_STATUSES",
    "configured_policy",
    "edit_can_break",
    "parse_policy",
    "policy_for_resume",
    "policy_for_start",
    "resumes_latest_source",
]

#: The states of the runs ``resume`` takes: paused, failed, and running (interrupted: its
#: process is gone; a live one is refused until then).
RESUMABLE_STATUSES = frozenset({RunStatus.PAUSED, RunStatus.FAILED, RunStatus.RUNNING})

#: The states of the runs that execute the Program's code again from their recorded
#: steps: those ``resume`` takes, and queued runs (handed to a queue, or given back to it
#: by a worker), which a worker executes with the resume rules.
EDITABLE_STATUSES = RESUMABLE_STATUSES | {RunStatus.QUEUED}


def parse_policy(value: object, where: str = "code-change policy") -> Policy:
    """``value`` as a :class:`Policy`; a clear error naming ``where`` otherwise."""
    if isinstance(value, Policy):
        return value
    if isinstance(value, str) and value in POLICIES:
        return Policy(value)
    raise ConfigError(
        f"{where} must be one of {', '.join(repr(p) for p in POLICIES)}, got {value!r}"
    )


def _start_dir(program_path: str | None) -> Path:
    if program_path:
        folder = Path(program_path).parent
        if folder.is_dir():
            return folder
    return Path.cwd()


def configured_policy(program_path: str | None = None) -> Policy | None:
    """The project's ``[tool.openprogram.execution] code_change_policy``, if it sets one."""
    found = nearest_openprogram_table(_start_dir(program_path))
    if found is None:
        return None
    path, table = found
    execution = table.get("execution")
    if execution is None:
        return None
    if not isinstance(execution, dict):
        raise ConfigError(f"{path}: [tool.openprogram.execution] must be a table")
    value = execution.get("code_change_policy")
    if value is None:
        return None
    return parse_policy(value, f"{path}: [tool.openprogram.execution] code_change_policy")


def policy_for_start(explicit: str | None, program_path: str | None) -> Policy:
    """A new run's policy: ``explicit`` > project default > ``keep_original``."""
    if explicit is not None:
        return parse_policy(explicit)
    return configured_policy(program_path) or DEFAULT_POLICY


def policy_for_resume(explicit: str | None, program_path: str | None, recorded: str) -> Policy:
    """A resume's policy: ``explicit`` > project default > the policy the run recorded."""
    if explicit is not None:
        return parse_policy(explicit)
    return configured_policy(program_path) or parse_policy(recorded, "the run's recorded policy")


def edit_can_break(run: RunRecord) -> bool:
    """Whether an edit of the Program can break ``run`` (OP209): it will execute again from
    its recorded steps (:data:`EDITABLE_STATUSES`) with the latest source."""
    return run.status in EDITABLE_STATUSES and resumes_latest_source(run)


def resumes_latest_source(run: RunRecord, explicit: str | None = None) -> bool:
    """Whether resuming ``run`` (with ``explicit``, the ``--policy`` given, if any) runs the
    Program's latest source, not the source the run saved: its resume policy
    (:func:`policy_for_resume`) is ``use_latest``, or the run saved no source. Then an edit
    of the Program can break it (OP209 compares such runs with the edited code)."""
    policy = policy_for_resume(explicit, run.program_path, run.policy)
    return not (policy is Policy.KEEP_ORIGINAL and run.source_snapshot)
