"""A Program file inside a package (``shop/orders/flow.py``, each folder with an
``__init__.py``) runs as ``python -m shop.orders.flow`` would: its relative imports
(``from ..helpers import act``, ``from .. import helpers``) resolve, for ``run --args``,
``resume`` from another folder, ``submit`` + ``worker``; and ``openprogram-lint`` follows
the same imports to the same files, so lint and run refuse the same helper. Real
subprocesses, as a user types them."""

from __future__ import annotations

from pathlib import Path

from cli_programs import cli, cli_json
from cli_programs import lint as lint_cli

HELPERS = '''
import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def act(name: str, value: int) -> int:
    """Record a call; fail while fail_<name> exists."""
    with open(os.path.join(HERE, "calls.log"), "a", encoding="utf-8") as f:
        f.write(f"{name} {value}\\n")
    if os.path.exists(os.path.join(HERE, "fail_" + name)):
        raise RuntimeError("injected failure in " + name)
    return value + 1


def now() -> float:
    return time.time()
'''

FLOW = """
from openprogram import step
from openprogram.durable import resumable

from .. import helpers
from ..helpers import act
from .rates import MARKUP  # a constant, not a class (OP208 is for classes)


@resumable
def main(n: int = 1) -> dict:
    a = step("a", act, "a", n)
    b = step("b", helpers.act, "b", a * MARKUP)
    return {"total": b}


PROGRAM_ENTRIES = ["main"]
"""

STAMPED = """
from openprogram.durable import resumable

from .. import helpers


@resumable
def stamped() -> float:
    return helpers.now()


PROGRAM_ENTRIES = ["stamped"]
"""


def _package(root: Path) -> Path:
    """``root/shop/{__init__,helpers}.py`` and ``root/shop/orders/{__init__,rates,flow,
    stamped}.py``; returns ``root``."""
    orders = root / "shop" / "orders"
    orders.mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (orders / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (orders / "rates.py").write_text("MARKUP = 10\n", encoding="utf-8")
    (orders / "flow.py").write_text(FLOW, encoding="utf-8")
    (orders / "stamped.py").write_text(STAMPED, encoding="utf-8")
    return root


def _calls(root: Path) -> list[str]:
    return (root / "shop" / "calls.log").read_text(encoding="utf-8").splitlines()


def test_a_package_module_runs_fails_and_resumes_from_another_folder(tmp_path: Path) -> None:
    root = _package(tmp_path)
    (root / "shop" / "fail_b").touch()
    code, out = cli_json(
        "run", "shop/orders/flow.py:main", "--args", '{"n": 2}', "--store", "st", cwd=root
    )
    assert code == 1 and out["status"] == "failed", out
    assert "injected failure in b" in out["error"]
    (root / "shop" / "fail_b").unlink()
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    code, again = cli_json("resume", out["run_id"], "--store", "../st", cwd=elsewhere)
    assert code == 0 and again["status"] == "completed" and again["result"] == {"total": 31}
    assert _calls(root) == ["a 2", "b 30", "b 30"]


def test_a_package_module_runs_on_a_worker(tmp_path: Path) -> None:
    root = _package(tmp_path)
    code, queued = cli_json("submit", "shop/orders/flow.py:main", "--store", "st", cwd=root)
    assert code == 0 and queued["status"] == "queued", queued
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    proc = cli("worker", "--exit-when-idle", "--poll", "0.05", "--store", "../st", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert f"run {queued['run_id']} completed" in proc.stdout, (proc.stdout, proc.stderr)
    assert _calls(root) == ["a 1", "b 20"]


def test_lint_and_run_follow_relative_imports_to_the_same_helper(tmp_path: Path) -> None:
    root = _package(tmp_path)
    lint = lint_cli("shop/orders/stamped.py", cwd=root)
    finding = (
        f"shop/helpers.py:{_line(HELPERS, 'return time.time()')}:12: OP205 non-deterministic "
        "call time.time() in helper 'now' outside a step"
    )
    note = f"shop/orders/stamped.py:{_line(STAMPED, 'return helpers.now()')}:12: note: "
    assert lint.returncode == 1 and finding in lint.stdout, (lint.stdout, lint.stderr)
    assert f"{note}'stamped' calls 'helpers.now' here" in lint.stdout
    run = cli("run", "shop/orders/stamped.py:stamped", "--store", "st", cwd=root)
    assert run.returncode == 2 and finding in run.stderr, run.stderr
    assert note in run.stderr and run.stderr.count("OP205") == 1


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)
