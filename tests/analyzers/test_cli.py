"""``openprogram-lint`` through real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "examples" / "bad"
FIXTURES = Path(__file__).parent / "fixtures"

GOOD = textwrap.dedent(
    """\
    from openprogram import Agent


    class A(Agent):
        method_options = {"f": {"expose": "io"}}

        def f(self) -> str:
            return "ok"
    """
)
BAD_SRC = GOOD.replace('"expose": "io"', '"expsoe": "io"')


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "openprogram_analyzers.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "bad.py").write_text(BAD_SRC)
    return tmp_path


def test_exit_codes_and_text(project: Path) -> None:
    assert run("good.py", cwd=project).returncode == 0
    r = run(cwd=project)
    assert r.returncode == 1
    # a did-you-mean rename is an unsafe fix: no [*]
    assert "bad.py:5:29: OP102 unknown method_options key 'expsoe'" in r.stdout
    r = run("--select", "OP999", cwd=project)
    assert r.returncode == 2 and "unknown rule code or prefix 'OP999'" in r.stderr
    assert run("--format", "xml", cwd=project).returncode == 2
    r = run("missing.py", cwd=project)
    assert r.returncode == 2 and "missing.py: no such file" in r.stderr


def test_json_format_shape(project: Path) -> None:
    r = run("--format", "json", "--no-cache", cwd=project)
    data = json.loads(r.stdout)
    assert [d["code"] for d in data] == ["OP102"]
    d = data[0]
    assert d["path"] == "bad.py" and (d["line"], d["column"], d["end_line"], d["end_column"]) == (
        5,
        29,
        5,
        37,
    )
    assert set(d) == {
        "code",
        "message",
        "severity",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "fix",
    }
    assert d["fix"]["edits"][0]["new_text"] == '"expose"'


def test_sarif_is_valid(project: Path) -> None:
    r = run("--format", "sarif", "--no-cache", str(BAD), cwd=project)
    assert r.returncode == 1
    log = json.loads(r.stdout)
    schema = json.loads((FIXTURES / "sarif-2.1.0-subset.schema.json").read_text())
    jsonschema.validate(log, schema, format_checker=jsonschema.FormatChecker())
    run0 = log["runs"][0]
    ids = [rule["id"] for rule in run0["tool"]["driver"]["rules"]]
    assert len(ids) == len(set(ids)) and "OP203" in ids
    assert all(
        rule["help"]["text"].startswith(rule["id"]) for rule in run0["tool"]["driver"]["rules"]
    )
    codes = {res["ruleId"] for res in run0["results"]}
    assert {"OP001", "OP102", "OP203", "OP306", "OP404", "OP900"} <= codes
    for res in run0["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]


def test_github_format(project: Path) -> None:
    r = run("--format", "github", "--no-cache", cwd=project)
    lines = r.stdout.splitlines()
    assert lines == [
        "::error file=bad.py,line=5,col=29,endLine=5,endColumn=37,title=OP102::OP102 unknown "
        "method_options key 'expsoe' (method 'f'); did you mean 'expose'?"
    ]


def test_examples_bad_show_every_family() -> None:
    r = run("--format", "json", "--no-cache", "examples/bad", cwd=ROOT)
    codes = {d["code"] for d in json.loads(r.stdout)}
    expected = {"OP001", "OP900", *(f"OP10{i}" for i in range(1, 9))}
    expected |= {f"OP20{i}" for i in range(1, 9)} | {f"OP30{i}" for i in range(1, 7)}
    expected |= {f"OP40{i}" for i in range(1, 6)}
    assert expected <= codes, expected - codes


def test_project_and_examples_lint_clean() -> None:
    r = run("--no-cache", "examples", "analyzers", cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_stdin_and_fix_and_diff(project: Path) -> None:
    r = run("-", "--stdin-filename", "x.py", "--format", "json", cwd=project, stdin=BAD_SRC)
    assert json.loads(r.stdout)[0]["path"] == "x.py"
    r = run("-", "--fix", cwd=project, stdin=BAD_SRC)
    assert r.returncode == 1 and r.stdout == BAD_SRC  # the rename is unsafe
    r = run("-", "--fix", "--unsafe-fixes", cwd=project, stdin=BAD_SRC)
    assert r.returncode == 0 and r.stdout == GOOD
    assert run("--diff", "bad.py", cwd=project).stdout == ""
    r = run("--diff", "--unsafe-fixes", "bad.py", cwd=project)
    assert r.returncode == 1 and '+    method_options = {"f": {"expose": "io"}}' in r.stdout
    assert (project / "bad.py").read_text() == BAD_SRC
    r = run("--fix", "--unsafe-fixes", "bad.py", cwd=project)
    assert r.returncode == 0 and (project / "bad.py").read_text() == GOOD


def test_config_discovery_and_per_file_ignores(project: Path) -> None:
    sub = project / "pkg"
    sub.mkdir()
    (sub / "more.py").write_text(BAD_SRC)
    (project / "pyproject.toml").write_text(
        "[tool.openprogram.lint]\nignore = ['OP1']\nextend-select = ['OP102']\n"
        "per-file-ignores = { 'pkg/*.py' = ['OP102'] }\n"
    )
    r = run("--format", "json", "--no-cache", cwd=project)
    assert [(d["path"], d["code"]) for d in json.loads(r.stdout)] == [("bad.py", "OP102")]
    r = run("--format", "json", "--no-cache", cwd=sub)  # config found in a parent directory
    assert json.loads(r.stdout) == []
    (project / "pyproject.toml").write_text("[tool.openprogram.lint]\nexclude = ['bad.py']\n")
    assert run("--no-cache", cwd=project).stdout.count("OP102") == 1  # only pkg/more.py
    (project / "pyproject.toml").write_text("[tool.openprogram.lint]\nselect = 'OP1'\n")
    r = run(cwd=project)
    assert r.returncode == 2 and "select must be a list of strings" in r.stderr
    (project / "pyproject.toml").write_text("[tool.openprogram.lint\n")
    r = run(cwd=project)
    assert r.returncode == 2 and "invalid TOML" in r.stderr


def test_gitignore_and_bad_files(project: Path) -> None:
    (project / ".gitignore").write_text("ignored/\n")
    (project / "ignored").mkdir()
    (project / "ignored" / "x.py").write_text(BAD_SRC)
    (project / "latin.py").write_bytes(b"# openprogram \xff\xfe\n")
    (project / "bin.py").write_bytes(b"openprogram\0\0")
    (project / "loop").mkdir()
    (project / "loop" / "self").symlink_to(project / "loop")
    r = run("--format", "json", "--no-cache", cwd=project)
    found = {(d["path"], d["code"]) for d in json.loads(r.stdout)}
    assert found == {("bad.py", "OP102"), ("latin.py", "OP001"), ("bin.py", "OP001")}
    assert r.returncode == 1


def test_suppressions_and_unused(project: Path) -> None:
    (project / "bad.py").write_text(BAD_SRC.replace('"io"}}', '"io"}}  # noqa: OP102, OP203'))
    r = run("--format", "json", "--no-cache", "bad.py", cwd=project)
    data = json.loads(r.stdout)
    assert [(d["code"], d["message"]) for d in data] == [
        ("OP900", "unused suppression of OP203: no OP203 finding on this line")
    ]
    r = run("--fix", "bad.py", cwd=project)
    assert r.returncode == 0 and "# noqa: OP102\n" in (project / "bad.py").read_text()


def test_explain_and_statistics(project: Path) -> None:
    r = run("--explain", "OP203", cwd=project)
    assert (
        r.returncode == 0
        and r.stdout.startswith("OP203 (mutable-global)")
        and "Example:" in r.stdout
    )
    assert run("--explain", "OP999", cwd=project).returncode == 2
    for nothing in ("", ","):  # names no rule: an error, not a lint of the working folder
        r = run("--explain", nothing, cwd=project)
        assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
        assert f"unknown rule code or name {nothing!r}" in r.stderr
    r = run("--statistics", "--no-cache", cwd=project)
    assert r.stdout.split() == ["1", "OP102", "unknown-option-key"]  # no safe fix


def test_cache_hit_and_miss(project: Path) -> None:
    cache_dir = project / ".openprogram-lint-cache"
    assert run(cwd=project).returncode == 1
    files = list(cache_dir.glob("*.json"))
    assert len(files) == 1
    before = files[0].stat().st_mtime_ns, files[0].read_text()
    # no change: served from the cache, nothing rewritten, same result
    r = run("--format", "json", cwd=project)
    assert [d["code"] for d in json.loads(r.stdout)] == ["OP102"]
    assert (files[0].stat().st_mtime_ns, files[0].read_text()) == before
    # an edit: a miss, new result, cache rewritten
    (project / "bad.py").write_text(GOOD + "\n")
    r = run(cwd=project)
    assert r.returncode == 0
    assert files[0].read_text() != before[1]
    # a config change: another cache file
    (project / "pyproject.toml").write_text("[tool.openprogram.lint]\nignore = ['OP4']\n")
    assert run(cwd=project).returncode == 0
    assert len(list(cache_dir.glob("*.json"))) == 2
    # a cache hit returns the cached findings even for files the stat path skips
    shutil.rmtree(cache_dir)
    assert run("--no-cache", cwd=project).returncode == 0
    assert not cache_dir.exists()


def test_replayed_output_follows_every_input(project: Path) -> None:
    """The warm path replays the last output only when nothing it depends on changed."""
    cache_dir = project / ".openprogram-lint-cache"
    first = run(cwd=project)
    assert first.returncode == 1 and "OP102" in first.stdout
    assert len(list(cache_dir.glob("*.last"))) == 1
    assert len(list(cache_dir.glob("settings-*"))) == 1
    # identical run: identical output and exit code (replayed)
    again = run(cwd=project)
    assert (again.returncode, again.stdout) == (first.returncode, first.stdout)
    # another output format is not served the text output
    r = run("--format", "json", cwd=project)
    assert [d["code"] for d in json.loads(r.stdout)] == ["OP102"]
    assert run("--statistics", cwd=project).stdout.split()[:2] == ["1", "OP102"]
    assert run(cwd=project).stdout == first.stdout  # the memo is the text run's again
    # an edit that keeps the size (only mtime/ctime change) is seen
    (project / "bad.py").write_text(BAD_SRC.replace("expsoe", "exposs"))
    r = run(cwd=project)
    assert r.returncode == 1 and "'exposs'" in r.stdout
    # a new file is seen
    (project / "more.py").write_text(BAD_SRC.replace("expsoe", "exspoe"))
    assert "more.py" in run(cwd=project).stdout
    # an exclude in the config changes discovery
    (project / "pyproject.toml").write_text("[tool.openprogram.lint]\nexclude = ['more.py']\n")
    r = run(cwd=project)
    assert "more.py" not in r.stdout and "bad.py" in r.stdout
    # a selection on the command line changes results
    assert run("--ignore", "OP1", cwd=project).returncode == 0
    assert run(cwd=project).returncode == 1
    # a broken config is reported even after warm runs
    (project / "pyproject.toml").write_text("[tool.openprogram.lint]\nselect = ['OP999']\n")
    assert run(cwd=project).returncode == 2


def test_store_option_reports_op209(project: Path, tmp_path: Path) -> None:
    import sqlite3

    from openprogram.store.runs import open_run_store

    store = tmp_path / "store"
    store.mkdir()
    open_run_store(store).close()  # the real store's tables
    db = sqlite3.connect(store / "openprogram.db")
    db.execute(
        "INSERT INTO runs (id, entry, function_qualname, status, created_at, updated_at) "
        "VALUES ('r', 'p.py:report', 'R.report', 'paused', 0, 0)"
    )
    db.execute(
        "INSERT INTO run_steps VALUES ('r', 'old#0', '', 0, 'step', 'old', 0, 'h', 'completed', NULL, 0, NULL)"
    )
    db.commit()
    db.close()
    (project / "p.py").write_text(
        "from openprogram import Agent, step\n\n\nclass R(Agent):\n"
        "    method_options = {'report': {'resumable': True}}\n\n"
        "    def report(self) -> str:\n        return step('new', str)\n"
    )
    r = run("--store", str(store), "--format", "json", "p.py", cwd=project)
    assert [d["code"] for d in json.loads(r.stdout)] == ["OP209"]
    assert run("p.py", "--no-cache", cwd=project).returncode == 0


def test_parallel_run_matches_sequential(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"m{i:02}.py").write_text(BAD_SRC if i % 3 == 0 else GOOD)
    r = run("--format", "json", "--no-cache", cwd=tmp_path)
    data = json.loads(r.stdout)
    assert [d["path"] for d in data] == [f"m{i:02}.py" for i in range(0, 40, 3)]


def test_console_script_exists() -> None:
    script = Path(sys.executable).parent / "openprogram-lint"
    r = subprocess.run(
        [str(script), "--explain", "OP001"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0 and "OP001" in r.stdout
