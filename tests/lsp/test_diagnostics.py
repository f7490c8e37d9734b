"""Diagnostics over a real LSP connection: push/pull, edits, fixes, config, OP209."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_harness import (
    change_range,
    diags_for,
    edit_doc,
    execute,
    open_doc,
    rec_of,
    wait_for,
)
from lsp_programs import AGENT_PROGRAM
from lsprotocol import types
from pytest_lsp import LanguageClient

BAD_EXPOSE = AGENT_PROGRAM.replace('"expose": "io"', '"expose": "iox"')
LLM_HELPER = (
    AGENT_PROGRAM.replace("return 1", 'return llm("x")')
    .replace("import Agent, step", "import Agent, llm, step")
    .replace('b = step("fetch", fetch, a)', "b = self.helper()")
)


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n")


async def changed_on_disk_then_clean(
    client: LanguageClient, changed: Path, uri: str, what: str
) -> None:
    """Tell the server (a watched-file event) that ``changed`` changed on disk, and wait
    for ``uri``'s diagnostics to come back empty."""
    n = len(rec_of(client).published)
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=changed.as_uri(), type=types.FileChangeType.Changed)]
        )
    )
    await wait_for(
        lambda: any(p.uri == uri and not p.diagnostics for p in rec_of(client).published[n:]),
        what,
    )


async def test_push_diagnostics_follow_incremental_edits(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    assert await diags_for(client, uri, 1) == []

    line = _line_of(AGENT_PROGRAM, '"io"')
    col = AGENT_PROGRAM.splitlines()[line].index('"io"') + 3
    v = change_range(client, uri, (line, col), (line, col), "x")  # "io" -> "iox"
    diags = await diags_for(client, uri, v)
    assert len(diags) == 1
    d = diags[0]
    assert d.code == "OP104" and d.source == "openprogram"
    assert d.severity == types.DiagnosticSeverity.Error
    assert "'iox'" in d.message and "did you mean 'io'" in d.message
    assert d.range.start == types.Position(line, col - 3)
    assert d.range.end == types.Position(line, col + 2)
    assert d.code_description is not None and "op104" in d.code_description.href.lower()

    # delete the "x" again: the diagnostic goes away
    v = change_range(client, uri, (line, col), (line, col + 1), "")
    assert await diags_for(client, uri, v) == []

    # a syntax error is one OP001 diagnostic, never a crash
    v = change_range(client, uri, (0, 0), (0, 0), "def broken(:\n")
    diags = await diags_for(client, uri, v)
    assert [d.code for d in diags] == ["OP001"]

    # closing clears the diagnostics
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(
        lambda: (
            rec_of(client).published[-1].uri == uri and not rec_of(client).published[-1].diagnostics
        ),
        "cleared diagnostics",
    )


async def test_related_information_and_untitled(client: LanguageClient, workspace: Path) -> None:
    uri = "untitled:Untitled-1"
    open_doc(client, uri, LLM_HELPER)
    diags = await diags_for(client, uri, 1)
    assert [d.code for d in diags] == ["OP206"]
    related = diags[0].related_information or []
    assert len(related) == 1
    assert related[0].location.uri == uri
    assert related[0].location.range.start.line == _line_of(LLM_HELPER, "b = self.helper()")
    assert "calls 'Reporter.helper'" in related[0].message


async def test_quick_fix_round_trip_through_apply_edit(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, BAD_EXPOSE)
    diags = await diags_for(client, uri, 1)
    assert [d.code for d in diags] == ["OP104"]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diags[0].range,
            context=types.CodeActionContext(diagnostics=diags),
        )
    )
    assert actions is not None
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert titles == ["replace 'iox' by 'io' (OP104)", "Suppress OP104 on this line"]
    fix = actions[0]
    assert isinstance(fix, types.CodeAction) and fix.edit is not None
    assert not fix.is_preferred  # a did-you-mean guesses intent: an unsafe fix

    # the server applies the fix through workspace/applyEdit; the client edits and syncs
    res = await execute(
        client, "openprogram.applyFix", uri, "OP104", diags[0].range.start.line, "fix"
    )
    assert res == {"applied": True}
    version, text = rec_of(client).docs[uri]
    assert text == AGENT_PROGRAM
    assert await diags_for(client, uri, version) == []

    # suppression through the same round trip
    edit_doc(client, uri, BAD_EXPOSE)
    version, _ = rec_of(client).docs[uri]
    diags = await diags_for(client, uri, version)
    res = await execute(
        client, "openprogram.applyFix", uri, "OP104", diags[0].range.start.line, "suppress"
    )
    assert res == {"applied": True}
    version, text = rec_of(client).docs[uri]
    assert "# noqa: OP104" in text
    assert await diags_for(client, uri, version) == []

    bad = await execute(client, "openprogram.applyFix", uri, "OP104")
    assert bad["applied"] is False and "usage" in bad["error"]


@pytest.mark.lsp_init(pull=True)
async def test_pull_diagnostics(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, BAD_EXPOSE)
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert [d.code for d in report.items] == ["OP104"]
    again = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            previous_result_id=report.result_id,
        )
    )
    assert isinstance(again, types.RelatedUnchangedDocumentDiagnosticReport)
    edit_doc(client, uri, AGENT_PROGRAM)
    fixed = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            previous_result_id=report.result_id,
        )
    )
    assert isinstance(fixed, types.RelatedFullDocumentDiagnosticReport) and list(fixed.items) == []
    # a pulling client gets no pushed diagnostics (no duplicates)
    assert not [p for p in rec_of(client).published if p.uri == uri and p.diagnostics]


@pytest.mark.lsp_init(options={"lint": {"ignore": ["OP104"]}})
async def test_initialization_options_select_rules(client: LanguageClient, workspace: Path) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, BAD_EXPOSE)
    assert await diags_for(client, uri, 1) == []


async def test_workspace_configuration_and_pyproject_reload(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, BAD_EXPOSE)
    assert [d.code for d in await diags_for(client, uri, 1)] == ["OP104"]
    assert any(
        r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in rec_of(client).registrations
    )

    # [tool.openprogram.lint] in the workspace pyproject, reloaded on the watched-file event
    pyproject = workspace / "pyproject.toml"
    pyproject.write_text('[tool.openprogram.lint]\nignore = ["OP104"]\n')
    await changed_on_disk_then_clean(client, pyproject, uri, "diagnostics without OP104")

    # workspace/configuration (pulled on didChangeConfiguration) selects OP104 back
    pyproject.write_text("[tool.openprogram.lint]\n")
    client.set_configuration({"lint": {"select": ["OP1"]}}, section="openprogram")
    n = len(rec_of(client).published)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_for(
        lambda: any(
            p.uri == uri and [d.code for d in p.diagnostics] == ["OP104"]
            for p in rec_of(client).published[n:]
        ),
        "OP104 back",
    )
    # a broken pyproject is reported in the log, the server keeps going
    pyproject.write_text("[tool.openprogram.lint\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=pyproject.as_uri())
        )
    )
    await wait_for(
        lambda: any(
            "pyproject.toml" in m.message and m.type == types.MessageType.Error
            for m in client.log_messages
        ),
        "config error logged",
    )


@pytest.mark.parametrize("status", ["paused", "queued"])
@pytest.mark.lsp_init(options={"store": "store"})
async def test_op209_after_edit_breaking_a_paused_run(
    client: LanguageClient, workspace: Path, status: str
) -> None:
    """The server's OP209 reads the runs ``openprogram-lint --store`` reads: a paused run
    ``resume`` takes, and a queued one a worker takes with the edited code."""
    from openprogram.store.runs import open_run_store

    program = workspace / "prog.py"
    program.write_text(AGENT_PROGRAM)
    (workspace / "store").mkdir()
    open_run_store(workspace / "store").close()  # the real store's tables
    db = sqlite3.connect(workspace / "store" / "openprogram.db")
    with db:
        now = time.time()
        db.execute(
            "INSERT INTO runs (id, entry, program_path, function_qualname, status, paused_step,"
            " paused_occurrence, created_at, updated_at) VALUES"
            " ('r1', ?, ?, 'Reporter.report', ?, 'write', 0, ?, ?)",
            (f"{program}:reporter.report", str(program), status, now, now),
        )
        for pos, (name, occ) in enumerate([("fetch", 0), ("fetch", 1), ("write", 0)]):
            db.execute(
                "INSERT INTO run_steps (run_id, step_key, scope, position, kind, name, occurrence,"
                " input_hash, status, started_at) VALUES ('r1', ?, '', ?, 'step', ?, ?, 'h', ?, ?)",
                (
                    f"{name}#{occ}",
                    pos,
                    name,
                    occ,
                    "completed" if name == "fetch" else "dispatched",
                    now,
                ),
            )
    db.close()
    uri = program.as_uri()
    open_doc(client, uri, AGENT_PROGRAM)
    assert await diags_for(client, uri, 1) == []
    line = _line_of(AGENT_PROGRAM, 'step("write"')
    col = AGENT_PROGRAM.splitlines()[line].index('"write"') + 6
    v = change_range(client, uri, (line, col), (line, col), "2")  # "write" -> "write2"
    diags = await diags_for(client, uri, v)
    assert [d.code for d in diags] == ["OP209"]
    assert "'write'" in diags[0].message and "Reporter.report" in diags[0].message
    # at the changed step(...) call, naming how many recorded runs the edit breaks
    assert diags[0].range.start.line == line
    assert diags[0].message.endswith("this edit breaks 1 unfinished run")


FILE_NOQA_PROGRAM = """\
# openprogram: noqa: OP104
from openprogram import Agent


class Writer(Agent):
    method_options = {"draft": {"expose": "bogus", "expsoe": "io"}}

    def draft(self, topic: str) -> str:
        return topic
"""


@pytest.mark.lsp_init(options={"incrementalMinChars": 0, "debounceMs": 600_000})
async def test_file_level_noqa_listing_codes_in_the_incremental_pass(
    client: LanguageClient, workspace: Path
) -> None:
    """``# openprogram: noqa: OP104`` hides OP104 only, in the incremental pass too (a
    statement analysed alone does not see the comment; the debounced full pass never runs
    here), exactly as ``openprogram-lint`` reports the file."""
    from openprogram_analyzers import analyze_source

    uri = (workspace / "prog.py").as_uri()
    lint = [f.code for f in analyze_source(FILE_NOQA_PROGRAM, "prog.py")]
    assert lint == ["OP102"]
    open_doc(client, uri, FILE_NOQA_PROGRAM)
    assert [d.code for d in await diags_for(client, uri, 1)] == lint
    # an edit inside the class: that statement is re-analysed alone
    line = _line_of(FILE_NOQA_PROGRAM, "return topic")
    v = change_range(client, uri, (line, 20), (line, 20), ".strip()")
    assert [d.code for d in await diags_for(client, uri, v)] == ["OP102"]
    # the comment is edited to list nothing the file has: OP104 shows up at once
    v = change_range(client, uri, (0, 25), (0, 26), "5")  # OP104 -> OP105
    assert sorted(d.code for d in await diags_for(client, uri, v)) == ["OP102", "OP104"]
    # a bare file-level noqa hides everything
    v = change_range(client, uri, (0, 19), (0, 26), "")
    assert await diags_for(client, uri, v) == []


CLOCK_HELPERS = "import time\n\n\ndef now() -> float:\n    return time.time()\n"
CLOCK_PROGRAM = """\
import helpers
from openprogram import step


def main(text: str = "x") -> str:
    text = text + str(helpers.now())
    return step("upper", str.upper, text)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


async def test_helper_module_finding_at_the_call_refreshed_when_the_helper_changes(
    client: LanguageClient, workspace: Path
) -> None:
    helpers = workspace / "helpers.py"
    helpers.write_text(CLOCK_HELPERS, encoding="utf-8")
    prog = workspace / "prog.py"
    prog.write_text(CLOCK_PROGRAM, encoding="utf-8")
    uri = prog.as_uri()
    open_doc(client, uri, CLOCK_PROGRAM)
    (diag,) = await diags_for(client, uri, 1)
    lint = str(Path(sys.executable).parent / "openprogram-lint")
    linted = subprocess.run(
        [lint, "--no-cache", "--format", "json", "prog.py"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workspace,
    )
    (finding,) = json.loads(linted.stdout)
    # what lint (and the run) report in helpers.py, shown at the call that reaches it
    assert (
        (diag.code, diag.message)
        == (finding["code"], finding["message"])
        == (
            "OP205",
            "non-deterministic call time.time() in helper 'now' outside a step: a resumed run "
            "would see a different value; move it into a step",
        )
    )
    line = _line_of(CLOCK_PROGRAM, "helpers.now()")
    assert diag.range.start == types.Position(line, 22)
    assert diag.range.end == types.Position(line, 35)
    here = (diag.related_information or [])[0].location
    assert here.uri == helpers.as_uri() and finding["path"] == "helpers.py"
    assert here.range.start == types.Position(finding["line"] - 1, finding["column"] - 1)
    # only a comment in the helper suppresses it: no "suppress on this line" in prog.py
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )
    )
    assert not actions

    # the helper fixed on disk: the file watcher's event re-checks the open Program
    helpers.write_text(CLOCK_HELPERS.replace("time.time()", "1.0"), encoding="utf-8")
    await changed_on_disk_then_clean(client, helpers, uri, "diagnostics without the helper's OP205")
    # broken again and saved in the editor (a client without file watchers)
    helpers.write_text(CLOCK_HELPERS, encoding="utf-8")
    n = len(rec_of(client).published)
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=helpers.as_uri())
        )
    )
    await wait_for(
        lambda: any(
            p.uri == uri and [d.code for d in p.diagnostics] == ["OP205"]
            for p in rec_of(client).published[n:]
        ),
        "the helper's OP205 back",
    )
