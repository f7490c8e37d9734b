"""create_runtime() autodetection: env var, pyproject, API keys, and the nothing-found error."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import ConfigError
from openprogram.runtime import create_runtime, detect_model

ENV_VARS = (
    "OPENPROGRAM_MODEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No model env vars; cwd is an empty tmp dir with no pyproject above it that matters."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    project = tmp_path / "project"
    (project / "src" / "pkg").mkdir(parents=True)
    monkeypatch.chdir(project / "src" / "pkg")
    return project


def test_openprogram_model_wins(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (clean_env / "pyproject.toml").write_text('[tool.openprogram]\nmodel = "scripted:block"\n')
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENPROGRAM_MODEL", "scripted:echo")
    with create_runtime() as rt:
        assert rt.model == "scripted:echo"
        assert rt.exec("hi") == "hi"


def test_nearest_pyproject_upward_from_cwd(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (clean_env / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.openprogram]\nmodel = "scripted:echo"\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with create_runtime() as rt:
        assert rt.model == "scripted:echo"


def test_pyproject_without_the_table_is_skipped(clean_env: Path) -> None:
    (clean_env / "pyproject.toml").write_text('[tool.openprogram]\nmodel = "scripted:echo"\n')
    (clean_env / "src" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert detect_model() == "scripted:echo"


def test_api_keys_pick_default_models(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "a-key")
    assert detect_model() == "anthropic:claude-sonnet-4-5"
    monkeypatch.setenv("OPENAI_API_KEY", "o-key")
    assert detect_model() == "openai:gpt-4.1-mini"
    with create_runtime() as rt:
        assert rt.model == "openai:gpt-4.1-mini"
        assert "o-key" not in repr(rt) and "o-key" not in repr(rt.provider)


def test_nothing_configured_says_how(clean_env: Path) -> None:
    with pytest.raises(ConfigError) as info:
        create_runtime()
    message = str(info.value)
    assert (
        "OPENPROGRAM_MODEL" in message and "export OPENPROGRAM_MODEL=openai:gpt-4.1-mini" in message
    )
    assert "[tool.openprogram]" in message and "OPENAI_API_KEY" in message
    assert "\n" not in message


def test_bad_pyproject_is_a_clear_error(clean_env: Path) -> None:
    (clean_env / "pyproject.toml").write_text("[tool.openprogram\nmodel = 1\n")
    with pytest.raises(ConfigError, match=r"pyproject.toml: invalid TOML"):
        detect_model()
    (clean_env / "pyproject.toml").write_text("[tool.openprogram]\nmodel = 1\n")
    with pytest.raises(ConfigError, match="model must be a non-empty string"):
        detect_model()


def test_explicit_model_skips_detection(clean_env: Path) -> None:
    with create_runtime("scripted:echo", system="s") as rt:
        assert rt.system == "s" and rt.model == "scripted:echo"
