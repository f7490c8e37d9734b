"""Pre-run check of a resumable entry: ``openprogram-lint`` restricted to that entry.

The engine imports ``openprogram_analyzers`` lazily, so the static check and this
runtime check are the same code with the same codes, messages, suppressions
(``# noqa: OP205``) and config (``[tool.openprogram.lint]``). A clean result is cached
by the content hash of the Program file, its nearest ``pyproject.toml`` and the
analyzer's code, so starting a resumable run again costs little more than a plain run
(a warm start neither parses nor imports the analyzer).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from openprogram.durable.errors import DeterminismError

CACHE_ENV = "OPENPROGRAM_CHECK_CACHE"
"""Directory of the pre-run check cache (default: ``$XDG_CACHE_HOME/openprogram/checks``)."""
_STAMP: list[str] = []


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it is below it (as lint prints)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - other drive on Windows
        return path
    return path if rel.startswith("..") else rel


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "openprogram" / "checks"


def _analyzer_stamp() -> str:
    """Names, sizes and mtimes of the analyzer's source files (no import)."""
    if _STAMP:
        return _STAMP[0]
    import importlib.util

    spec = importlib.util.find_spec("openprogram_analyzers")
    h = hashlib.sha256()
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        for dirpath, _dirs, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    h.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    _STAMP.append(h.hexdigest())
    return _STAMP[0]


def _pyproject(path: str) -> bytes:
    """The configuration applying to ``path`` (its file and content), for the key."""
    from openprogram.contract.pyproject import find_config
    from openprogram.errors import ConfigError

    try:
        found = find_config(path)
        return b"" if found is None else str(found).encode() + b"\0" + found.read_bytes()
    except (ConfigError, OSError):  # the check itself reports an unreadable config
        return b""


def _key(source: str, path: str, qualname: str) -> str:
    h = hashlib.sha256()
    for part in (_analyzer_stamp(), os.path.abspath(path), qualname):
        h.update(part.encode() + b"\0")
    h.update(source.encode() + b"\0")
    h.update(_pyproject(path))
    return h.hexdigest()


def _digest(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _cached(key: str) -> list[str] | None:
    try:
        data = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("reached"), list):
        return None
    helpers = data.get("helpers") or {}
    if any(_digest(p) != d for p, d in helpers.items()):  # a helper module changed
        return None
    return [str(q) for q in data["reached"]]


def _store(key: str, reached: list[str], helpers: dict[str, str]) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f"{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"reached": reached, "helpers": helpers}), encoding="utf-8")
        os.replace(tmp, folder / f"{key}.json")
    except OSError:  # a read-only cache only costs speed
        pass


def check_resumable(source: str, path: str, qualname: str) -> list[str]:
    """Raise :class:`DeterminismError` listing every error finding for ``qualname``;
    otherwise return the qualnames of the functions the check reached (saved for
    ``keep_original``)."""
    key = _key(source, path, qualname)
    reached = _cached(key)
    if reached is not None:
        return reached
    import importlib

    try:
        # libcst's dataclass methods not compiled again in every process (in a user's
        # process: no GC pause or freeze, unlike the linter's load_modules). Only what the
        # check needs: every module imported here stays in the run's heap, and the rules'
        # objects made each step's share of the cyclic GC's passes cost ~30 µs more
        from openprogram_analyzers.dataclass_code import reuse_dataclass_code

        with reuse_dataclass_code():
            analysis = importlib.import_module("openprogram_analyzers.analysis")
    except ModuleNotFoundError as exc:
        if exc.name and "openprogram_analyzers" in exc.name:
            raise  # not installed: the caller decides
        raise DeterminismError(f"the determinism checker cannot be imported: {exc}") from None
    try:
        result = analysis.check_entry(source, path, qualname)
    except ValueError as exc:  # a bad [tool.openprogram.lint] section
        raise DeterminismError(f"{qualname} cannot be checked: {exc}") from None
    except Exception as exc:
        raise DeterminismError(
            f"the determinism check of {qualname} failed internally: {type(exc).__name__}: {exc}"
        ) from None
    errors = [f for f in result.findings if getattr(f, "severity", "error") == "error"]
    if errors:
        import dataclasses

        from openprogram_analyzers.formats import text_lines

        def shown(f: Any) -> Any:  # paths as lint prints them (relative to the cwd)
            related = tuple(dataclasses.replace(r, path=display_path(r.path)) for r in f.related)
            return dataclasses.replace(f, path=display_path(f.path), related=related)

        lines = [line for f in errors for line in text_lines(shown(f))]
        raise DeterminismError(f"{qualname} cannot run as a resumable function:", lines)
    helpers = {p: d for p in result.helper_files if (d := _digest(p)) is not None}
    _store(key, list(result.reached), helpers)
    return list(result.reached)
