"""The list form ``parallel([thunks])`` in a resumable run, through ``openprogram run`` and
``resume`` subprocesses: each branch numbers its steps in a scope of its own, so the order
in which threads reach their steps never changes a step's identity, and a branch's
finished step is saved even when a sibling branch fails."""

from __future__ import annotations

import sys
from pathlib import Path

from cli_programs import calls, cli_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from durable_programs import HEADER

PROGRAM = (
    HEADER
    + '''
import time

from openprogram.durable import resumable


def wait_turn(index: int) -> None:
    """Wait until the branches listed before ``index`` in the file ``order`` are done."""
    with open(os.path.join(HERE, "order"), encoding="utf-8") as f:  # noqa: OP206
        order = [int(x) for x in f.read().split()]
    for before in order[: order.index(index)]:
        while not os.path.exists(os.path.join(HERE, "done_" + str(before))):  # noqa: OP206
            time.sleep(0.01)


def gated(index: int, call) -> dict:
    """``call()`` once the branches before ``index`` are done; then this one is done."""
    wait_turn(index)
    try:
        return call()
    finally:
        with open(os.path.join(HERE, "done_" + str(index)), "w"):  # noqa: OP206
            pass


@resumable
def fan() -> list:
    return parallel(
        [
            lambda: gated(0, lambda: step("ask", act, "ask", 0)),
            lambda: gated(1, lambda: step("pick", act, "pick", 1)),
            lambda: gated(2, lambda: step("boom", act, "boom", 2)),
        ]
    )


PROGRAM_ENTRIES = ["fan"]
'''
)


def _execute(work: Path, order: str, *command: str) -> tuple[int, dict]:
    """One execution whose branches reach their steps in ``order`` (branch indexes)."""
    for done in work.glob("done_*"):
        done.unlink()
    (work / "order").write_text(order, encoding="utf-8")
    return cli_json(*command, "--store", "st", cwd=work)


def test_list_parallel_steps_resume_whatever_order_the_branches_reach_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "fail_boom").touch()
    code, out = _execute(tmp_path, "1 0 2", "run", "prog.py:fan")
    assert code == 1 and out["status"] == "failed", out
    assert "injected failure in boom" in out["error"]
    run_id = out["run_id"]
    # resumed in other orders, still failing: the finished branches replay, never re-run
    for order in ("0 1 2", "2 0 1", "0 2 1"):
        code, out = _execute(tmp_path, order, "resume", run_id)
        assert code == 1 and out["status"] == "failed", (order, out)
        assert "injected failure in boom" in out["error"]
    (tmp_path / "fail_boom").unlink()
    code, out = _execute(tmp_path, "2 1 0", "resume", run_id)
    assert code == 0, out
    assert out["result"] == [
        {"name": "ask", "value": 0},
        {"name": "pick", "value": 1},
        {"name": "boom", "value": 2},
    ]
    log = calls(tmp_path)
    assert log.count("ask 0") == 1 and log.count("pick 1") == 1, log
    assert log.count("boom 2") == 5, log
    # an unchanged resume of the completed run is refused, as for any completed run
    code, out = _execute(tmp_path, "0 1 2", "resume", run_id)
    assert code == 2 and "completed" in out["error"]
