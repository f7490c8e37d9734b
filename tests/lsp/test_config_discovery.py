"""One configuration rule for the three layers: the ``[tool.openprogram]`` of the nearest
``pyproject.toml`` above the Program that has that table. The same nested layout
(``repo/pyproject.toml`` and ``repo/sub/pyproject.toml``, the Program in ``repo/sub``)
through ``openprogram run`` and ``openprogram-lint`` (real subprocesses, run from
``repo``) and through the language server (a real client over stdio) gets the same
configuration; a document outside every workspace folder gets its own configuration, not
the first folder's; a typo in ``[tool.openprogram]`` is said by all three."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from lsp_harness import diags_for, open_doc, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

BIN = Path(sys.executable).parent

PROGRAM = """\
import time as t

from openprogram import step


def keep(x: float) -> float:
    return x


def stamp() -> float:
    return step("keep", keep, t.time())


stamp.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["stamp"]
"""

TOP = '[tool.openprogram.lint]\nignore = ["OP205"]\n'  # the repository's: OP205 off


def cli(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / tool), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def layout(repo: Path, sub_pyproject: str) -> Path:
    (repo / "pyproject.toml").write_text(TOP)
    (repo / "sub").mkdir()
    (repo / "sub" / "pyproject.toml").write_text(sub_pyproject)
    prog = repo / "sub" / "prog.py"
    prog.write_text(PROGRAM)
    return prog


def layout_seen(client: LanguageClient, repo: Path, sub_pyproject: str) -> Path:
    prog = layout(repo, sub_pyproject)
    created(client, repo / "pyproject.toml", repo / "sub" / "pyproject.toml")
    return prog


def created(client: LanguageClient, *pyprojects: Path) -> None:
    """Tell the server the pyproject files were created (the client's file watcher)."""
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=p.as_uri(), type=types.FileChangeType.Created)
                for p in pyprojects
            ]
        )
    )


async def codes(client: LanguageClient, prog: Path) -> list[str]:
    open_doc(client, prog.as_uri(), PROGRAM)
    return [str(d.code) for d in await diags_for(client, prog.as_uri(), 1)]


async def test_nested_config_with_a_table_applies_everywhere(
    client: LanguageClient, workspace: Path
) -> None:
    """sub/pyproject.toml has [tool.openprogram]: it applies to sub/prog.py (OP205 on),
    for run, lint and the server alike, though they start in repo/."""
    prog = layout_seen(client, workspace, '[tool.openprogram.lint]\nselect = ["OP"]\n')
    lint = cli("openprogram-lint", "--no-cache", "sub/prog.py", cwd=workspace)
    assert lint.returncode == 1 and "OP205" in lint.stdout, lint.stdout + lint.stderr
    run = cli("openprogram", "run", "--store", "st", "sub/prog.py:stamp", cwd=workspace)
    assert run.returncode == 2 and "OP205" in run.stderr, run.stderr
    assert await codes(client, prog) == ["OP205"]


async def test_nested_pyproject_without_the_table_is_passed_over(
    client: LanguageClient, workspace: Path
) -> None:
    """sub/pyproject.toml has no [tool.openprogram]: the repository's applies (OP205
    off) for all three; the run completes."""
    prog = layout_seen(client, workspace, '[project]\nname = "sub"\nversion = "0"\n')
    lint = cli("openprogram-lint", "--no-cache", "sub/prog.py", cwd=workspace)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    run = cli("openprogram", "run", "--store", "st", "--json", "sub/prog.py:stamp", cwd=workspace)
    assert json.loads(run.stdout)["status"] == "completed", run.stdout + run.stderr
    assert await codes(client, prog) == []


@pytest.mark.lsp_init(folders=["alpha", "beta"])
async def test_a_document_outside_every_folder_has_its_own_config(
    client: LanguageClient, workspace: Path
) -> None:
    (workspace / "alpha" / "pyproject.toml").write_text(TOP)  # the first folder: OP205 off
    outside = workspace / "elsewhere"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[tool.openprogram.lint]\nselect = ["OP"]\n')
    (outside / "prog.py").write_text(PROGRAM)
    inside = workspace / "alpha" / "prog.py"
    inside.write_text(PROGRAM)
    created(client, workspace / "alpha" / "pyproject.toml", outside / "pyproject.toml")
    assert await codes(client, inside) == []
    assert await codes(client, outside / "prog.py") == ["OP205"]
    lint = cli("openprogram-lint", "--no-cache", "elsewhere/prog.py", cwd=workspace)
    assert "OP205" in lint.stdout, lint.stdout + lint.stderr


async def test_a_typo_in_the_table_is_refused_by_all_three(
    client: LanguageClient, workspace: Path
) -> None:
    prog = layout_seen(client, workspace, '[tool.openprogram]\nmodle = "openai:gpt-4.1-mini"\n')
    sub_pyproject = workspace / "sub" / "pyproject.toml"
    for proc in (
        cli("openprogram-lint", "--no-cache", "sub/prog.py", cwd=workspace),
        cli("openprogram", "run", "--store", "st", "sub/prog.py:stamp", cwd=workspace),
    ):
        assert proc.returncode == 2, proc.stderr
        assert str(sub_pyproject) in proc.stderr and "'modle'" in proc.stderr
        assert "did you mean `model`?" in proc.stderr
    assert not (workspace / "st").exists()  # nothing recorded
    open_doc(client, prog.as_uri(), PROGRAM)
    shown = await wait_for(
        lambda: [m for m in client.messages if "did you mean `model`?" in m.message],
        "a message about the typo",
    )
    assert str(sub_pyproject) in shown[0].message
