"""Quick fixes from the editor's side: "Suppress OPxxx on this line" puts the comment where
Python reads it as a comment of that finding, and lint then honours it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from lsp_harness import apply_edits, diags_for, edit_doc, open_doc, rec_of
from lsprotocol import types
from pytest_lsp import LanguageClient

# a form feed (a page break) ends no line for Python, nor for the fix placing the comment
CONTINUED = '''import random
import time

from openprogram import step

\x0c
def fetch(n: int) -> int:
    return n


def build(n: int = 1) -> int:
    t = time.time() + \\
        1
    doc = f"""seed={random.random()}
    """
    note = "a" \\
        "b"; stamp = time.monotonic()
    return step("fetch", fetch, n + len(doc) + int(t) + len(note) + int(stamp))


build.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["build"]
'''


def _strings(text: str) -> list[str]:
    """Every string value of the module (f-string parts included), in source order."""
    return [
        n.value
        for n in ast.walk(ast.parse(text))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]


def _lint(workspace: Path, name: str) -> list[tuple[str, int]]:
    lint = str(Path(sys.executable).parent / "openprogram-lint")
    out = subprocess.run(
        [lint, "--no-cache", "--format", "json", name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workspace,
    )
    return [(f["code"], f["line"]) for f in json.loads(out.stdout)]


async def _actions(
    client: LanguageClient, uri: str, diags: list[types.Diagnostic], rng: types.Range
) -> list[types.CodeAction]:
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=types.CodeActionContext(diagnostics=diags),
        )
    )
    return [a for a in got or [] if isinstance(a, types.CodeAction)]


async def test_suppress_on_a_continued_line_or_in_a_multiline_fstring(
    client: LanguageClient, workspace: Path
) -> None:
    prog = workspace / "prog.py"
    prog.write_text(CONTINUED, encoding="utf-8")
    uri = prog.as_uri()
    open_doc(client, uri, CONTINUED)
    diags = await diags_for(client, uri, 1)
    lines = CONTINUED.split("\n")
    assert [(d.code, lines[d.range.start.line].strip()) for d in diags] == [
        ("OP205", "t = time.time() + \\"),
        ("OP205", 'doc = f"""seed={random.random()}'),
        ("OP205", '"b"; stamp = time.monotonic()'),
    ]
    assert _lint(workspace, "prog.py") == [("OP205", d.range.start.line + 1) for d in diags]
    text = CONTINUED
    for diag in diags:
        (action,) = [
            a
            for a in await _actions(client, uri, [diag], diag.range)
            if a.title == "Suppress OP205 on this line"
        ]
        assert action.edit is not None and action.edit.document_changes
        change = action.edit.document_changes[0]
        assert isinstance(change, types.TextDocumentEdit)
        fixed = apply_edits(CONTINUED, list(change.edits))
        # the file still parses and its strings keep their values
        assert _strings(fixed) == _strings(CONTINUED)
        prog.write_text(fixed, encoding="utf-8")
        linted = _lint(workspace, "prog.py")
        assert ("OP205", diag.range.start.line + 1) not in linted and len(linted) == 2
        text = apply_edits(text, list(change.edits))
    # all three applied (as the user does one after the other): lint and the server agree
    assert text.count("# noqa: OP205") == 3
    assert '    """  # noqa: OP205\n' in text and "        1  # noqa: OP205\n" in text
    prog.write_text(text, encoding="utf-8")
    assert _lint(workspace, "prog.py") == []
    version = edit_doc(client, uri, text)
    assert await diags_for(client, uri, version) == []
    assert rec_of(client).docs[uri][1] == text


THREE_ON_A_LINE = """from openprogram import Agent


class Bot(Agent):
    method_options = {"f": {"expsoe": "io"}, "g": {"tol": True}, "h": {"rsumable": True}}

    def f(self) -> int:
        return 1

    def g(self) -> int:
        return 2

    def h(self) -> int:
        return 3


x = 1  # noqa: OP205
"""


async def test_one_suppress_action_per_code_per_line_and_none_for_op900(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "bot.py").as_uri()
    open_doc(client, uri, THREE_ON_A_LINE)
    diags = await diags_for(client, uri, 1)
    assert [d.code for d in diags] == ["OP102", "OP102", "OP102", "OP900"]
    whole_line = types.Range(diags[0].range.start, types.Position(diags[0].range.start.line, 200))
    titles = [a.title for a in await _actions(client, uri, diags[:3], whole_line)]
    assert titles.count("Suppress OP102 on this line") == 1
    assert len([t for t in titles if t.startswith("replace ")]) == 3
    unused = diags[3]
    titles = [a.title for a in await _actions(client, uri, [unused], unused.range)]
    assert titles == ["remove unused suppression of OP205 (OP900)"]


EXPLAINED = """from openprogram import step

RETRIES = 3  # noqa: OP203 kept for the old runner
LIMIT = 4  # noqa: OP203, see #12
MODE = "a"  # openprogram: ignore[OP203]: legacy
"""
EXPLAINED_FIXED = """from openprogram import step

RETRIES = 3  # kept for the old runner
LIMIT = 4  # see #12
MODE = "a"  # legacy
"""


async def test_removing_an_unused_suppression_keeps_its_explanation_a_comment(
    client: LanguageClient, workspace: Path
) -> None:
    # The fix once left the text after the code as code (``LIMIT = 4, see #12``).
    uri = (workspace / "explained.py").as_uri()
    open_doc(client, uri, EXPLAINED)
    diags = await diags_for(client, uri, 1)
    assert [str(d.code) for d in diags] == ["OP900"] * 3
    text = EXPLAINED
    for diag in reversed(diags):  # the quick fix of each, as the user applies them
        (action,) = await _actions(client, uri, [diag], diag.range)
        assert action.title == "remove unused suppression of OP203 (OP900)"
        assert action.edit is not None and action.edit.document_changes
        change = action.edit.document_changes[0]
        assert isinstance(change, types.TextDocumentEdit)
        text = apply_edits(text, list(change.edits))
    assert text == EXPLAINED_FIXED
    # fix-on-save (source.fixAll.openprogram): the same fixes, the same result
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri=uri),
            whole,
            types.CodeActionContext(diagnostics=[], only=["source.fixAll.openprogram"]),
        )
    )
    (fix_all,) = [a for a in actions or [] if isinstance(a, types.CodeAction)]
    assert fix_all.edit is not None and fix_all.edit.document_changes
    change = fix_all.edit.document_changes[0]
    assert isinstance(change, types.TextDocumentEdit)
    assert change.edits[0].new_text == EXPLAINED_FIXED
