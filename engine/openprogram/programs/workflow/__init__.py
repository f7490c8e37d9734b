"""Planner workflows (SPEC §2.9): a model writes ``def workflow():``, we check and run it.

:func:`plan_and_run` asks a Planner (a model turn with read-only workspace tools) for
workflow code, checks it statically with the analyzer (``check_planner_code``, see
:mod:`openprogram_analyzers.planner`: no imports, only injected names and
``WORKFLOW_BUILTINS``, exactly one zero-argument ``workflow``), runs it with
``exec`` in a namespace from :func:`_build_namespace`, and feeds any failure back to the
Planner for a bounded number of revisions. Every injected callable goes through a
:class:`Checkpoint`, so a revised rerun reuses the model calls that did not change.
"""

from __future__ import annotations

import builtins
import re
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from openprogram.errors import OpenProgramError
from openprogram.programs.workflow.checkpoint import Checkpoint, CheckpointRuntime
from openprogram.programs.workflow.workspace_tools import workspace_tools

__all__ = [
    "PLANNER_INSTRUCTIONS",
    "Checkpoint",
    "WorkflowCheckError",
    "WorkflowFailed",
    "WorkflowRun",
    "check_workflow_code",
    "extract_code",
    "injected_names",
    "plan_and_run",
    "run_workflow_code",
    "workspace_tools",
]

WORKFLOW_FILENAME = "<workflow>"

PLANNER_INSTRUCTIONS = """\
You are the Planner. Write Python code that accomplishes the task by calling the
functions below, then reply with the code in one ```python block.

Rules:
- Define exactly one function `def workflow():` with no arguments that returns the result.
  Nothing else at top level (helpers and values go inside `workflow`).
- No imports. Use only these functions, variables you define, and basic builtins
  (len, str, int, list, dict, range, enumerate, zip, min, max, sorted, sum, any, all).
- Conditions are plain-language strings judged by the model; wrap deferred work in
  `lambda:`.

Functions:
- llm(prompt) -> str: one model answer, no tools.
- agent(prompt) -> str: a model turn that may use tools.
- goal(objective, max_iterations=5) -> str: agent turns toward an objective until the
  model judges it met (at most max_iterations turns); returns the last result.
- validate_and_retry(action, check, retry=None, max_retries=2): run action(), retry while
  the check (a condition string) fails; returns the last result.
- route(question, options, context=None) -> str: the model picks one option string.
- conditional(condition, context, if_true, if_false): run if_true() or if_false().
- repeat_until(action, condition, max_rounds=5): repeat action() until condition holds.
- parallel([thunk, ...]) -> list: run zero-argument lambdas concurrently, results in order.

Example:
```python
def workflow():
    files = validate_and_retry(
        action=lambda: agent("List the files of the auth module"),
        check="at least 5 files, including oauth ones",
        retry=lambda: agent("Widen the search: include openid and token files"),
        max_retries=2,
    )
    analysis = agent("Analyse the dependencies and interfaces of: " + files)
    strategy = route(
        question="Which migration strategy fits?",
        options=["direct", "refactor first", "phased"],
        context=analysis,
    )
    return conditional(
        condition="the chosen strategy is complex (refactor first or phased)",
        context=strategy,
        if_true=lambda: agent("Write a detailed multi-phase migration plan: " + analysis),
        if_false=lambda: agent("Write brief direct migration steps: " + analysis),
    )
```
"""


def _describe_finding(finding: Any) -> str:
    """One line for a check finding: ``line L, column C: OPxxx message``."""
    return f"line {finding.line}, column {finding.column}: {finding.code} {finding.message}"


class WorkflowCheckError(OpenProgramError, ValueError):
    """Workflow code failed the static check; ``problems`` lists the analyzer findings."""

    def __init__(self, problems: list[Any]) -> None:
        self.problems = problems
        super().__init__(
            "workflow code rejected: " + "; ".join(_describe_finding(p) for p in problems[:5])
        )


class WorkflowFailed(OpenProgramError, RuntimeError):
    """No working workflow after the allowed revisions (``code`` and ``feedback`` of the last)."""

    def __init__(self, message: str, *, code: str | None, feedback: str) -> None:
        super().__init__(message)
        self.code = code
        self.feedback = feedback


@dataclass
class WorkflowRun:
    """The outcome of :func:`plan_and_run`."""

    result: Any
    code: str
    revisions: int
    checkpoint: Checkpoint


def _primitives() -> dict[str, Callable[..., Any]]:
    from openprogram.agentic_programming import control_flow
    from openprogram.agentic_programming.calls import agent, llm
    from openprogram.agentic_programming.goals import goal

    return {
        "llm": llm,
        "agent": agent,
        "goal": goal,
        "validate_and_retry": control_flow.validate_and_retry,
        "route": control_flow.route,
        "conditional": control_flow.conditional,
        "repeat_until": control_flow.repeat_until,
        "parallel": control_flow.parallel,
    }


_MODEL_CALLS = ("llm", "agent")


def injected_names(extra: Mapping[str, Any] | None = None) -> list[str]:
    """The names workflow code may use besides its own and the basic builtins."""
    return sorted({*_primitives(), *(extra or {})})


def _build_namespace(
    checkpoint: Checkpoint, extra: Mapping[str, Callable[..., Any]] | None = None
) -> dict[str, Any]:
    """The ``exec`` namespace: checkpoint-wrapped primitives and restricted builtins.

    ``llm``/``agent`` (and ``extra`` callables) are logged as checkpoint calls; ``goal``
    and the control-flow primitives are transparent (their inner calls are logged), ``parallel``
    numbers each branch's calls under its own position. The calls made inside a primitive
    that raised are not reused by the next run.
    """
    from openprogram_analyzers.planner import WORKFLOW_BUILTINS

    ns: dict[str, Any] = {
        "__builtins__": {name: getattr(builtins, name) for name in WORKFLOW_BUILTINS},
        "__name__": "openprogram_workflow",
    }
    for name, fn in _primitives().items():
        if name in _MODEL_CALLS:
            ns[name] = checkpoint.wrap(name, fn)
        elif name == "parallel":
            ns[name] = checkpoint.wrap_parallel(fn)
        else:  # its own calls are logged; they are not reused when it raises
            ns[name] = checkpoint.guard(fn)
    for name, fn in (extra or {}).items():
        ns[name] = checkpoint.wrap(name, fn)
    return ns


def check_workflow_code(code: str, extra: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`WorkflowCheckError` unless ``code`` passes the static check."""
    from openprogram_analyzers import check_planner_code

    problems = check_planner_code(code, injected_names(extra), WORKFLOW_FILENAME)
    if problems:
        raise WorkflowCheckError(problems)


def run_workflow_code(
    code: str,
    *,
    runtime: Any = None,
    checkpoint: Checkpoint | None = None,
    extra: Mapping[str, Callable[..., Any]] | None = None,
) -> Any:
    """Check ``code``, run it and return ``workflow()``'s result (a recorded ``workflow`` call)."""
    from openprogram.scope import call_scope, current_runtime, set_output

    check_workflow_code(code, extra)
    ckpt = checkpoint if checkpoint is not None else Checkpoint()
    rt = runtime if runtime is not None else current_runtime()
    if rt is None:
        from openprogram.runtime import create_runtime

        rt = create_runtime()
    namespace = _build_namespace(ckpt, extra)
    compiled = compile(code, WORKFLOW_FILENAME, "exec")
    token = ckpt.begin_run()
    try:
        with call_scope(
            "workflow", inputs={"code": code}, runtime=cast(Any, CheckpointRuntime(rt, ckpt))
        ) as frame:
            exec(compiled, namespace)
            return set_output(frame, ckpt.body(namespace["workflow"], code)())
    finally:
        ckpt.end_run(token)


_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\r?\n(.*?)```", re.S)


def extract_code(reply: str) -> str:
    """The workflow code of a Planner reply (the ```python block holding ``workflow``)."""
    blocks = _CODE_BLOCK.findall(reply)
    for block in blocks:
        if "def workflow" in block:
            return str(block).strip() + "\n"
    if blocks:
        return str(blocks[0]).strip() + "\n"
    return reply.strip() + "\n"


def _failure_text(exc: BaseException, code: str) -> str:
    lines = code.splitlines()
    where = ""
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename == WORKFLOW_FILENAME and fs.lineno and 0 < fs.lineno <= len(lines):
            where = f" (workflow line {fs.lineno}: {lines[fs.lineno - 1].strip()})"
    return f"{type(exc).__name__}: {exc}{where}"


def _planner_prompt(task: str, code: str | None, feedback: str | None) -> str:
    if code is None:
        return f"Task: {task}\n\nExplore the workspace if useful, then write the workflow."
    return (
        f"Task: {task}\n\nYour previous workflow failed:\n```python\n{code}```\n\n"
        f"Error: {feedback}\n\nRevise the workflow. Calls that did not change are reused."
    )


def plan_and_run(
    task: str,
    *,
    runtime: Any = None,
    workspace: str | Path = ".",
    max_revisions: int = 2,
    checkpoint: Checkpoint | None = None,
    extra: Mapping[str, Callable[..., Any]] | None = None,
) -> WorkflowRun:
    """Plan ``task`` as workflow code, run it, and revise it after failures.

    The Planner gets read-only tools over ``workspace``. At most ``max_revisions``
    revisions follow the first attempt; then :class:`WorkflowFailed` is raised.
    """
    from openprogram.scope import call_scope, current_runtime

    if max_revisions < 0:
        raise ValueError(f"max_revisions must be >= 0, got {max_revisions}")
    created = None
    rt = runtime if runtime is not None else current_runtime()
    if rt is None:
        from openprogram.runtime import create_runtime

        rt = created = create_runtime()
    ckpt = checkpoint if checkpoint is not None else Checkpoint()
    tools = workspace_tools(workspace)
    code: str | None = None
    feedback = ""
    try:
        for revision in range(max_revisions + 1):
            with call_scope("planner", inputs={"task": task, "revision": revision}, runtime=rt):
                reply = rt.exec(
                    _planner_prompt(task, code, feedback or None),
                    tools=tools,
                    system=PLANNER_INSTRUCTIONS,
                )
            code = extract_code(reply)
            try:
                result = run_workflow_code(code, runtime=rt, checkpoint=ckpt, extra=extra)
            except WorkflowCheckError as exc:
                feedback = "the code failed the static check:\n" + "\n".join(
                    _describe_finding(p) for p in exc.problems
                )
            except Exception as exc:
                feedback = _failure_text(exc, code)
            else:
                return WorkflowRun(result=result, code=code, revisions=revision, checkpoint=ckpt)
        raise WorkflowFailed(
            f"no working workflow after {max_revisions} revision(s); last error: {feedback}",
            code=code,
            feedback=feedback,
        )
    finally:
        if created is not None:
            created.close()
