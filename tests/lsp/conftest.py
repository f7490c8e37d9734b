"""pytest-lsp fixtures: a real client over stdio talking to ``python -m openprogram_lsp``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsp_harness import SERVER_CMD, init_params, make_client
from pytest_lsp import ClientServerConfig, LanguageClient


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


CONFIG = ClientServerConfig(server_command=SERVER_CMD, client_factory=make_client)


@pytest_lsp.fixture(config=CONFIG)
async def client(
    lsp_client: LanguageClient, workspace: Path, request: pytest.FixtureRequest
) -> AsyncIterator[None]:
    marker = request.node.get_closest_marker("lsp_init")
    opts = marker.kwargs if marker else {}
    await lsp_client.initialize_session(
        init_params(
            workspace,
            init_options=opts.get("options"),
            pull=opts.get("pull", False),
            folders=opts.get("folders"),
        )
    )
    yield
    await lsp_client.shutdown_session()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "lsp_init(options=None, pull=False, folders=None): initialize options of the lsp client",
    )
