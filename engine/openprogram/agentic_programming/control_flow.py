"""Model-judged control flow (SPEC §2.8): validate, route, branch, loop, fan out.

Outside any call, each primitive is an outermost call: its actions and judgements share
one runtime (the ``runtime=`` argument, else one from ``create_runtime()`` created on first
need and closed when the primitive returns).

A string ``check`` / ``condition`` is judged by a decision (:func:`openprogram.decision.make`
with a yes/no menu), so each judgement is one recorded model call and an unusable answer
is retried, then raises :class:`~openprogram.decision.DecisionError` — never a substring
test. A callable condition is judged in Python (called with the result or context, or
with no argument if it takes none).
"""

from __future__ import annotations

import contextvars
import inspect
import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from openprogram import decision
from openprogram.branches import in_branch, new_fork
from openprogram.errors import MenuViolation
from openprogram.history import STEP_KEY
from openprogram.schema_grammar import check_route_options
from openprogram.scope import call_scope, runtime_scope, set_output

__all__ = ["conditional", "judge", "parallel", "repeat_until", "route", "validate_and_retry"]

T = TypeVar("T")
Condition = str | Callable[..., Any]

DEFAULT_MAX_WORKERS = 8
_SUBJECT_CHARS = 50_000
_YES_NO: dict[str, Any] = {
    "yes": (True, "the condition holds"),
    "no": (False, "the condition does not hold"),
}


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, indent=2, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > _SUBJECT_CHARS:
        text = text[:_SUBJECT_CHARS] + "\n[... truncated]"
    return text


def _call_condition(fn: Callable[..., Any], subject: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return bool(fn(subject))
    takes_arg = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params
    )
    return bool(fn(subject) if takes_arg else fn())


def judge(
    condition: Condition,
    subject: Any,
    *,
    label: str = "Result",
    runtime: Any = None,
    max_retries: int = 1,
) -> bool:
    """Whether ``condition`` holds for ``subject``: a yes/no decision, or a Python call."""
    if callable(condition):
        return _call_condition(condition, subject)
    if not isinstance(condition, str) or not condition.strip():
        raise TypeError(
            f"a condition must be a non-empty string or a callable, got {type(condition).__name__}"
        )
    prompt = (
        "Judge whether the condition below holds.\n\n"
        f"Condition: {condition.strip()}\n\n"
        f"{label}:\n{_as_text(subject)}\n\n"
        'Choose "yes" if the condition holds and "no" if it does not.'
    )
    with runtime_scope():
        verdict = decision.make(prompt, _YES_NO, runtime=runtime, max_retries=max_retries)
    return bool(verdict)


def validate_and_retry(
    action: Callable[[], T],
    check: Condition,
    retry: Callable[[], T] | None = None,
    max_retries: int = 2,
    *,
    runtime: Any = None,
) -> T:
    """Run ``action``; while ``check`` fails, run ``retry`` (default ``action``) again.

    At most ``max_retries`` retries; the result of the last attempt is returned even if it
    never passed (a check after the final attempt would change nothing, so none is made).
    """
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    again = retry if retry is not None else action
    with runtime_scope():
        result = action()
        for _ in range(max_retries):
            if judge(check, result, runtime=runtime):
                return result
            result = again()
    return result


def route(
    question: str,
    options: Sequence[str] | Mapping[str, str],
    context: Any = None,
    *,
    runtime: Any = None,
    max_retries: int = 1,
) -> str:
    """Let the model pick one of ``options`` (strings, or ``{option: description}``).

    Returns the chosen option string. An answer outside the options is a parse error that
    is retried, then raises :class:`~openprogram.decision.DecisionError`.
    """
    menu: list[Any]
    if isinstance(options, (Mapping, list, tuple)):  # lint's OP305/OP306 on literal options
        problems = check_route_options(options)
        if problems:
            first = problems[0]
            head = first.path[0] if first.path else None
            where = f"route option {head!r}" if isinstance(options, Mapping) else "route options"
            where += f" item {head}" if head is not None and where == "route options" else ""
            raise MenuViolation(first.code, first.message, where)
    if isinstance(options, Mapping):
        menu = [(name, desc) for name, desc in options.items()]
    elif isinstance(options, (list, tuple)):
        menu = list(options)
    else:
        raise TypeError(f"route options must be a list of strings, got {type(options).__name__}")
    if not menu:
        raise ValueError("route needs at least one option")
    for item in menu:
        name = item[0] if isinstance(item, tuple) else item
        if not isinstance(name, str) or not name:
            raise TypeError(f"route options must be non-empty strings, got {name!r}")
    prompt = question.strip()
    if context is not None:
        prompt += f"\n\nContext:\n{_as_text(context)}"
    prompt += "\n\nChoose the option that answers the question."
    with runtime_scope():
        chosen = decision.make(prompt, menu, runtime=runtime, max_retries=max_retries)
    return str(chosen)


def conditional(
    condition: Condition,
    context: Any,
    if_true: Callable[[], T],
    if_false: Callable[[], T] | None = None,
    *,
    runtime: Any = None,
) -> T | None:
    """Judge ``condition`` on ``context``; run ``if_true()`` or ``if_false()``."""
    with runtime_scope():
        holds = judge(condition, context, label="Context", runtime=runtime)
        branch = if_true if holds else if_false
        return branch() if branch is not None else None


def repeat_until(
    action: Callable[[], T],
    condition: Condition,
    max_rounds: int = 5,
    *,
    runtime: Any = None,
) -> T:
    """Run ``action`` until ``condition`` holds for its result, at most ``max_rounds`` times.

    Returns the first result that satisfies the condition, else the last one (the last
    round is not judged: its result is returned either way).
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    with runtime_scope():
        result = action()
        for _ in range(max_rounds - 1):
            if judge(condition, result, runtime=runtime):
                return result
            result = action()
    return result


def parallel(thunks: Iterable[Callable[[], Any]], *, max_workers: int | None = None) -> list[Any]:
    """Run zero-argument callables concurrently; results in the order given.

    A bounded thread pool (``max_workers``, default 8) runs the branches; each runs in a
    copy of the caller's context (so the runtime, session writer and call frame carry
    over) inside its own recorded call scope ``parallel[i]``. If branches fail, the
    remaining unstarted ones are cancelled and the first failure (in order) is raised.
    """
    branches = list(thunks)
    for i, fn in enumerate(branches):
        if not callable(fn):
            raise TypeError(f"parallel branch {i} is not callable: {type(fn).__name__}")
    # Inside a resumable run each branch numbers its steps in a scope of its own (its
    # index), so that their identities do not depend on which thread reaches them first.
    # The run is set up through openprogram.durable.steps: if it is not loaded, none runs.
    steps = sys.modules.get("openprogram.durable.steps")
    if steps is not None and steps.current_executor() is not None:
        return steps.parallel_thunks(
            branches, lambda scoped, keys: _run_all(scoped, max_workers, keys)
        )
    return _run_all(branches, max_workers)


def _run_all(
    branches: list[Callable[[], Any]], max_workers: int | None, keys: list[str] | None = None
) -> list[Any]:
    """Run ``branches`` in a bounded thread pool (see :func:`parallel`); ``keys``: the
    branches' step keys inside a resumable run, which their call nodes carry."""
    if max_workers is not None and max_workers < 1:  # 0 too: not "the default"
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    if not branches:
        return []
    workers = min(len(branches), max_workers or DEFAULT_MAX_WORKERS)
    fork = new_fork()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openprogram-parallel") as pool:
        futures: list[Future[Any]] = [
            pool.submit(
                contextvars.copy_context().run, _run_branch, fork, i, fn, keys[i] if keys else None
            )
            for i, fn in enumerate(branches)
        ]
        results: list[Any] = []
        for i, fut in enumerate(futures):
            try:
                results.append(fut.result())
            except BaseException:
                for rest in futures[i + 1 :]:
                    rest.cancel()
                raise
    return results


def _run_branch(fork: str, index: int, fn: Callable[[], Any], key: str | None) -> Any:
    name = f"parallel[{index}]"  # also the branch's replay stream (openprogram.branches)
    options = {STEP_KEY: key} if key is not None else None
    with (
        in_branch(name, fork, index),
        call_scope(name, inputs={"branch": index}, options=options) as frame,
    ):
        return set_output(frame, fn())
