"""``goal``: the third primitive beside ``llm`` and ``agent`` — an agent loop toward an
objective that stops when a recorded decision judges the objective met.

Each iteration is one :func:`~openprogram.agentic_programming.calls.agent` turn (tools
allowed) that sees the objective and the previous attempt; after it, a yes/no decision
(:func:`~openprogram.agentic_programming.control_flow.judge`, one recorded model call)
judges whether the objective is met. At most ``max_iterations`` turns run; the last
turn is not judged (its result is returned either way), as in ``repeat_until``.
Inside an Agent method the turns, like the judgements, carry the Agent's instructions
(unless ``system=`` is given), Context and model (:func:`~openprogram.agents.enclosing_agent_request`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from openprogram.agentic_programming.calls import agent
from openprogram.agentic_programming.control_flow import Condition, judge
from openprogram.scope import call_scope, current_runtime, set_output

__all__ = ["goal"]


def _prompt(objective: str, previous: str | None, iteration: int) -> str:
    if previous is None:
        return f"Objective: {objective}\n\nWork toward this objective and report the result."
    return (
        f"Objective: {objective}\n\n"
        f"Your previous attempt (iteration {iteration}) did not meet the objective yet:\n"
        f"{previous}\n\nContinue working toward the objective and report the result."
    )


def goal(
    objective: str,
    *,
    max_iterations: int = 5,
    check: Condition | None = None,
    tools: Sequence[Any] | None = None,
    system: str | None = None,
    runtime: Any = None,
) -> Any:
    """Work toward ``objective`` in agent turns until a decision judges it met.

    ``check`` is the condition judged on each result (default: "the objective is met");
    a string is judged by the model, a callable in Python. ``tools`` as for ``agent``
    (``None`` offers the registered tools, ``[]`` none). Returns the last turn's result.
    """
    if not isinstance(objective, str) or not objective.strip():
        raise ValueError("goal needs a non-empty objective string")
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    condition: Condition = check if check is not None else f"The objective is met: {objective}"
    with ExitStack() as stack:
        rt = runtime if runtime is not None else current_runtime()
        if rt is None:  # one runtime for the whole loop, closed when it ends
            from openprogram.runtime import create_runtime

            rt = create_runtime()
            stack.callback(rt.close)
        frame = stack.enter_context(
            call_scope(
                "goal",
                inputs={"objective": objective, "max_iterations": max_iterations},
                runtime=rt,
            )
        )
        from openprogram.agents import enclosing_agent_request

        agent_system, agent_context, agent_model = enclosing_agent_request() or (None, None, None)
        result: Any = None
        for iteration in range(1, max_iterations + 1):
            previous = None if iteration == 1 else str(result)
            result = agent(
                _prompt(objective, previous, iteration - 1),
                tools=tools,
                system=system if system is not None else agent_system,
                context=agent_context,
                model=agent_model,
                runtime=rt,
            )
            if iteration == max_iterations:
                break
            if judge(condition, result, label="Result", runtime=rt):
                break
        return set_output(frame, result)
