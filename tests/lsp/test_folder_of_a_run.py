"""Which workspace folder a run, a document and a setting belong to, in multi-root
workspaces (the README's language-server section: "each document has its own
configuration (...; a document outside every folder too), each folder its own store,
`.venv` interpreter and resource-scoped settings"; "a removed folder stops being served
(its runs leave the Runs view, its documents get no lenses from its store)"; "With no
workspace folder open, nothing is run"). One rule serves all: a run belongs to the
innermost served folder holding its Program file, as a document does. Real server over
stdio, runs made by the real CLI in subprocesses."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsp_harness import (
    diags_for,
    edit_doc,
    execute,
    open_doc,
    rec_of,
    request,
    start,
    stop,
    wait_for,
)
from lsp_programs import PAUSER
from lsprotocol import types
from pytest_lsp import LanguageClient

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = """\
from openprogram import step


def double(n: int) -> int:
    return n * 2


def pipeline(n: int = 1) -> int:
    return step("double", double, n)


pipeline.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline"]
"""

STAMP = """\
import time


def stamp() -> float:
    return time.time()


stamp.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["stamp"]
"""


def cli_run(folder: Path, store: Path, program: str) -> dict[str, Any]:
    proc = subprocess.run(
        [OPENPROGRAM, "run", "--store", str(store), "--json", f"{program}:pipeline"],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def logging_interpreter(folder: Path, log: Path) -> Path:
    """An interpreter of ``folder`` (its ``.venv/bin/python``) that notes which one ran,
    and in which working directory, then runs this Python."""
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"with open({str(log)!r}, 'a') as f:\n"
        f"    f.write({folder.name!r} + ' ' + os.getcwd() + chr(10))\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])\n"
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


async def lenses(client: LanguageClient, uri: str) -> list[str]:
    res = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in res or [] if lens.command]


async def runs_by_folder(client: LanguageClient) -> dict[str, list[str]]:
    got = await request(client, "openprogram/runs", {})
    return {f["name"]: [r["id"] for r in f["runs"]] for f in got["folders"]}


def remove_folder(client: LanguageClient, folder: Path) -> None:
    client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(
                added=[],
                removed=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
            )
        )
    )


async def test_resume_runs_in_the_folder_of_the_runs_program(tmp_path: Path) -> None:
    """Folders alpha and beta share one store (an absolute ``store`` setting): Resume of a
    run of beta/pauser.py runs beta's interpreter in beta, not alpha's (the first folder
    whose store has the run)."""
    alpha, beta, store = tmp_path / "alpha", tmp_path / "beta", tmp_path / "shared"
    log = tmp_path / "interpreters.log"
    for folder in (alpha, beta):
        folder.mkdir()
        logging_interpreter(folder, log)
    (beta / "pauser.py").write_text(PAUSER)
    paused = cli_run(beta, store, "pauser.py")
    assert paused["status"] == "paused", paused
    client = await start([alpha, beta], options={"store": str(store)})
    try:
        open_doc(client, (beta / "pauser.py").as_uri(), PAUSER)
        assert any(
            t.startswith("⟳ Resume") for t in await lenses(client, (beta / "pauser.py").as_uri())
        )
        done = await execute(client, "openprogram.resume", paused["run_id"])
        assert done["status"] == "completed" and done["result"] == 20, done
    finally:
        await stop(client)
    assert log.read_text().splitlines() == [f"beta {os.path.realpath(beta)}"]


async def test_a_shared_store_lists_each_run_under_its_own_folder(tmp_path: Path) -> None:
    """The view lists "the runs of each workspace folder": with one store for alpha and
    beta, each run is listed under the folder of its Program only; once beta is removed,
    its run leaves the view and beta/prog.py gets no lens at all (no ``Runs (1)`` from the
    store it shared, no ``▶ Run``: Run refuses a file outside every folder)."""
    alpha, beta, store = tmp_path / "alpha", tmp_path / "beta", tmp_path / "shared"
    for folder in (alpha, beta):
        folder.mkdir()
        (folder / "prog.py").write_text(PROGRAM)
    a_run = cli_run(alpha, store, "prog.py")["run_id"]
    b_run = cli_run(beta, store, "prog.py")["run_id"]
    client = await start([alpha, beta], options={"store": str(store)})
    try:
        assert await runs_by_folder(client) == {"alpha": [a_run], "beta": [b_run]}
        rows = await execute(client, "openprogram.showRuns")
        assert sorted(r["run_id"] for r in rows) == sorted([a_run, b_run])
        b_prog = (beta / "prog.py").as_uri()
        open_doc(client, b_prog, PROGRAM)
        assert await lenses(client, b_prog) == ["▶ Run", "Runs (1)"]

        remove_folder(client, beta)
        got = await wait_until(client, lambda got: "beta" not in got)
        assert got == {"alpha": [a_run]}
        assert await lenses(client, b_prog) == []
        assert await execute(client, "openprogram.showRuns", b_prog) == []
        refused = await execute(client, "openprogram.run", b_prog, "pipeline")
        assert refused["status"] == "error"
        assert "outside every workspace folder" in refused["error"], refused
    finally:
        await stop(client)


async def wait_until(client: LanguageClient, done: Any) -> dict[str, list[str]]:
    got: dict[str, list[str]] = {}

    async def answered() -> bool:
        nonlocal got
        got = await runs_by_folder(client)
        return bool(done(got))

    for _ in range(200):
        if await answered():
            return got
    raise AssertionError(f"the Runs view did not change: {got}")


async def test_a_file_open_under_two_uris_is_unsaved_if_either_buffer_is(
    tmp_path: Path,
) -> None:
    """link.py is a symlink to prog.py, both open: with edits unsaved in link.py, Run of
    either refuses ("save ... first: Run executes the file on disk") and the signature
    says so, as for one buffer."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "prog.py").write_text(PROGRAM)
    (folder / "link.py").symlink_to("prog.py")
    client = await start([folder])
    try:
        prog, link = (folder / "prog.py").as_uri(), (folder / "link.py").as_uri()
        open_doc(client, prog, PROGRAM)
        open_doc(client, link, PROGRAM)
        edit_doc(client, link, PROGRAM.replace("n * 2", "n * 3"))
        await diags_for(client, link, 2)
        for uri in (link, prog):
            refused = await execute(client, "openprogram.run", uri, "pipeline")
            assert refused["status"] == "error", refused
            assert refused["error"] == "save prog.py first: Run executes the file on disk"
        sig = await request(
            client, "openprogram/entrySignature", {"uri": link, "entry": "pipeline"}
        )
        assert "first: Run executes the file on disk" in sig["unsaved"], sig
    finally:
        await stop(client)


async def test_a_document_outside_every_folder_gets_the_window_settings_only(
    tmp_path: Path,
) -> None:
    """alpha's resource-scoped ``lint.ignore`` (alpha is the first folder) does not reach
    a document outside every folder; an unknown rule code in the ``lint.select`` setting
    is refused with the words ``[tool.openprogram.lint]`` gets for it."""
    alpha, beta, outside = tmp_path / "alpha", tmp_path / "beta", tmp_path / "outside"
    for folder in (alpha, beta, outside):
        folder.mkdir()
        (folder / "prog.py").write_text(STAMP)
    client = await start(
        [alpha, beta],
        scoped={alpha: {"lint": {"ignore": ["OP205"]}}, beta: {"lint": {"select": ["OPX99"]}}},
    )
    try:
        for folder in (alpha, outside):
            open_doc(client, (folder / "prog.py").as_uri(), STAMP)
        # alpha's settings are pulled after initialize: its findings once they apply
        await wait_for(lambda: latest(client, (alpha / "prog.py").as_uri()) == [], "no OP205")
        edit_doc(client, (outside / "prog.py").as_uri(), STAMP)  # checked again since
        found = await diags_for(client, (outside / "prog.py").as_uri(), 2)
        assert [d.code for d in found] == ["OP205"]
        said = await wait_for(
            lambda: [m.message for m in client.messages if "OPX99" in m.message],
            "the refused lint.select setting",
        )
        assert said == [
            f"openprogram settings of {beta}: 'lint.select': unknown rule code or prefix "
            "'OPX99' (the setting is ignored)"
        ]
    finally:
        await stop(client)
    (beta / "pyproject.toml").write_text('[tool.openprogram.lint]\nselect = ["OPX99"]\n')
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "openprogram-lint"), "--no-cache", "prog.py"],
        cwd=beta, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "unknown rule code or prefix 'OPX99'" in lint.stdout + lint.stderr


def latest(client: LanguageClient, uri: str) -> list[types.Diagnostic] | None:
    found = [p for p in rec_of(client).published if p.uri == uri]
    return list(found[-1].diagnostics) if found else None


async def test_run_lenses_only_where_run_can_run(tmp_path: Path) -> None:
    """No ``▶ Run`` where Run can only refuse: on a file outside every folder, or on an
    entry naming nothing in the module (OP402); the other entries keep theirs."""
    folder, outside = tmp_path / "proj", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    misspelt = PROGRAM.replace('["pipeline"]', '["pipeline", "pipelin"]')
    (folder / "prog.py").write_text(misspelt)
    (outside / "prog.py").write_text(PROGRAM)
    client = await start([folder])
    try:
        inside_uri, outside_uri = (folder / "prog.py").as_uri(), (outside / "prog.py").as_uri()
        open_doc(client, inside_uri, misspelt)
        open_doc(client, outside_uri, PROGRAM)
        assert "OP402" in [d.code for d in await diags_for(client, inside_uri, 1)]
        res = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=inside_uri))
        )
        assert [
            (lens.command.title, list(lens.command.arguments or []))
            for lens in res or []
            if lens.command
        ] == [("▶ Run", [inside_uri, "pipeline"])]
        assert await lenses(client, outside_uri) == []
    finally:
        await stop(client)


RUNS_SHOWN = 200  # the finished runs the view lists per folder (README)
MAKE_RUNS = """
import sys
from openprogram.durable import start_run

for i in range(int(sys.argv[1])):
    assert start_run("prog.py:pipeline", {"n": i}, store=sys.argv[2]).status == "completed"
"""


def make_runs(folder: Path, store: Path, count: int) -> None:
    made = subprocess.run(
        [sys.executable, "-c", MAKE_RUNS, str(count), str(store)],
        cwd=folder, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr


async def test_a_shared_store_counts_each_folders_own_older_runs(tmp_path: Path) -> None:
    """With one store for alpha and beta, ``olderRuns`` counted the finished runs the whole
    store left out, under both folders (beta: 2 older runs, of alpha's), and beta's one
    run, older than alpha's newest 200, was listed under no folder. Each folder lists its
    own newest finished runs and counts its own that were left out."""
    alpha, beta, store = tmp_path / "alpha", tmp_path / "beta", tmp_path / "shared"
    for folder in (alpha, beta):
        folder.mkdir()
        (folder / "prog.py").write_text(PROGRAM)
    b_run = cli_run(beta, store, "prog.py")["run_id"]  # the oldest run of the store
    make_runs(alpha, store, RUNS_SHOWN + 2)
    client = await start([alpha, beta], options={"store": str(store)})
    try:
        got = await request(client, "openprogram/runs", {})
        shown = {f["name"]: ([r["id"] for r in f["runs"]], f["olderRuns"]) for f in got["folders"]}
        assert shown["beta"] == ([b_run], 0)
        assert (len(shown["alpha"][0]), shown["alpha"][1]) == (RUNS_SHOWN, 2)
        assert b_run not in shown["alpha"][0]
    finally:
        await stop(client)
