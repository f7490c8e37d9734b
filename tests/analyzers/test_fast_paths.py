"""The analyzer's shortcuts give the results of the slow paths they replace.

- ``dataclass_code``: libcst and the analyzer imported with stored dataclass code (a real
  ``openprogram-lint`` subprocess, its bytecode cache in a temporary directory);
- ``literals.evaluated``: literal values without ``ast.literal_eval``;
- ``LintConfig.enabled_codes``: remembered per configuration, never across configurations.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import libcst as cst
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram_analyzers import LintConfig
from openprogram_analyzers.literals import evaluated

PROGRAM = textwrap.dedent(
    """\
    import time as t
    from openprogram import Agent, step


    class Writer(Agent):
        method_options = {"draft": {"expsoe": "io"}, "run": {"resumable": True}}

        def draft(self, topic: str) -> str:
            return topic

        def run(self) -> str:
            return step("draft", self.draft, str(t.time()))
    """
)


def _lint(
    cwd: Path, pycache: Path, *, write_bytecode: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "openprogram_analyzers.cli",
            "--no-cache",
            "--format",
            "json",
            "prog.py",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def _stored_file(pycache: Path) -> list[Path]:
    return sorted(pycache.rglob("dataclass-code.*.marshal"))


def test_lint_reuses_dataclass_code_with_identical_findings(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    pycache = tmp_path / "pycache"
    first = _lint(tmp_path, pycache)
    assert first.returncode == 1, first.stderr
    assert '"OP102"' in first.stdout and '"OP205"' in first.stdout
    [stored] = _stored_file(pycache)
    size = stored.stat().st_size
    second = _lint(tmp_path, pycache)  # every text found: nothing compiled, nothing written
    assert (second.returncode, second.stdout, second.stderr) == (1, first.stdout, "")
    assert stored.stat().st_size == size
    stored.write_bytes(b"\x00garbage")  # damaged: ignored, then rewritten
    third = _lint(tmp_path, pycache)
    assert (third.returncode, third.stdout, third.stderr) == (1, first.stdout, "")
    assert stored.stat().st_size == size


def test_no_dataclass_code_written_when_bytecode_writing_is_off(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    pycache = tmp_path / "pycache"
    result = _lint(tmp_path, pycache, write_bytecode=False)
    assert result.returncode == 1 and '"OP102"' in result.stdout
    assert _stored_file(pycache) == []


def test_dataclasses_made_with_stored_code_behave_the_same(tmp_path: Path) -> None:
    """Twice in fresh processes (compiled, then from the stored code): same behaviour, and
    ``dataclasses`` is itself again afterwards."""
    script = textwrap.dedent(
        """\
        import dataclasses
        from openprogram_analyzers.dataclass_code import reuse_dataclass_code

        with reuse_dataclass_code():
            @dataclasses.dataclass(frozen=True, order=True)
            class Point:
                x: int
                y: int = 2
                tags: tuple[str, ...] = ()

        p = Point(1)
        try:
            p.x = 5
        except dataclasses.FrozenInstanceError:
            frozen = True
        print(repr(p), p == Point(1, 2), p < Point(2), hash(p) == hash(Point(1)), frozen,
              "exec" in vars(dataclasses))
        """
    )
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        ).stdout
        for _ in range(2)
    ]
    assert outputs[0] == outputs[1] == "Point(x=1, y=2, tags=()) True True True True False\n"
    assert len(_stored_file(tmp_path / "pycache")) == 1


def test_threads_defining_dataclasses_at_once_each_get_the_stored_code(tmp_path: Path) -> None:
    """Runs started from several threads check their Programs at once, each inside
    ``reuse_dataclass_code``: no thread removes the patch under another (an
    ``AttributeError`` on ``del dataclasses.exec``), every class works, and ``dataclasses``
    is itself again afterwards."""
    script = textwrap.dedent(
        """\
        import dataclasses, sys, threading
        from openprogram_analyzers.dataclass_code import reuse_dataclass_code

        sys.setswitchinterval(1e-6)  # switch threads as often as possible
        start = threading.Barrier(8)
        errors, made = [], []

        def define(n):
            start.wait()
            try:
                for i in range(25):
                    with reuse_dataclass_code():
                        cls = dataclasses.make_dataclass(f"C{n}_{i}", [("x", int), ("y", int)])
                    made.append(cls(n, i) == cls(n, i) and repr(cls(1, 2)).endswith("(x=1, y=2)"))
            except Exception as exc:
                errors.append(repr(exc))

        threads = [threading.Thread(target=define, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(errors[:1], len(made), all(made), "exec" in vars(dataclasses))
        """
    )
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out == "[] 200 True False\n"


def test_attrs_classes_made_with_stored_code_behave_the_same(tmp_path: Path) -> None:
    """``reuse_dataclass_code(attrs=True)`` (the language server's protocol types): twice in
    fresh processes, compiled then from the stored code, nothing compiled the second
    time; the classes behave the same (a generated method's globals, validators,
    converters, ordering, hashing, frozen slots), and
    ``attrs`` is itself again afterwards. A frozen class's methods (a generated ``__hash__``)
    are compiled every time, the others' come from the stored file."""
    script = textwrap.dedent(
        """        import attr._make
        import attrs
        from openprogram_analyzers.dataclass_code import reuse_dataclass_code

        with reuse_dataclass_code(attrs=True):
            @attrs.frozen(order=True)
            class Point:
                x: int = attrs.field(validator=attrs.validators.instance_of(int))
                y: int = attrs.field(default=2, converter=int)
                tags: tuple = ()

            @attrs.define(order=True)
            class Count:
                n: int = attrs.field(converter=int, validator=attrs.validators.ge(0))

        c = Count("4")
        c.n = "5"  # converted and validated on setattr too
        try:
            c.n = -1
        except ValueError:
            checked = True
        p = Point(1, "3")
        try:
            p.x = 5
        except attrs.exceptions.FrozenInstanceError:
            frozen = True
        try:
            Point("a")
        except TypeError:
            validated = True
        print(repr(p), p == Point(1, 3), p < Point(2), hash(p) == hash(Point(1, 3)), frozen,
              validated, repr(c), checked, c < Count(6), Count.__hash__, attrs.asdict(c),
              "compile" in vars(attr._make))
        """
    )
    pycache = tmp_path / "pycache"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(pycache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run() -> str:
        return subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        ).stdout

    first = run()
    assert first == (
        "Point(x=1, y=3, tags=()) True True True True True Count(n=5) True True None "
        "{'n': 5} False\n"
    )
    [stored] = _stored_file(pycache)
    size = stored.stat().st_size
    assert run() == first
    assert stored.stat().st_size == size  # every method's text found: nothing written


_BODY = st.text(alphabet=st.sampled_from(list("ab é\"'\\\n\r\t{}xyz0")), min_size=0, max_size=12)


@settings(max_examples=400, deadline=None)
@given(
    prefix=st.sampled_from(["", "u", "U", "r", "R", "b", "B", "rb", "Rb", "br"]),
    quote=st.sampled_from(["'", '"', "'''", '"""']),
    body=_BODY,
)
def test_string_literal_values_match_literal_eval(prefix: str, quote: str, body: str) -> None:
    source = f"{prefix}{quote}{body}{quote}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences: not the point here
            expected = ast.literal_eval(source)
        node = cst.parse_expression(source)
    except (SyntaxError, ValueError, cst.ParserSyntaxError):
        return  # not a literal Python accepts
    if not isinstance(node, cst.SimpleString):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback is literal_eval
        value = evaluated(node)
    assert (type(value), value) == (type(expected), expected)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.integers(min_value=0, max_value=10**30).map(str),
        st.sampled_from(
            ["0", "00", "007", "1_000", "0x1F", "0o17", "0b101", "1.5", "1e3", ".5", "5.", "1_0.5"]
        ),
    )
)
def test_number_literal_values_match_literal_eval(source: str) -> None:
    try:
        expected = ast.literal_eval(source)
    except (SyntaxError, ValueError):
        return
    node = cst.parse_expression(source)
    assert isinstance(node, (cst.Integer, cst.Float))
    value = evaluated(node)
    assert (type(value), value) == (type(expected), expected)


def test_enabled_codes_are_remembered_per_configuration_only() -> None:
    codes = ("OP101", "OP102", "OP205")
    cfg = LintConfig()
    assert cfg.enabled_codes(codes, "a.py") == frozenset(codes)
    narrower = cfg.with_overrides(ignore=["OP1"])
    assert narrower.enabled_codes(codes, "a.py") == {"OP205"}
    assert cfg.enabled_codes(codes, "a.py") == frozenset(codes)
    per_file = LintConfig(per_file_ignores={"tests/*.py": ("OP2",)})
    assert per_file.enabled_codes(codes, "tests/t.py") == {"OP101", "OP102"}
    assert per_file.enabled_codes(codes, "src/t.py") == frozenset(codes)
    assert LintConfig() == cfg  # the memo is not part of the configuration


def test_analysis_leaves_no_reference_cycles() -> None:
    """Every analysis pauses the cyclic GC while it analyses a file (lint, the language
    server's worker, the API): that is only safe while an analysis (findings, fixes,
    positions, the Program model) frees everything it built by reference counting.
    Checked on every example and fixture, in a fresh process."""
    script = textwrap.dedent(
        """\
        import gc, sys
        from pathlib import Path
        from openprogram_analyzers.analysis import analyze_with_model

        paths = [Path(p) for p in sys.argv[1:]]
        analyze_with_model(paths[0].read_text(), str(paths[0]))  # first use: caches fill
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        for path in paths:
            findings, model = analyze_with_model(path.read_text(), str(path))
            del findings, model
            left = gc.collect()
            kinds = sorted({type(o).__name__ for o in gc.garbage})
            print(f"{path.name} {left} {' '.join(kinds[:8])}")
            gc.garbage.clear()
        """
    )
    root = Path(__file__).resolve().parents[2]
    files = sorted(str(p) for p in (root / "examples").rglob("*.py"))
    files += sorted(str(p) for p in (Path(__file__).parent / "fixtures").rglob("*.py"))
    out = subprocess.run(
        [sys.executable, "-c", script, *files], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) == len(files) > 10
    assert [line for line in out if line.split()[1] != "0"] == []


def test_an_analysis_leaves_the_cyclic_gc_as_it_found_it() -> None:
    """Paused during the analysis (``analysis.cyclic_gc_paused``), on again after it, also
    after a file that does not parse; and still off after it where the caller had it off."""
    import gc

    from openprogram_analyzers.analysis import analyze_source

    assert gc.isenabled()
    seen: list[bool] = []
    real_parse = cst.parse_module

    def parse(source: str) -> cst.Module:
        seen.append(gc.isenabled())
        return real_parse(source)

    cst.parse_module = parse  # type: ignore[assignment]
    try:
        assert analyze_source(PROGRAM, "prog.py", prefilter=False)
        assert analyze_source("def f(:\n", "bad.py", prefilter=False)
        assert gc.isenabled() and seen == [False]
        gc.disable()
        try:
            analyze_source(PROGRAM, "prog.py", prefilter=False)
            assert not gc.isenabled() and seen == [False, False]
        finally:
            gc.enable()
    finally:
        cst.parse_module = real_parse  # type: ignore[assignment]
