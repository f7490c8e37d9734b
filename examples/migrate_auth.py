"""Migrate the auth module: a Planner-style workflow built from control-flow primitives.

    OPENPROGRAM_MODEL=openai:gpt-4.1-mini openprogram run examples/migrate_auth.py:migrate_auth
    openprogram run examples/migrate_auth.py:migrate_auth --args '{"plan": true}'

``plan=False`` runs the hand-written workflow below (the one the seed shows the Planner
writing); ``plan=True`` lets a Planner write its own workflow for the same task, with
read-only tools over ``workspace``, and revise it after failures. Either way every
``llm``/``agent`` call and every judgement is checkpointed, so a rerun after a change
reuses the calls before it.
"""

from __future__ import annotations

from typing import Any

from openprogram.programs.workflow import plan_and_run, run_workflow_code

TASK = "Migrate the auth module (openprogram/auth/) to the new client."

MIGRATE_AUTH_WORKFLOW = """
def workflow():
    # Step 1: find the files, validated and widened if needed
    files = validate_and_retry(
        action=lambda: agent("Find all files related to openprogram/auth/"),
        check="at least 5 files, including oauth-related ones",
        retry=lambda: agent("Widen the search: include openid- and token-related files"),
        max_retries=2,
    )

    # Step 2: analyse
    analysis = agent("Analyse the dependencies and interfaces of these files: " + files)

    # Step 3: choose a strategy
    strategy = route(
        question="Given the analysis, which migration strategy fits?",
        options=["direct migration", "refactor then migrate", "phased migration"],
        context=analysis,
    )

    # Step 4: branch on the strategy
    return conditional(
        condition="the chosen strategy is complex (refactor first, or phased)",
        context=strategy,
        if_true=lambda: agent("Write a detailed multi-phase migration plan: " + analysis),
        if_false=lambda: agent("Write brief direct migration steps: " + analysis),
    )
"""


def migrate_auth(plan: bool = False, workspace: str = ".", runtime: Any = None) -> str:
    """Produce a migration plan for the auth module."""
    if plan:
        return str(plan_and_run(TASK, runtime=runtime, workspace=workspace).result)
    return str(run_workflow_code(MIGRATE_AUTH_WORKFLOW, runtime=runtime))


PROGRAM_ENTRIES = ["migrate_auth"]
