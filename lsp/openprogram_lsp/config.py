"""Server settings: initialization options, ``workspace/configuration`` and pyproject.

Precedence (lowest first): ``[tool.openprogram.lint]`` of the document's configuration (the
nearest ``pyproject.toml`` with a ``[tool.openprogram]`` table at or above the document,
``find_config``: as ``openprogram run`` and ``openprogram-lint`` find it, for a document
outside every workspace folder too), ``initializationOptions``, the client's
``openprogram`` configuration section.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CONFIG_SECTION = "openprogram"
DEFAULT_DEBOUNCE_MS = 250
DEFAULT_INCREMENTAL_MIN_CHARS = 20_000  # smaller documents get the full analysis at once
DEFAULT_RULE_DOCS_URL = "https://github.com/openprogram/openprogram/blob/main/README.md#{anchor}"
RECHECK_ENV = "OPENPROGRAM_LSP_RECHECK_S"
DEFAULT_RECHECK_S = 30.0


def recheck_seconds() -> float:
    """How long the server waits before it probes a PostgreSQL store again (one it could
    not read, or one it could, for a change): ``$OPENPROGRAM_LSP_RECHECK_S`` seconds, or 30
    when unset or empty (``ConfigError`` for a bad value). Read once, when the server
    starts (``__main__``; ``run_index.GATE.recheck_s``)."""
    from openprogram.store.lease import env_seconds

    return env_seconds(RECHECK_ENV, DEFAULT_RECHECK_S, "a time between probes of a run store")


@dataclass(frozen=True)
class ClientSettings:
    """Settings sent by the client (init options or ``workspace/configuration``)."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    store: str | None = None  # "": cleared (the default store, over an earlier value)
    interpreter: str | None = None
    debounce_ms: int | None = None
    rule_docs_url: str | None = None
    incremental_min_chars: int | None = None

    def overlay(self, other: ClientSettings) -> ClientSettings:
        """Return these settings with every value ``other`` sets taking precedence."""
        changes = {
            f.name: getattr(other, f.name)
            for f in dataclasses.fields(other)
            if getattr(other, f.name) is not None
        }
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Settings:
    """Effective settings of the server for one workspace."""

    root: Path | None = None
    client: ClientSettings = field(default_factory=ClientSettings)
    pyproject_config: Any = None  # LintConfig from [tool.openprogram.lint], if any
    pyproject_error: str | None = None

    @property
    def debounce_s(self) -> float:
        """Delay before re-analysing while an analysis is already running."""
        ms = self.client.debounce_ms
        return (DEFAULT_DEBOUNCE_MS if ms is None else max(0, ms)) / 1000.0

    @property
    def incremental_min_chars(self) -> int:
        v = self.client.incremental_min_chars
        return DEFAULT_INCREMENTAL_MIN_CHARS if v is None else max(0, v)

    @property
    def rule_docs_url(self) -> str:
        return self.client.rule_docs_url or DEFAULT_RULE_DOCS_URL

    def store_dir(self) -> Path | str:
        """Store root of this folder: the ``store`` setting, ``$OPENPROGRAM_STORE`` or
        ``.openprogram``, a relative one resolved against the folder (not the server's
        working directory): ``openprogram.store.store_location``. A ``postgresql://`` URL
        or a libpq keyword string stays as written (reading the latter is the store error
        that says a URL is needed, never a directory named after it)."""
        from openprogram.store.session_store import store_location

        return store_location(self.client.store, base=self.root or Path.cwd())

    def interpreter(self) -> str:
        """Workspace interpreter: setting, ``<root>/.venv`` if present, else the server's."""
        if self.client.interpreter:
            p = Path(os.path.expanduser(self.client.interpreter))
            if not p.is_absolute() and self.root is not None and os.sep in str(p):
                p = self.root / p
            return str(p)
        if self.root is not None:
            for rel in (".venv/bin/python", ".venv/Scripts/python.exe"):
                cand = self.root / rel
                if cand.exists():
                    return str(cand)
        return sys.executable

    def lint_config(self) -> Any:
        """The analyzer's ``LintConfig`` with client select/ignore applied (None = defaults)."""
        base = self.pyproject_config
        sel, ign = self.client.select, self.client.ignore
        if sel is None and ign is None:
            return base
        try:
            from openprogram_analyzers import LintConfig
        except Exception:  # analyzer missing: diagnostics are off anyway
            return base
        if base is None:
            base = LintConfig()
        changes: dict[str, Any] = {}
        if sel is not None:
            changes["select"] = tuple(sel)
        if ign is not None:
            changes["ignore"] = tuple(ign)
        try:
            return dataclasses.replace(base, **changes)
        except Exception as exc:
            log.warning("cannot apply client lint settings: %s", exc)
            return base


def _str_tuple(value: Any, name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [v for v in value.replace(",", " ").split() if v]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError(f"'{name}' must be a list of rule codes")


def _rule_codes(value: Any, name: str) -> tuple[str, ...] | None:
    """``lint.select`` / ``lint.ignore``: rule codes or prefixes, each one a rule has
    (checked by ``LintConfig.validate``, as in ``[tool.openprogram.lint]``)."""
    codes = _str_tuple(value, f"lint.{name}")
    if codes is None:
        return None
    try:
        from openprogram_analyzers import LintConfig, LintConfigError
    except Exception:  # analyzer missing: diagnostics are off anyway
        return codes
    try:
        LintConfig(select=codes).validate(f"'lint.{name}'")
    except LintConfigError as exc:
        raise ValueError(f"{exc} (the setting is ignored)") from None
    return codes


def _opt_str(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"'{name}' must be a string")
    return value


def parse_client_settings(raw: Any) -> tuple[ClientSettings, list[str]]:
    """Parse ``{"lint": {"select", "ignore"}, "store", "interpreter", ...}`` leniently.

    Returns the settings and one message per ignored bad value (never raises).
    """
    errors: list[str] = []
    if raw is None:
        return ClientSettings(), errors
    if not isinstance(raw, Mapping):
        return ClientSettings(), [f"settings must be an object, got {type(raw).__name__}"]
    if CONFIG_SECTION in raw and isinstance(raw[CONFIG_SECTION], Mapping):
        raw = raw[CONFIG_SECTION]
    values: dict[str, Any] = {}
    lint = raw.get("lint") or {}
    if not isinstance(lint, Mapping):
        errors.append("'lint' must be an object")
        lint = {}
    parsers: list[tuple[str, Any, Any]] = [
        ("select", lint.get("select"), _rule_codes),
        ("ignore", lint.get("ignore"), _rule_codes),
        ("store", raw.get("store"), _opt_str),
        ("interpreter", raw.get("interpreter"), _opt_str),
        ("rule_docs_url", raw.get("ruleDocsUrl", raw.get("rule_docs_url")), _opt_str),
    ]
    for name, value, parse in parsers:
        try:
            values[name] = parse(value, name)
        except ValueError as exc:
            errors.append(str(exc))
    if "store" in raw and values.get("store") is None and raw.get("store") in (None, ""):
        values["store"] = ""  # cleared: the default store, over an earlier value
    for key, alias, name in (
        ("debounceMs", "debounce_ms", "debounce_ms"),
        ("incrementalMinChars", "incremental_min_chars", "incremental_min_chars"),
    ):
        value = raw.get(key, raw.get(alias))
        if value is None:
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[name] = int(value)
        else:
            errors.append(f"'{key}' must be a number")
    return ClientSettings(**values), errors


def config_file_for(
    path: str | Path, memo: dict[str, Path | None] | None = None
) -> tuple[Path | None, str | None]:
    """The ``pyproject.toml`` whose ``[tool.openprogram]`` applies to ``path`` (a document
    or a folder): ``openprogram.contract.pyproject.find_config``, the rule ``openprogram
    run`` and ``openprogram-lint`` follow; ``(None, error)`` when a pyproject on the way
    cannot be parsed (never raises)."""
    from openprogram.contract.pyproject import find_config

    try:
        return find_config(path, memo), None
    except Exception as exc:
        return None, f"[tool.openprogram.lint] ignored: {exc}"


#: What ``os.stat`` says of a folder's ``pyproject.toml`` (None: there is none), to see
#: cheaply whether it changed: ``(mtime_ns, ctime_ns, size, inode)``.
PyprojectStat = tuple[int, int, int, int] | None


def pyproject_stat(directory: str) -> PyprojectStat:
    """:data:`PyprojectStat` of ``directory``'s ``pyproject.toml`` (one ``stat``, no read)."""
    try:
        st = os.stat(os.path.join(directory, "pyproject.toml"))
    except (OSError, ValueError):
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def config_dirs(path: str | Path) -> Iterator[str]:
    """The folders whose ``pyproject.toml`` ``find_config`` may read for ``path`` (a
    document or a folder), nearest first, up to the filesystem root (its memo's keys)."""
    here = os.path.realpath(path)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        yield here
        parent = os.path.dirname(here)
        if parent == here:
            return
        here = parent


def load_pyproject(path: Path | None) -> tuple[Any, str | None]:
    """``LintConfig.from_pyproject`` of the pyproject ``path`` (None: defaults), or
    ``(None, error)`` on failure (never raises)."""
    if path is None:
        return None, None
    try:
        from openprogram_analyzers import LintConfig

        return LintConfig.from_pyproject(path), None
    except Exception as exc:
        return None, f"{path}: [tool.openprogram.lint] ignored: {exc}"
