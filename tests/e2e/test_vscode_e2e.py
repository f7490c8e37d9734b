"""The extension in a real VS Code: the packaged ``.vsix`` installed into a fresh code-server
profile, driven through its UI by headless Chromium (Playwright), the way a user works.

Needs ``tests/e2e/setup.sh`` (its ``env.sh`` names Node 24, code-server and Chromium) and
the ``.vsix`` (``OPENPROGRAM_E2E_VSIX``, default ``vscode-extension/openprogram-0.1.0.vsix``).
Screenshots go to ``OPENPROGRAM_E2E_ARTIFACTS`` (default ``.e2e-artifacts/``). Nothing
reaches the network: code-server's update check, telemetry and gallery are off.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Frame, Locator, Page, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("OPENPROGRAM_E2E_CACHE", Path.home() / ".cache" / "openprogram-e2e"))
VSIX = Path(
    os.environ.get("OPENPROGRAM_E2E_VSIX", ROOT / "vscode-extension" / "openprogram-0.1.0.vsix")
)
ARTIFACTS = Path(os.environ.get("OPENPROGRAM_E2E_ARTIFACTS", ROOT / ".e2e-artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
WAIT_MS = 60_000

TRIAGE = '''\
from openprogram import Agent


class Triage(Agent):
    """Sorts support tickets."""

    method_options = {
        "classify": {"exposse": "io"},
        "route": {"expose": "everything"},
        "archive": {"expose": "io"},
    }

    def classify(self, ticket: str) -> str:
        """Classify the ticket."""
        return ticket.strip().lower()

    def route(self, ticket: str) -> str:
        """Pick a team."""
        return "billing"


classify = Triage().classify
PROGRAM_ENTRIES = ["classify"]
'''

PIPELINE = '''\
from openprogram import step
from openprogram.durable import current_run_id, pause_run


def prepare(n: int) -> int:
    """Ask for a pause before the next step (someone has to look first)."""
    pause_run(current_run_id())
    return n + 1


def finish(n: int) -> int:
    return n * 10


def add(a: int, b: int) -> int:
    return a + b


def pipeline(n: int = 1) -> int:
    x = step("prepare", prepare, n)
    return step("finish", finish, x)


def total(a: int, b: int) -> int:
    return step("add", add, a, b)


pipeline.__agent_options__ = {"resumable": True}
total.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline", "total"]
'''

USER_SETTINGS = {
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "extensions.ignoreRecommendations": True,
    "telemetry.telemetryLevel": "off",
    "workbench.enableExperiments": False,
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": False,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "security.workspace.trust.enabled": False,
    "chat.disableAIFeatures": True,
    "editor.inlayHints.enabled": "on",
    "editor.minimap.enabled": False,
    "files.autoSave": "off",
}


def _env_from_setup() -> dict[str, str]:
    env_sh = CACHE / "env.sh"
    if not env_sh.is_file():
        pytest.fail(f"run tests/e2e/setup.sh first: {env_sh} is missing")
    out = {}
    for line in env_sh.read_text().splitlines():
        m = re.match(r'export (\w+)="(.*)"$', line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Editor:
    """A code-server page plus helpers that act as a user would."""

    def __init__(self, page: Page, workspace: Path) -> None:
        self.page = page
        self.workspace = workspace
        self.shots: list[Path] = []

    def shot(self, name: str) -> None:
        path = ARTIFACTS / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path))
        self.shots.append(path)

    def palette(self, command: str) -> None:
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(">" + command)
        self.page.locator(".quick-input-list .monaco-list-row").first.wait_for()
        self.page.keyboard.press("Enter")

    def open_file(self, name: str) -> None:
        self.page.keyboard.press("Control+p")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(name)
        self.page.locator(".quick-input-list .monaco-list-row", has_text=name).first.wait_for()
        self.page.keyboard.press("Enter")
        # Quick Open closed: when the file's tab is open already (an earlier test), the
        # tab is there before Enter is handled, and the next quick input a test waits for
        # would be Quick Open's own box, still showing the file name
        box.wait_for(state="hidden")
        self.page.locator(f'.tab[aria-label^="{name}"]').wait_for()
        self.focus_editor()
        self.page.keyboard.press("Control+Home")

    def focus_editor(self) -> None:
        """The file opened from Quick Open has the keyboard focus: wait for it, no click on
        the text. When Playwright retries a click (e.g. the element moved: the lenses' rows
        were just inserted) it first scrolls the element's end into view; for `.view-lines`,
        as tall as the whole scrollable content, that scrolls the editor to its last line,
        the lenses out of view."""
        focused = self.page.locator(".monaco-editor.focused")
        try:
            focused.first.wait_for(timeout=WAIT_MS // 6)
        except PlaywrightTimeout:  # then the top corner of the gutter, as a user would
            self.page.locator(".monaco-editor .margin").first.click(position={"x": 5, "y": 5})
            focused.first.wait_for()

    def go_to(self, line: int, column: int) -> None:
        self.page.keyboard.press("Control+g")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(state="visible")
        box.fill(f":{line}:{column}")
        self.page.keyboard.press("Enter")

    def editor_text(self) -> str:
        """The text of the visible editors (inlay hints are injected text: they are in it)."""
        texts = self.page.locator(".monaco-editor .view-lines").all_inner_texts()
        return "\n".join(texts).replace("\u00a0", " ")  # the editor renders spaces as NBSP

    def toast(self, pattern: str) -> str:
        toast = self.page.locator(".notification-toast", has_text=re.compile(pattern))
        toast.first.wait_for(timeout=WAIT_MS)
        return toast.first.inner_text()

    def lens(self, text: str, nth: int = 0) -> None:
        """Click the `nth` code lens reading `text`. Our lenses sit above functions near the
        top of the file. A lens the editor has not laid out in view is in the page but
        hidden, and it stays so until the editor scrolls (pressing Ctrl+Home at the top does
        not scroll). A user who does not see it scrolls the editor, a little down and back to
        the top, and looks again: so does this."""
        link = self.page.locator(".codelens-decoration a", has_text=text).nth(nth)
        deadline = time.monotonic() + 2 * WAIT_MS / 1000
        while True:
            try:
                link.wait_for(timeout=WAIT_MS // 6)
                break
            except PlaywrightTimeout:
                if time.monotonic() > deadline:
                    raise
                self.scroll_to_top()
        link.click()

    def scroll_to_top(self) -> None:
        """Turn the mouse wheel over the editor, one notch down and then up to the top (the
        editor scrolls about 50 px a notch, however far the wheel turns). It needs no
        keyboard focus, unlike Ctrl+Home, and the editor scrolls whatever its position."""
        box = self.page.locator(".monaco-editor").first.bounding_box()
        if box is None:
            return
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + min(100, box["height"] / 2))
        self.page.mouse.wheel(0, 100)
        for _ in range(40):
            self.page.mouse.wheel(0, -100)

    def clear_toasts(self) -> None:
        self.palette("Notifications: Clear All Notifications")

    def context_menu(self, target: Locator, item: str) -> None:
        """Right-click `target` and choose `item`. A menu that has just opened can ignore the
        first click on a loaded machine (it stays open, the item highlighted): then Enter picks
        the highlighted item, as a user would."""
        target.click(button="right")
        entry = self.page.locator(".context-view .action-item", has_text=item).first
        entry.wait_for()
        entry.hover()
        entry.click()
        menu = self.page.locator(".context-view .monaco-menu")
        for _ in range(3):
            try:
                menu.first.wait_for(state="hidden", timeout=3_000)
                return
            except PlaywrightTimeout:
                try:
                    entry.hover(timeout=2_000)
                    self.page.keyboard.press("Enter")
                except PlaywrightTimeout:  # it closed meanwhile
                    continue
        menu.first.wait_for(state="hidden")

    def frame_with(self, selector: str) -> Frame:
        deadline = time.monotonic() + WAIT_MS / 1000
        while time.monotonic() < deadline:
            for frame in self.page.frames:
                try:
                    if frame.locator(selector).count() > 0:
                        return frame
                except Exception:  # a frame being replaced
                    continue
            time.sleep(0.25)
        self.shot("no-frame-" + selector.strip("#."))
        urls = "\n  ".join(frame.url for frame in self.page.frames)
        raise AssertionError(f"no webview frame shows {selector}; frames:\n  {urls}")


@pytest.fixture(scope="module")
def editor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Editor]:
    tools = _env_from_setup()
    assert VSIX.is_file(), f"package the extension first (npm run ci): {VSIX} is missing"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    base = tmp_path_factory.mktemp("code-server")
    user_data, extensions, workspace = base / "user-data", base / "extensions", base / "ws"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS))
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / ".vscode" / "settings.json").write_text(
        json.dumps(
            {"openprogram.interpreter": sys.executable, "openprogram.trace.server": "messages"}
        )
    )
    (workspace / "triage.py").write_text(TRIAGE)
    (workspace / "pipeline.py").write_text(PIPELINE)
    node, entry = tools["OPENPROGRAM_E2E_NODE"], tools["OPENPROGRAM_E2E_CODE_SERVER"]
    env = {
        **os.environ,
        # An unreachable gallery: code-server never asks the network for extensions.
        "EXTENSIONS_GALLERY": json.dumps({"serviceUrl": "http://127.0.0.1:9/gallery"}),
        "OPENPROGRAM_STORE": str(workspace / ".openprogram"),
    }
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    subprocess.run(
        [node, entry, *common, "--install-extension", str(VSIX)],
        env=env, check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    log = (base / "code-server.log").open("w")
    server = subprocess.Popen(
        [
            node, entry, *common, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
            "--disable-update-check", "--disable-telemetry", "--disable-workspace-trust",
            "--disable-getting-started-override", str(workspace),
        ],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=tools["OPENPROGRAM_E2E_CHROMIUM"], args=CHROMIUM_ARGS
            )
            page = browser.new_page(viewport={"width": 1500, "height": 950})
            page.set_default_timeout(WAIT_MS)
            console = (ARTIFACTS / "browser-console.log").open("w")
            page.on("console", lambda m: console.write(f"{m.type}: {m.text}\n"))
            page.on("pageerror", lambda e: console.write(f"pageerror: {e}\n"))
            for _ in range(120):
                try:
                    page.goto(f"http://127.0.0.1:{port}/?folder={workspace}")
                    break
                except Exception:
                    time.sleep(0.5)
            page.locator(".monaco-workbench").wait_for()
            ed = Editor(page, workspace)
            yield ed
            print(f"\nscreenshots ({len(ed.shots)}) in {ARTIFACTS}:")
            for shot in ed.shots:
                print(f"  {shot}")
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()
        # Keep the logs beside the screenshots: code-server's and the extension's output channel.
        shutil.copy(base / "code-server.log", ARTIFACTS / "code-server.log")
        for channel in user_data.glob("logs/**/*OpenProgram*.log"):
            shutil.copy(channel, ARTIFACTS / "openprogram-output.log")
        print(f"logs in {ARTIFACTS}")


def cli(editor: Editor, command: str, *args: str) -> Any:
    """The project's CLI run as a user runs it in a terminal of the workspace (the command the
    extension runs, on the same store); its ``--json`` answer."""
    proc = subprocess.run(
        [sys.executable, "-m", "openprogram.cli", command, "--json", *args],
        cwd=editor.workspace,
        env={**os.environ, "OPENPROGRAM_STORE": str(editor.workspace / ".openprogram")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"openprogram {command}: {proc.stdout}{proc.stderr}") from None


def runs_of(editor: Editor, function: str, status: str) -> list[dict[str, Any]]:
    return [r for r in cli(editor, "runs") if r["function"] == function and r["status"] == status]


def paused_pipeline(editor: Editor) -> None:
    """A paused run of `pipeline`: the Run lens test makes it through the editor. When that
    test failed, one is made here from a terminal, so that the tests which only need the run
    check their own feature instead of all failing with it."""
    if not runs_of(editor, "pipeline", "paused"):
        paused = cli(editor, "run", "--args", '{"n": 1}', "--", "pipeline.py:pipeline")
        assert paused["status"] == "paused", paused


def completed_runs(editor: Editor) -> None:
    """`pipeline` resumed to 20 and `total` run to 42 (the Resume and Run tests make them; from
    a terminal when those failed: see :func:`paused_pipeline`)."""
    if not runs_of(editor, "pipeline", "completed"):
        paused_pipeline(editor)
        run_id = runs_of(editor, "pipeline", "paused")[0]["run_id"]
        assert cli(editor, "resume", "--", run_id)["status"] == "completed"
    if not runs_of(editor, "total", "completed"):
        total = cli(editor, "run", "--args", '{"a": 2, "b": 40}', "--", "pipeline.py:total")
        assert total["status"] == "completed", total


EDITOR_STATE = """() => JSON.stringify([...document.querySelectorAll('.monaco-editor')].map((ed) => {
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  const lines = ed.querySelector('.view-lines');
  return {
    uri: ed.getAttribute('data-uri'), box: box(ed), linesTop: lines && lines.parentElement.style.top,
    firstLine: lines && lines.innerText.split('\\n')[0],
    lenses: [...ed.querySelectorAll('.codelens-decoration')].map((w) => ({
      text: w.innerText.replace(/\\s+/g, ' '), visibility: getComputedStyle(w).visibility,
      display: getComputedStyle(w).display, style: w.getAttribute('style'), box: box(w),
    })),
  };
}), null, 1)"""


@pytest.fixture(autouse=True)
def record_failure(request: pytest.FixtureRequest, editor: Editor) -> Iterator[None]:
    """On a failure: a screenshot, the editors' text and their layout (where each code lens
    is and whether it is shown) beside the other artifacts."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is None or not report.failed:
        return
    name = request.node.name
    try:
        editor.shot(f"FAILED-{name}")
        (ARTIFACTS / f"FAILED-{name}.txt").write_text(
            editor.editor_text() + "\n\n" + editor.page.evaluate(EDITOR_STATE)
        )
    except Exception as exc:  # the page itself may be what failed
        print(f"no failure record for {name}: {exc}")


def test_problems_panel_lists_findings_with_codes(editor: Editor) -> None:
    editor.open_file("triage.py")
    editor.page.keyboard.press("Control+Shift+M")
    panel = editor.page.locator(".markers-panel")
    for code in ("OP101", "OP102", "OP104"):
        panel.locator(".monaco-list-row", has_text=code).first.wait_for(timeout=WAIT_MS)
    text = panel.inner_text()
    assert "did you mean 'expose'?" in text and "names no method of the class" in text
    editor.shot("problems-panel")


def test_hover_explains_an_option_key(editor: Editor) -> None:
    editor.open_file("triage.py")
    editor.go_to(9, 24)  # on "expose" in the `route` options
    editor.page.keyboard.press("Control+k")
    editor.page.keyboard.press("Control+i")
    hover = editor.page.locator(".monaco-hover").first
    hover.wait_for(state="visible", timeout=WAIT_MS)
    assert "expose" in hover.inner_text()
    editor.shot("hover")
    editor.page.keyboard.press("Escape")


def test_quick_fix_is_applied(editor: Editor) -> None:
    fix = editor.page.locator(
        ".action-widget .monaco-list-row", has_text="replace 'exposse' by 'expose'"
    )
    for attempt in range(4):  # the menu lists what the server had answered at that moment
        editor.page.keyboard.press("Escape")
        editor.go_to(8, 24)  # on "exposse"
        editor.page.keyboard.press("Control+.")
        try:
            fix.first.wait_for(timeout=WAIT_MS // 4)
            break
        except Exception:
            editor.shot(f"quick-fix-menu-not-yet-{attempt}")
    fix.first.wait_for(timeout=WAIT_MS)
    editor.shot("quick-fix-menu")
    fix.first.click()
    editor.page.wait_for_function(
        "() => ![...document.querySelectorAll('.monaco-editor .view-lines')]"
        ".some((lines) => lines.innerText.includes('exposse'))"
    )
    assert '"classify": {"expose": "io"}' in editor.editor_text()
    panel = editor.page.locator(".markers-panel")
    panel.locator(".monaco-list-row", has_text="OP102").wait_for(state="detached", timeout=WAIT_MS)
    editor.shot("quick-fix-applied")


def test_run_lens_asks_for_arguments_from_the_signature(editor: Editor) -> None:
    editor.open_file("pipeline.py")
    editor.lens("▶ Run")  # the first lens: `pipeline`
    box = editor.page.locator(".quick-input-widget input")
    box.wait_for(state="visible")
    assert box.input_value() == '{"n":1}'
    assert "pipeline(n: int = 1)" in editor.page.locator(".quick-input-widget").inner_text()
    editor.shot("run-arguments")
    editor.page.keyboard.press("Enter")
    text = editor.toast(r"Run pipeline: paused")
    assert "at step 'finish'" in text
    editor.shot("run-paused")


def test_arguments_are_checked_before_the_run(editor: Editor) -> None:
    editor.open_file("pipeline.py")
    editor.lens("▶ Run", nth=1)  # `total`
    box = editor.page.locator(".quick-input-widget input")
    box.wait_for(state="visible")
    assert box.input_value() == '{"a":0,"b":0}'
    box.fill('{"a": 2, "b": "x"}')
    # the server's check, in the words `openprogram run` refuses these arguments with
    message = editor.page.locator(
        ".quick-input-widget", has_text="argument 'b' expects int, got string \"x\""
    )
    message.wait_for(timeout=WAIT_MS)
    editor.shot("arguments-checked")
    box.fill('{"a": 2, "b": 40}')
    editor.page.keyboard.press("Enter")
    assert "→ 42" in editor.toast(r"Run total: completed")
    editor.shot("run-completed")


def test_resume_lens_resumes_the_paused_run(editor: Editor) -> None:
    paused_pipeline(editor)
    editor.open_file("pipeline.py")
    editor.clear_toasts()
    editor.lens('⟳ Resume (step "finish" #0)')
    assert "→ 20" in editor.toast(r"Resume \w+: completed")
    editor.shot("resumed")


def test_inlay_hints_show_step_results(editor: Editor) -> None:
    completed_runs(editor)
    editor.open_file("pipeline.py")  # its step lines in view: hints are drawn for those
    editor.page.wait_for_function(
        "() => [...document.querySelectorAll('.monaco-editor .view-lines')]"
        ".some((lines) => lines.innerText.replace(/\\u00a0/g, ' ').includes('→ 20'))",
        timeout=WAIT_MS,
    )
    text = editor.editor_text()
    assert "→ 2" in text and "→ 42" in text
    editor.shot("inlay-hints")


def runs_view(editor: Editor) -> Locator:
    """The OpenProgram Runs view, expanded."""
    header = editor.page.locator(".pane-header", has_text="OpenProgram Runs")
    header.wait_for()
    if header.get_attribute("aria-expanded") != "true":
        header.click()
    return editor.page.locator(".pane", has=header)


def test_runs_view_lists_runs_and_steps(editor: Editor) -> None:
    completed_runs(editor)
    view = runs_view(editor)
    run_row = view.locator(".monaco-list-row", has_text="pipeline ·").first
    run_row.wait_for(timeout=WAIT_MS)
    assert "→ 20" in run_row.inner_text()
    run_row.click()
    editor.page.keyboard.press("ArrowRight")
    view.locator(".monaco-list-row", has_text="finish #0").first.wait_for(timeout=WAIT_MS)
    assert "prepare #0" in view.inner_text()
    editor.shot("runs-view")


def test_run_graph_shows_the_run(editor: Editor) -> None:
    completed_runs(editor)
    view = runs_view(editor)
    editor.context_menu(
        view.locator(".monaco-list-row", has_text="pipeline ·").first, "Show Run Graph"
    )
    frame = editor.frame_with("#op-summary")
    frame.locator("#op-summary", has_text="completed").wait_for(timeout=WAIT_MS)
    frame.wait_for_function("() => Number(document.body.dataset.graphNodes) >= 3")
    assert re.search(r"\d+ nodes", frame.locator("#op-summary").inner_text())
    editor.shot("run-graph")
