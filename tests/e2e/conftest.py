"""The real-editor test (``test_vscode_e2e.py``) runs only when asked (``OPENPROGRAM_E2E=1``,
set by ``.ci/run`` after ``tests/e2e/setup.sh`` installed code-server and Chromium): it
needs a packaged ``.vsix`` and takes minutes, so the default ``pytest`` run leaves it out."""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

collect_ignore = [] if os.environ.get("OPENPROGRAM_E2E") == "1" else ["test_vscode_e2e.py"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Each phase's report on its test (``item.rep_call``): the real-editor test records the
    page when a test failed."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
