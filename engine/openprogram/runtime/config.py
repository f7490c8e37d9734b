"""``create_runtime()`` autodetection of the model to use.

Order: ``OPENPROGRAM_MODEL``; ``model`` under ``[tool.openprogram]`` of the Program's
configuration (:func:`openprogram.contract.pyproject.find_config`: the nearest
``pyproject.toml`` with that table, searching upward from the Program's folder for a run,
from the working directory for a plain ``create_runtime()``); ``OPENAI_API_KEY``
(-> ``openai:gpt-4.1-mini``); ``ANTHROPIC_API_KEY`` (-> ``anthropic:claude-sonnet-4-5``).
On Python 3.10 without ``tomli`` the pyproject step is skipped.
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


def model_setting(
    cwd: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[str, str] | None:
    """``(model string, where it is set)`` by the autodetection order, searching the
    pyproject from ``cwd`` (a folder or a Program file; default the working directory);
    None when nothing is configured. The string is not parsed here."""
    env = os.environ if environ is None else environ
    explicit = (env.get("OPENPROGRAM_MODEL") or "").strip()
    if explicit:
        return explicit, "OPENPROGRAM_MODEL"
    found = pyproject_model(Path(cwd) if cwd is not None else Path.cwd())
    if found is not None:
        return found
    if env.get("OPENAI_API_KEY"):
        return DEFAULT_OPENAI_MODEL, "OPENAI_API_KEY"
    if env.get("ANTHROPIC_API_KEY"):
        return DEFAULT_ANTHROPIC_MODEL, "ANTHROPIC_API_KEY"
    return None


def detect_model(
    cwd: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The model string to use by default, or ConfigError saying how to configure one."""
    found = model_setting(cwd, environ)
    if found is None:
        raise ConfigError(HOW_TO_CONFIGURE)
    return found[0]


def checked_model_setting(program: str | os.PathLike[str] | None) -> str | None:
    """The model a run of the Program file ``program`` gets when it is given none
    (:func:`model_setting` from the Program's folder), parsed now: a bad string is a
    ConfigError naming where it is set, before anything runs. None: nothing configured
    (the Program may make no model call; one that does says how to configure a model)."""
    from openprogram.runtime.model_string import parse_model_string

    found = model_setting(program)
    if found is None:
        return None
    model, where = found
    try:
        parse_model_string(model)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return model


def pyproject_model(start: Path) -> tuple[str, str] | None:
    """``[tool.openprogram] model`` of the configuration applying to ``start`` and where
    it is set (``<pyproject>: [tool.openprogram] model``)."""
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
    return model.strip(), f"{path}: [tool.openprogram] model"
