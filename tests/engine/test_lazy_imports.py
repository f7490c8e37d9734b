"""What starting the editor's server, the store readers and the CLI loads: the model runtime
and its HTTP client only when a Program runs, the durable package only for runs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from openprogram.store import SessionStore

RUNTIME = ("httpx", "openprogram.runtime", "openprogram.durable.runner")


def _loaded_after(code: str, watched: Sequence[str] = RUNTIME, cwd: Path | None = None) -> set[str]:
    """Which of the ``watched`` modules a fresh interpreter has loaded after ``code`` (run in
    ``cwd``, without ``$OPENPROGRAM_STORE``)."""
    probe = (
        f"{code}\nimport sys\n"
        f"print('loaded:', *(m for m in {tuple(watched)!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=cwd,
        env={**os.environ, "OPENPROGRAM_STORE": ""},
    )
    last = out.stdout.splitlines()[-1].split()  # the line after what ``code`` printed
    assert last[0] == "loaded:", out.stdout
    return set(last[1:])


@pytest.mark.parametrize(
    "code",
    [
        "import openprogram_lsp.server",
        "from openprogram.durable import queries",
        "from openprogram.durable import queries as q, step, workflow",
    ],
)
def test_the_server_and_the_run_readers_start_without_the_model_runtime(code: str) -> None:
    assert _loaded_after(code) == set()


def test_the_durable_api_names_still_load_the_runner() -> None:
    assert _loaded_after("from openprogram.durable import start_run, approve_run") >= {
        "openprogram.durable.runner"
    }
    with pytest.raises(subprocess.CalledProcessError) as info:
        _loaded_after("from openprogram.durable import no_such_name")
    assert "ImportError" in info.value.stderr and "no_such_name" in info.value.stderr


def test_the_run_commands_load_the_http_client_only_for_a_model_call() -> None:
    """``openprogram run`` / ``runs`` / ``resume`` load the runner; the providers and their
    HTTP client (about 40 % of a CLI start) come only with the first model call."""
    assert "httpx" not in _loaded_after("from openprogram.durable.runner import start_run")
    assert "httpx" in _loaded_after("from openprogram.runtime import Runtime")


def test_every_name_the_runtime_package_exports_resolves() -> None:
    """``openprogram.runtime`` lists its names three times (typing imports, the lazy table,
    ``__all__``): each exported name loads, as ``from openprogram.runtime import X`` does."""
    code = (
        "import openprogram.runtime as rt\n"
        "missing = [n for n in rt.__all__ if getattr(rt, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(rt._HOME) <= set(rt.__all__), set(rt._HOME) - set(rt.__all__)\n"
        "from openprogram.runtime import Runtime, ScriptedProvider, Usage\n"
        "from openprogram.runtime.runtime import Runtime as R\n"
        "assert Runtime is R\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(
    "argv", [["--help"], ["sessions", "--help"], ["sessions"], ["show", "nosuch"]]
)
def test_the_session_commands_start_without_the_durable_package(
    argv: list[str], tmp_path: Path
) -> None:
    """Every command's parser is built on each start: ``openprogram sessions``, ``show``
    (here its error line, in a folder without a store) and ``--help`` do not load the
    durable package, its step machinery and the run store (about 80 ms of a start)."""
    code = f"from openprogram.cli.main import main\nmain({argv!r})"
    assert _loaded_after(code, ("openprogram.durable",), cwd=tmp_path) == set()


def test_show_reads_a_session_without_the_step_machinery(tmp_path: Path) -> None:
    """``openprogram show`` reads the run records (``durable.queries``) but never runs a
    step: ``from openprogram.durable import queries`` does not load ``durable.steps``."""
    with SessionStore(tmp_path / ".openprogram") as store:
        session = store.create_session("demo")
    code = f"from openprogram.cli.main import main\nassert main(['show', {session!r}]) == 0"
    watched = ("openprogram.durable.queries", "openprogram.durable.steps")
    assert _loaded_after(code, watched, cwd=tmp_path) == {"openprogram.durable.queries"}
