"""Symbols and code lenses show the analyzer's one Program model (issue 12), written the
way users write Programs: import aliases, a resumable method inherited from a base's
``method_options``, entries through an Agent instance, ``__agent_options__``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_harness import change_range, diags_for, open_doc, rec_of, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

PROGRAM = '''\
import openprogram as op
from openprogram import Agent as Base
from openprogram import step as s


def tidy(text: str) -> str:
    return text.strip()


class Writer(Base):
    method_options = {"draft": {"resumable": True}}

    def draft(self, topic: str) -> str:
        first = s("outline", tidy, topic)
        return op.step("write", tidy, first)


class Editor(Writer):
    def draft(self, topic: str) -> str:
        return s("edit", tidy, topic)


class Toolbox:
    """Not an Agent, though its name could fool a guess."""

    def step(self, name: str) -> str:
        return name


class ToolAgent(Toolbox):
    def run(self) -> str:
        return self.step("not a durable step")


def publish(topic: str) -> str:
    return op.workflow("publish", tidy, topic)


publish.__agent_options__ = {"resumable": True}
editor = Editor()
PROGRAM_ENTRIES = [editor.draft, publish]
'''


def _by_name(symbols: list[types.DocumentSymbol]) -> dict[str, types.DocumentSymbol]:
    out = {}
    for sym in symbols:
        out[sym.name] = sym
        for child in sym.children or []:
            out[f"{sym.name}.{child.name}"] = child
    return out


async def _symbols(client: LanguageClient, uri: str) -> dict[str, types.DocumentSymbol]:
    res = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return _by_name(list(res or []))  # type: ignore[arg-type]


async def test_symbols_follow_the_analyzers_program_model(
    client: LanguageClient, workspace: Path
) -> None:
    uri = (workspace / "prog.py").as_uri()
    open_doc(client, uri, PROGRAM)
    syms = await _symbols(client, uri)
    # Agents through an alias and through a base class; a class named *Agent that is not
    assert syms["Writer"].detail == "Agent" and syms["Editor"].detail == "Agent"
    assert syms["Toolbox"].detail is None and syms["ToolAgent"].detail is None
    # resumable: declared in method_options, inherited by an override, __agent_options__
    assert syms["Writer.draft"].detail == "resumable"
    assert syms["Editor.draft"].detail == "resumable"
    assert syms["publish"].detail == "resumable"
    assert syms["ToolAgent.run"].detail is None and syms["tidy"].detail is None
    # steps through `step as s` and `op.step`; a method named step is not one
    steps = [c.name for c in syms["Writer.draft"].children or []]
    assert steps == ['step "outline"', 'step "write"']
    assert [c.name for c in syms["Editor.draft"].children or []] == ['step "edit"']
    assert [c.name for c in syms["publish"].children or []] == ['workflow "publish"']
    assert syms["ToolAgent.run"].children is None
    # an entry through an Agent instance names the subclass's method
    assert [c.name for c in syms["PROGRAM_ENTRIES"].children or []] == [
        "editor.draft",
        "publish",
    ]


async def test_run_lenses_sit_on_the_entries_targets_and_follow_edits(
    client: LanguageClient, workspace: Path
) -> None:
    path = workspace / "prog.py"
    path.write_text(PROGRAM)
    uri = path.as_uri()
    open_doc(client, uri, PROGRAM)

    async def run_lenses() -> dict[str, int]:
        res = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        return {
            lens.command.arguments[1]: lens.range.start.line
            for lens in res or []
            if lens.command and lens.command.title == "▶ Run"
        }

    lines = PROGRAM.splitlines()
    editor_draft = next(i for i, ln in enumerate(lines) if ln.startswith("class Editor")) + 1
    publish = lines.index("def publish(topic: str) -> str:")
    assert await run_lenses() == {"editor.draft": editor_draft, "publish": publish}
    # a new resumable method arrives with an edit: the model is rebuilt off the event
    # loop once the editor asks, and the client is asked to refresh its lenses
    refreshes = rec_of(client).lens_refreshes
    at = lines.index("class Toolbox:")
    change_range(
        client,
        uri,
        (at, 0),
        (at, 0),
        "class Critic(Writer):\n    def draft(self, topic: str) -> str:\n"
        '        return s("critique", tidy, topic)\n\n\n',
    )
    await _symbols(client, uri)  # as an editor asks after an edit (facts may lag here)
    await wait_for(lambda: rec_of(client).lens_refreshes > refreshes, "a lens refresh")
    syms = await _symbols(client, uri)
    assert syms["Critic"].detail == "Agent"
    assert syms["Critic.draft"].detail == "resumable"
    assert [c.name for c in syms["Critic.draft"].children or []] == ['step "critique"']


GUESSES = '''\
from openprogram import Agent as A
from openprogram import step


class HttpAgent:
    """A plain class whose name ends in "Agent"."""

    def get(self, url: str) -> str:
        return url


class Crawler(HttpAgent):
    def fetch(self, url: str) -> str:
        return self.step(url)

    def step(self, url: str) -> str:
        return self.get(url)


def tidy(text: str) -> str:
    return text.strip()


class Writer(A):
    method_options = {"draft": {"resumable": True}}

    def draft(self, topic: str) -> str:
        return step("outline", tidy, topic)


class Editor(Writer):
    """Inherits draft, resumable through Writer's method_options."""


def prepare(topic: str) -> str:
    """Calls step but is not resumable."""
    return step("prepare", tidy, topic)


editor = Editor()
crawler = Crawler()
PROGRAM_ENTRIES = [editor.draft, crawler.fetch, prepare]
'''


async def test_lenses_and_symbols_where_a_guess_from_names_is_wrong(
    client: LanguageClient, workspace: Path
) -> None:
    """An Agent through ``Agent as A`` and its subclass, a class whose base's name ends
    in "Agent" but is no Agent, an entry naming an inherited resumable method through an
    instance, a plain function that calls ``step``: what ``ast`` guesses from names
    (the server's former outline) was wrong in each; the model is right."""
    path = workspace / "guesses.py"
    path.write_text(GUESSES)
    uri = path.as_uri()
    open_doc(client, uri, GUESSES)
    lines = GUESSES.splitlines()
    syms = await _symbols(client, uri)
    assert syms["Writer"].detail == "Agent" and syms["Editor"].detail == "Agent"
    assert syms["HttpAgent"].detail is None and syms["Crawler"].detail is None
    assert syms["Writer.draft"].detail == "resumable"
    assert syms["prepare"].detail is None  # calls step, yet is not resumable
    assert syms["Crawler.fetch"].children is None  # self.step(...) is not a durable step
    assert [c.name for c in syms["prepare"].children or []] == ['step "prepare"']

    res = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    runs = {
        lens.command.arguments[1]: lens.range.start.line
        for lens in res or []
        if lens.command and lens.command.title == "▶ Run"
    }
    # each Run lens sits on the def the entry runs: the inherited draft is Writer's
    assert runs == {
        "editor.draft": lines.index("    def draft(self, topic: str) -> str:"),
        "crawler.fetch": lines.index("    def fetch(self, url: str) -> str:"),
        "prepare": lines.index("def prepare(topic: str) -> str:"),
    }


FORM_FEED = """\
from openprogram import step
\f

def f(x: int) -> int:
    return x


def main() -> int:
    return step("a", f, 1)


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


async def test_names_and_steps_after_a_form_feed_and_a_one_letter_name(
    client: LanguageClient, workspace: Path
) -> None:
    """PEP 8 page breaks (a form feed line) are not line breaks for Python: the symbols
    after one kept their lines; ``def f`` selects ``f``, not the ``f`` of ``def``."""
    uri = (workspace / "paged.py").as_uri()
    open_doc(client, uri, FORM_FEED)
    syms = await _symbols(client, uri)
    lines = FORM_FEED.split("\n")
    f_line = lines.index("def f(x: int) -> int:")
    sel = syms["f"].selection_range
    assert (sel.start.line, sel.start.character, sel.end.character) == (f_line, 4, 5)
    [step_sym] = syms["main"].children or []
    assert step_sym.name == 'step "a"'
    assert step_sym.range.start.line == lines.index('    return step("a", f, 1)')


async def test_an_edit_after_a_form_feed_lands_on_the_clients_line(
    client: LanguageClient, workspace: Path
) -> None:
    """The server's copy of a document stays the editor's: an incremental edit below a
    page break changes the line the client named (pygls's own split counted the form
    feed as a line break and applied it one line too high)."""
    uri = (workspace / "paged_edit.py").as_uri()
    open_doc(client, uri, FORM_FEED)
    await _symbols(client, uri)
    line = FORM_FEED.split("\n").index('    return step("a", f, 1)')
    col = len('    return step("')
    change_range(client, uri, (line, col), (line, col + 1), "b")
    expected = 'step "b"'

    async def step_names() -> list[str]:
        syms = await _symbols(client, uri)
        return [c.name for c in syms["main"].children or []]

    async def renamed() -> bool:
        return await step_names() == [expected]

    for _ in range(200):
        if await renamed():
            break
        await asyncio.sleep(0.02)
    assert await step_names() == [expected]
    [sym] = (await _symbols(client, uri))["main"].children or []
    assert sym.range.start.line == line


async def test_a_finding_below_a_form_feed_is_on_its_own_line(
    client: LanguageClient, workspace: Path
) -> None:
    """Diagnostics below a page break point at the line the editor shows."""
    text = FORM_FEED.replace(
        '    return step("a", f, 1)',
        '    #\n    started = time.time()\n    return step("a", f, started)',
    ).replace("from openprogram import step\n", "import time\n\nfrom openprogram import step\n")
    uri = (workspace / "paged_finding.py").as_uri()
    open_doc(client, uri, text)
    diags = await diags_for(client, uri, 1)
    [op205] = [d for d in diags if d.code == "OP205"]
    line = text.split("\n").index("    started = time.time()")
    assert (op205.range.start.line, op205.range.start.character) == (line, len("    started = "))


BOUND_ENTRIES = '''\
from openprogram import Agent
from openprogram import step


def fetch(n: int) -> int:
    return n


class TicketTriage(Agent):
    instructions = "Sort support tickets."

    def triage(self, ticket: str) -> str:
        """Classify a ticket."""
        return self(f"Classify: {ticket}")


class Parent(Agent):
    method_options = {"go": {"resumable": True}}

    def go(self, n: int = 1) -> int:
        return step("fetch", fetch, n)


class Child(Parent):
    pass


triage = TicketTriage().triage
child_go = Child().go
PROGRAM_ENTRIES = ["triage", "child_go"]
'''


async def test_run_lens_of_an_entry_bound_to_a_method_sits_on_the_method(
    client: LanguageClient, workspace: Path
) -> None:
    """The README's idiom ``triage = TicketTriage().triage`` (and a method inherited
    through a subclass instance): ``▶ Run`` sits on the method's ``def``, where the
    method's ``Runs`` and ``Resume`` lenses go, not on the ``PROGRAM_ENTRIES`` line."""
    path = workspace / "triage.py"
    path.write_text(BOUND_ENTRIES)
    uri = path.as_uri()
    open_doc(client, uri, BOUND_ENTRIES)
    res = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    lines = BOUND_ENTRIES.splitlines()
    placed = {
        lens.command.arguments[1]: lines[lens.range.start.line].strip()
        for lens in res or []
        if lens.command and lens.command.title == "▶ Run"
    }
    assert placed == {
        "triage": "def triage(self, ticket: str) -> str:",
        "child_go": "def go(self, n: int = 1) -> int:",
    }
