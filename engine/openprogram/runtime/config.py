"""``create_runtime()`` autodetection of the model to use.

Order: ``OPENPROGRAM_MODEL``; ``model`` under ``[tool.openprogram]`` in the nearest
``pyproject.toml`` (searching upward from the working directory) that has that table;
``OPENAI_API_KEY`` (-> ``openai:gpt-4.1-mini``); ``ANTHROPIC_API_KEY``
(-> ``anthropic:claude-sonnet-4-5``). On Python 3.10 without ``tomli`` the pyproject
step is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from openprogram.contract.pyproject import nearest_openprogram_table
from openprogram.errors import ConfigError

DEFAULT_OPENAI_MODEL = "openai:gpt-4.1-mini"
DEFAULT_ANTHROPIC_MODEL = "anthropic:claude-sonnet-4-5"

HOW_TO_CONFIGURE = (
    "no model configured: set OPENPROGRAM_MODEL (e.g. export OPENPROGRAM_MODEL="
    'openai:gpt-4.1-mini), add `model = "openai:gpt-4.1-mini"` under [tool.openprogram] '
    "in pyproject.toml, or set OPENAI_API_KEY / ANTHROPIC_API_KEY"
)


def detect_model(cwd: str | Path | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The model string to use by default, or ConfigError saying how to configure one."""
    env = os.environ if environ is None else environ
    explicit = (env.get("OPENPROGRAM_MODEL") or "").strip()
    if explicit:
        return explicit
    from_pyproject = pyproject_model(Path(cwd) if cwd is not None else Path.cwd())
    if from_pyproject:
        return from_pyproject
    if env.get("OPENAI_API_KEY"):
        return DEFAULT_OPENAI_MODEL
    if env.get("ANTHROPIC_API_KEY"):
        return DEFAULT_ANTHROPIC_MODEL
    raise ConfigError(HOW_TO_CONFIGURE)


def pyproject_model(start: Path) -> str | None:
    """``[tool.openprogram] model`` from the nearest pyproject.toml having that table."""
    found = nearest_openprogram_table(start)
    if found is None:
        return None
    path, table = found
    model = table.get("model")
    if model is None:
        return None
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(
            f"{path}: [tool.openprogram] model must be a non-empty string such as "
            '"openai:gpt-4.1-mini"'
        )
    return model.strip()
