"""``openprogram-lint`` options CI and pre-commit depend on, through real subprocesses:
excludes for named files, git ignore rules, extend-*, report formats and flags, the
cache keyed on content, ``--store`` errors."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

LINT = shutil.which("openprogram-lint", path=str(Path(sys.executable).parent))

BAD = (
    "from openprogram import Agent\n\n\nclass A(Agent):\n"
    '    method_options = {"f": {"expsoe": "io"}}\n\n'
    "    def f(self) -> str:\n        return 'x'\n"
)
DYNAMIC = (
    "from openprogram import Agent\n\nOPTS = {}\n\n\nclass A(Agent):\n"
    "    method_options = OPTS\n"
)  # OP108 (info): not a literal


def lint(*args: str, cwd: Path, cache: bool = False) -> subprocess.CompletedProcess[str]:
    assert LINT is not None
    cmd = [LINT, *args] if cache else [LINT, "--no-cache", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def codes(r: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    return sorted((f["path"], f["code"]) for f in json.loads(r.stdout))


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.openprogram.lint]\nexclude = ['examples/bad/**']\n"
    )
    (tmp_path / "examples" / "bad").mkdir(parents=True)
    (tmp_path / "examples" / "bad" / "typo.py").write_text(BAD)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def test_force_exclude_applies_exclude_to_named_files(project: Path) -> None:
    named = "examples/bad/typo.py"
    assert lint(named, cwd=project).returncode == 1  # named explicitly: linted (as ruff)
    r = lint("--force-exclude", named, "bad.py", "--format", "json", cwd=project)
    assert codes(r) == [("bad.py", "OP102")]
    hooks = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text()
    assert hooks.count("--force-exclude") == 2  # both shipped hooks pass it


def test_gitignore_at_every_level_from_the_repository_root(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("generated/\n*_tmp.py\n")
    (tmp_path / ".git" / "info" / "exclude").write_text("local.py\n")
    pkg = tmp_path / "pkg"
    (pkg / "generated").mkdir(parents=True)
    (pkg / "inner").mkdir()
    (pkg / ".gitignore").write_text("skip.py\n!keep_tmp.py\n")
    (pkg / "inner" / ".gitignore").write_text("!skip.py\n")
    for rel in [
        "pkg/ok.py",
        "pkg/generated/gen.py",  # root .gitignore, a directory rule
        "pkg/x_tmp.py",  # root .gitignore
        "pkg/keep_tmp.py",  # re-included by pkg/.gitignore
        "pkg/skip.py",  # pkg/.gitignore
        "pkg/inner/skip.py",  # re-included by pkg/inner/.gitignore
        "pkg/local.py",  # .git/info/exclude
    ]:
        (tmp_path / rel).write_text(BAD)
    expected = [
        ("pkg/inner/skip.py", "OP102"),
        ("pkg/keep_tmp.py", "OP102"),
        ("pkg/ok.py", "OP102"),
    ]
    assert codes(lint("--format", "json", cwd=tmp_path)) == expected
    # a subdirectory given: the root's rules still apply
    r = lint("--format", "json", "pkg", cwd=tmp_path)
    assert codes(r) == expected
    r = lint("--format", "json", ".", cwd=pkg)
    assert sorted(p for p, _ in codes(r)) == ["inner/skip.py", "keep_tmp.py", "ok.py"]
    # named files are ignored only with --force-exclude
    r = lint("--format", "json", "--force-exclude", "pkg/skip.py", "pkg/ok.py", cwd=tmp_path)
    assert codes(r) == [("pkg/ok.py", "OP102")]


def test_extend_exclude_select_ignore(project: Path) -> None:
    (project / "dyn.py").write_text(DYNAMIC)
    r = lint("--format", "json", "--extend-exclude", "bad.py", cwd=project)
    assert codes(r) == [("dyn.py", "OP108")]
    r = lint("--format", "json", "--extend-ignore", "OP108", cwd=project)
    assert codes(r) == [("bad.py", "OP102")]
    r = lint("--format", "json", "--select", "OP2", "--extend-select", "OP108", cwd=project)
    assert codes(r) == [("dyn.py", "OP108")]
    (project / "pyproject.toml").write_text(
        "[tool.openprogram.lint]\nexclude = ['examples/bad/**']\nextend-exclude = ['dyn.py']\n"
        "extend-ignore = ['OP102']\nforce-exclude = true\n"
    )
    assert json.loads(lint("--format", "json", cwd=project).stdout) == []
    r = lint("--format", "json", "dyn.py", "examples/bad/typo.py", cwd=project)
    assert json.loads(r.stdout) == []  # force-exclude from the configuration


def test_version_quiet_exit_zero_output_file(project: Path) -> None:
    from openprogram._version import __version__

    r = lint("--version", cwd=project)
    assert r.returncode == 0 and r.stdout.strip() == f"openprogram-lint {__version__}"
    r = lint("bad.py", "--quiet", cwd=project)
    assert r.returncode == 1 and "Found" not in r.stdout and "OP102" in r.stdout
    assert lint("bad.py", "--exit-zero", cwd=project).returncode == 0
    r = lint("bad.py", "--output-file", "report.json", "--format", "json", cwd=project)
    assert r.returncode == 1 and r.stdout == ""
    assert codes_of(project / "report.json") == [("bad.py", "OP102")]
    r = lint("bad.py", "--show-fixes", cwd=project)
    assert "    fix: replace 'expsoe' by 'expose' (unsafe: --unsafe-fixes)" in r.stdout


def codes_of(path: Path) -> list[tuple[str, str]]:
    return sorted((f["path"], f["code"]) for f in json.loads(path.read_text()))


def test_info_findings_do_not_fail_unless_asked(project: Path) -> None:
    (project / "dyn.py").write_text(DYNAMIC)
    r = lint("dyn.py", cwd=project)
    assert r.returncode == 0 and "OP108" in r.stdout
    assert lint("dyn.py", "--fail-on-info", cwd=project).returncode == 1


def test_statistics_json_and_report_formats(project: Path) -> None:
    (project / "dyn.py").write_text(DYNAMIC)
    r = lint("--statistics", "--format", "json", cwd=project)
    assert json.loads(r.stdout) == [
        {"code": "OP102", "name": "unknown-option-key", "count": 1, "fixable": 0},
        {"code": "OP108", "name": "method-options-not-literal", "count": 1, "fixable": 0},
    ]
    r = lint("--format", "json-lines", cwd=project)
    assert sorted(json.loads(line)["code"] for line in r.stdout.splitlines()) == [
        "OP102",
        "OP108",
    ]
    r = lint("--format", "gitlab", cwd=project)
    report = json.loads(r.stdout)
    assert {(i["check_name"], i["severity"], i["location"]["path"]) for i in report} == {
        ("OP102", "major", "bad.py"),
        ("OP108", "info", "dyn.py"),
    }
    assert len({i["fingerprint"] for i in report}) == 2
    root = ET.fromstring(lint("--format", "junit", cwd=project).stdout)
    assert root.tag == "testsuites" and root.get("failures") == "2"
    cases = {c.get("name"): c.get("classname") for c in root.iter("testcase")}
    assert cases == {"org.openprogram.OP102": "bad.py", "org.openprogram.OP108": "dyn.py"}
    sarif = json.loads(lint("--format", "sarif", cwd=project).stdout)
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert {r["id"]: r["helpUri"] for r in rules}["OP102"].endswith("#op102")
    schema = Path(__file__).parent / "fixtures" / "sarif-2.1.0-subset.schema.json"
    jsonschema.validate(sarif, json.loads(schema.read_text()))


def test_explain_all_names_and_rule_list(project: Path) -> None:
    from openprogram_analyzers import RULES

    r = lint("--explain", "all", cwd=project)
    assert r.returncode == 0
    assert all(f"{code} ({rule.name})" in r.stdout for code, rule in RULES.items())
    r = lint("--explain", "mutable-global,OP102", cwd=project)
    assert (
        r.stdout.startswith("OP203 (mutable-global)") and "OP102 (unknown-option-key)" in r.stdout
    )
    r = lint("--list-rules", cwd=project)
    lines = r.stdout.splitlines()
    assert len(lines) == len(RULES)
    assert lines[0].split()[:3] == ["OP001", "file-does-not-parse", "error"]


def test_cache_keys_on_content_not_mtime_and_size(project: Path) -> None:
    bad = project / "bad.py"
    assert lint("bad.py", cwd=project, cache=True).returncode == 1
    st = bad.stat()
    fixed = BAD.replace("expsoe", "expose")
    assert len(fixed) == len(BAD)
    bad.write_text(fixed)
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime
    r = lint("bad.py", cwd=project, cache=True)
    assert r.returncode == 0, r.stdout  # was served the stale OP102


def make_store(root: Path, version: int = 4) -> Path:
    root.mkdir()
    conn = sqlite3.connect(root / "openprogram.db")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, name, applied_at)")
    conn.execute("INSERT INTO schema_version VALUES (?, 'x', 0)", (version,))
    conn.commit()
    conn.close()
    return root


@pytest.mark.parametrize("kind", ["missing-dir", "no-db", "corrupt", "newer-schema", "locked"])
def test_unreadable_store_is_an_error(project: Path, kind: str) -> None:
    store = project / "store"
    holder = None
    if kind == "no-db":
        store.mkdir()
    elif kind == "corrupt":
        store.mkdir()
        (store / "openprogram.db").write_bytes(b"this is not a database" * 100)
    elif kind == "newer-schema":
        make_store(store, version=999)
    elif kind == "locked":
        make_store(store)
        holder = sqlite3.connect(store / "openprogram.db")
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
    try:
        r = lint("bad.py", "--store", str(store), cwd=project)
    finally:
        if holder is not None:
            holder.close()
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "--store" in r.stderr and str(store) in r.stderr
    if kind == "newer-schema":
        assert "newer" in r.stderr


def test_an_unreachable_store_url_is_named_once(project: Path) -> None:
    url = "postgresql://lint:secret@127.0.0.1:1/nodb"  # loopback, nothing listens on port 1
    r = lint("bad.py", "--store", url, cwd=project)
    assert r.returncode == 2, (r.stdout, r.stderr)
    (line,) = r.stderr.strip().splitlines()
    assert line.count("127.0.0.1:1/nodb") == 1, line
    assert "secret" not in line
