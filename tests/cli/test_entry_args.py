"""``openprogram run`` / ``submit`` check ``--args`` against the entry's parameters before
anything is recorded: unknown names (with a did-you-mean), missing required ones, and the
types of simple annotations (real CLI subprocesses, real SQLite stores)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_programs import cli, cli_json, python

PROGRAM = """\
from typing import Literal

from openprogram import Agent


def main(n: int, names: list[str] | None = None, ratio: float = 1.0,
         mode: Literal["fast", "slow"] = "fast", anything=None) -> dict:
    return {"n": n, "names": names, "ratio": ratio, "mode": mode}


class Counter(Agent):
    def count(self, items: list[int], label: "str | None" = None, **rest: object) -> int:
        return len(items)


def pos(a: int, /, b: int = 0) -> int:
    return a * 10 + b


count = Counter().count
PROGRAM_ENTRIES = ["main", "count", "pos"]
"""

# the same Agent method, its annotations left as strings (PEP 563)
POSTPONED = "from __future__ import annotations\n\n" + PROGRAM


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "later.py").write_text(POSTPONED, encoding="utf-8")
    return tmp_path


REJECTED = [
    ("prog.py:main", '{"n": "3"}', "argument 'n' expects int, got string \"3\""),
    ("prog.py:main", '{"n": true}', "argument 'n' expects int, got boolean true"),
    ("prog.py:main", '{"n": 2.5}', "argument 'n' expects int, got number 2.5"),
    ("prog.py:main", '{"n": null}', "argument 'n' expects int, got null"),
    (
        "prog.py:main",
        '{"n": 1, "names": ["a", 2]}',
        "argument 'names' expects list[str] | None, got integer 2 at names[1]",
    ),
    (
        "prog.py:main",
        '{"n": 1, "names": "a"}',
        "argument 'names' expects list[str] | None, got string \"a\"",
    ),
    (
        "prog.py:main",
        '{"n": 1, "mode": "medium"}',
        "argument 'mode' expects Literal['fast', 'slow'], got string \"medium\"",
    ),
    ("prog.py:main", '{"n": 1, "ratio": "0.5"}', "argument 'ratio' expects float"),
    ("prog.py:main", '{"n": 1, "nmaes": []}', "unknown argument 'nmaes' (did you mean 'names'?)"),
    (
        "prog.py:main",
        '{"n": 1, "zzz": 0}',
        "unknown argument 'zzz' (it takes n, names, ratio, mode, anything)",
    ),
    ("prog.py:main", "{}", "missing required argument 'n' (int)"),
    ("prog.py:count", '{"items": [1, "2"]}', 'expects list[int], got string "2" at items[1]'),
    ("later.py:count", '{"items": [1, "2"]}', 'expects list[int], got string "2" at items[1]'),
    ("later.py:main", '{"n": "3"}', "argument 'n' expects int, got string \"3\""),
    # a positional-only parameter is given by name, and checked as the others are
    (
        "prog.py:pos",
        '{"b": 2}',
        "pos(a: int, /, b: int = 0) -> int: missing required argument 'a' (int)",
    ),
    ("prog.py:pos", '{"a": "1"}', "argument 'a' expects int, got string \"1\""),
    ("prog.py:pos", '{"a": 1, "c": 2}', "unknown argument 'c' (it takes a, b)"),
    # not an object: named by its JSON type, as the value of an argument is
    ("prog.py:main", "null", "--args must be a JSON object, got null"),
    ("prog.py:main", "[1]", "--args must be a JSON object, got array"),
    ("prog.py:main", '"n"', "--args must be a JSON object, got string"),
    ("prog.py:main", "3", "--args must be a JSON object, got integer"),
    # a key given twice is refused, not the last one kept (in a nested object too)
    ("prog.py:main", '{"n": 1, "n": 2}', '--args gives the key "n" twice'),
    ("prog.py:main", '{"n": 1, "anything": {"x": 1, "x": 2}}', '--args gives the key "x" twice'),
]


@pytest.mark.parametrize(("entry", "args", "message"), REJECTED)
@pytest.mark.parametrize("command", ["run", "submit"])
def test_wrong_args_exit_2_before_anything_is_recorded(
    work: Path, command: str, entry: str, args: str, message: str
) -> None:
    proc = cli(command, entry, "--args", args, "--store", "st", cwd=work)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openprogram: error: ") and message in line, line
    assert not (work / "st").exists()  # no store, no run, no queued run


def test_json_error_names_every_problem(work: Path) -> None:
    code, out = cli_json(
        "submit", "prog.py:main", "--args", '{"n": "1", "names": [1], "nam": 1}', cwd=work
    )
    assert code == 2
    assert out["error"].endswith(
        ": unknown argument 'nam' (did you mean 'names'?); "
        "argument 'n' expects int, got string \"1\"; "
        "argument 'names' expects list[str] | None, got integer 1 at names[0]"
    )


@pytest.mark.parametrize(
    ("entry", "args", "result"),
    [
        # an int for a float, null where None is allowed, an unannotated parameter
        (
            "prog.py:main",
            '{"n": 1, "ratio": 2, "names": null, "anything": {"x": [1]}}',
            {"n": 1, "names": None, "ratio": 2, "mode": "fast"},
        ),
        (
            "prog.py:main",
            '{"n": 1, "names": ["a"], "mode": "slow"}',
            {"n": 1, "names": ["a"], "ratio": 1.0, "mode": "slow"},
        ),
        ("later.py:count", '{"items": [1, 2], "label": null, "other": "x"}', 2),  # **rest
        ("prog.py:pos", '{"a": 1, "b": 2}', 12),  # positional-only, passed by position
        ("prog.py:pos", '{"a": 1}', 10),
    ],
)
def test_fitting_args_run(work: Path, entry: str, args: str, result: object) -> None:
    code, out = cli_json("run", entry, "--args", args, "--store", "st", cwd=work)
    assert (code, out["status"], out.get("result")) == (0, "completed", result), out


@pytest.mark.parametrize("program", ["prog.py", "later.py"])
def test_the_message_starts_with_the_signature_as_the_def_spells_it(
    work: Path, program: str
) -> None:
    """The entry's signature as its ``def`` is written (no quotes around postponed or
    string annotations, no ``self``): the prefix the language server's Run check shows."""
    proc = cli("run", f"{program}:count", "--args", '{"items": "x"}', "--store", "st", cwd=work)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.strip() == (
        "openprogram: error: count(items: list[int], label: str | None = None, "
        "**rest: object) -> int: argument 'items' expects list[int], got string \"x\""
    )


def test_text_the_output_cannot_encode_is_escaped_not_a_traceback(work: Path) -> None:
    """A lone surrogate is valid JSON (``"\\ud800"``) but not UTF-8: the run completes and
    is reported as completed (exit 0), the text escaped; ``--json`` stays valid JSON that
    gives the same string back."""
    names = '{"n": 1, "names": ["\\ud800", "\u00e9\\udfff"]}'
    proc = cli("run", "prog.py:main", "--args", names, "--store", "st", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and '"\\ud800"' in proc.stdout
    code, out = cli_json("run", "prog.py:main", "--args", names, "--store", "st", cwd=work)
    assert code == 0 and out["result"]["names"] == ["\ud800", "\u00e9\udfff"], out


DIRECT = """
from openprogram import step
from openprogram.durable import resumable


def scale(x: int) -> int:
    return x * 10


@resumable
def pos(a: int, /, b: int = 0) -> int:
    return step("scale", scale, a) + b


print(pos(4, b=2), pos(5))
"""


def test_a_direct_call_with_a_positional_only_parameter_runs_durably(tmp_path: Path) -> None:
    """``pos(4, b=2)`` of a resumable ``def pos(a: int, /, b: int = 0)``, called from
    Python: refused ("cannot run durably: positional-only parameter 'a'") though the CLI
    runs the same entry; it runs durably."""
    (tmp_path / "direct.py").write_text(DIRECT, encoding="utf-8")
    proc = python("direct.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["42", "50"], proc.stdout
    shown = cli("runs", "--store", "st", cwd=tmp_path)
    assert shown.stdout.count("completed") == 2, shown.stdout
