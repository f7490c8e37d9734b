"""What starting the editor's server and the store readers loads: the model runtime and its
HTTP client only when a Program runs."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loaded_after(code: str) -> set[str]:
    probe = (
        f"{code}\nimport sys\n"
        "print(' '.join(m for m in ('httpx', 'openprogram.runtime', "
        "'openprogram.durable.runner') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(out.stdout.split())


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
