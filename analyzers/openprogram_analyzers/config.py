"""``[tool.openprogram.lint]`` configuration and rule selection."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from openprogram_analyzers.paths import excluded, path_matches, relative_to_root

TYPE_CHECKING = False  # typing, pathlib and tomllib load only when needed (CLI startup)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class LintConfigError(ValueError):
    """Malformed configuration or an unknown rule selector (exit code 2)."""


@dataclass(frozen=True)
class LintConfig:
    """Which rules run where. Selectors are code prefixes (``OP2``, ``OP203``, ``ALL``)."""

    select: tuple[str, ...] = ("OP",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    root: str = "."
    extend_ignore: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # exclude files named explicitly too (pre-commit)

    @property
    def excludes(self) -> tuple[str, ...]:
        """Every exclude pattern (``exclude`` and ``extend-exclude``)."""
        return (*self.exclude, *self.extend_exclude)

    def enabled(self, code: str, path: str | None = None) -> bool:
        """Whether ``code`` is reported (for ``path`` when per-file ignores apply)."""
        if not (_matches(code, self.select) or _matches(code, self.extend_select)):
            return False
        # The most specific selector wins between select and ignore (ruff semantics).
        sel = max(_match_len(code, (*self.select, *self.extend_select)), 0)
        ign = _match_len(code, (*self.ignore, *self.extend_ignore))
        if ign >= sel and ign >= 0:
            return False
        if path is not None and self.per_file_ignores:
            rel = self.relative(path)
            for pattern, codes in self.per_file_ignores.items():
                if path_matches(rel, pattern) and _matches(code, codes):
                    return False
        return True

    def enabled_codes(self, codes: Iterable[str], path: str | None = None) -> frozenset[str]:
        if path is not None and self.per_file_ignores:
            return frozenset(c for c in codes if self.enabled(c, path))
        # Without per-file ignores the answer depends on the codes only: asked once per
        # file with the same codes, it is remembered on the instance (not a field).
        memo: dict[tuple[str, ...], frozenset[str]] | None = self.__dict__.get("_enabled_memo")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_enabled_memo", memo)
        key = tuple(codes)
        found = memo.get(key)
        if found is None:
            found = memo[key] = frozenset(c for c in key if self.enabled(c))
        return found

    def is_excluded(self, path: str) -> bool:
        return excluded(path, self.root, self.excludes)

    def relative(self, path: str) -> str:
        """``path`` relative to the config root, '/'-separated (no symlink resolution)."""
        return relative_to_root(path, self.root)

    def fingerprint(self) -> str:
        """Stable hash of everything that changes results (for the cache)."""
        data = (
            ("select", tuple(self.select)),
            ("ignore", tuple(self.ignore)),
            ("extend_select", tuple(self.extend_select)),
            ("extend_ignore", tuple(self.extend_ignore)),
            (
                "per_file_ignores",
                tuple((k, tuple(v)) for k, v in sorted(self.per_file_ignores.items())),
            ),
        )
        from openprogram_analyzers.digest import blake2b_hex

        return blake2b_hex(repr(data).encode("utf-8", "surrogateescape"), 8)

    def with_overrides(
        self,
        *,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        extend_select: Iterable[str] | None = None,
        extend_ignore: Iterable[str] | None = None,
        extend_exclude: Iterable[str] | None = None,
        force_exclude: bool | None = None,
    ) -> LintConfig:
        cfg = self
        if extend_ignore is not None:
            cfg = replace(cfg, extend_ignore=(*cfg.extend_ignore, *extend_ignore))
        if extend_exclude is not None:
            cfg = replace(cfg, extend_exclude=(*cfg.extend_exclude, *extend_exclude))
        if force_exclude is not None:
            cfg = replace(cfg, force_exclude=force_exclude)
        if select is not None:
            cfg = replace(cfg, select=tuple(select))
        if ignore is not None:
            cfg = replace(cfg, ignore=(*cfg.ignore, *ignore))
        if extend_select is not None:
            cfg = replace(cfg, extend_select=(*cfg.extend_select, *extend_select))
        return cfg

    @classmethod
    def from_pyproject(cls, path: str | Path) -> LintConfig:
        """Read ``[tool.openprogram.lint]`` of a pyproject file (defaults if absent)."""
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        from pathlib import Path

        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise LintConfigError(f"{p}: cannot read config: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise LintConfigError(f"{p}: invalid TOML: {exc}") from None
        table = data.get("tool", {}).get("openprogram", {})
        if isinstance(table, dict):
            from openprogram.contract.pyproject import check_keys
            from openprogram.errors import ConfigError

            try:  # a typo anywhere in [tool.openprogram] is refused, as `openprogram run` does
                check_keys(p, table)
            except ConfigError as exc:
                raise LintConfigError(str(exc)) from None
        section = table.get("lint", {}) if isinstance(table, dict) else {}
        return cls.from_mapping(section, source=str(p), root=str(p.parent))

    @classmethod
    def from_mapping(cls, section: Any, *, source: str = "config", root: str = ".") -> LintConfig:
        if not isinstance(section, dict):
            raise LintConfigError(f"{source}: [tool.openprogram.lint] must be a table")
        from openprogram.contract.pyproject import LINT_KEYS, unknown_key_message

        for key in section:
            if key not in LINT_KEYS and key.replace("_", "-") not in LINT_KEYS:
                raise LintConfigError(
                    unknown_key_message(source, "tool.openprogram.lint", key, LINT_KEYS)
                )

        def str_list(key: str, alt: str | None = None) -> tuple[str, ...] | None:
            value = section.get(key, section.get(alt) if alt else None)
            if value is None:
                return None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise LintConfigError(
                    f"{source}: [tool.openprogram.lint] {key} must be a list of strings"
                )
            return tuple(value)

        select = str_list("select")
        ignore = str_list("ignore") or ()
        extend = str_list("extend-select", "extend_select") or ()
        exclude = str_list("exclude") or ()
        extend_ignore = str_list("extend-ignore", "extend_ignore") or ()
        extend_exclude = str_list("extend-exclude", "extend_exclude") or ()
        force = section.get("force-exclude", section.get("force_exclude", False))
        if not isinstance(force, bool):
            raise LintConfigError(
                f"{source}: [tool.openprogram.lint] force-exclude must be true or false"
            )
        pfi_raw = section.get("per-file-ignores", section.get("per_file_ignores", {}))
        if not isinstance(pfi_raw, dict):
            raise LintConfigError(f"{source}: per-file-ignores must be a table")
        pfi: dict[str, tuple[str, ...]] = {}
        for pattern, codes in pfi_raw.items():
            if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                raise LintConfigError(
                    f"{source}: per-file-ignores[{pattern!r}] must be a list of codes"
                )
            pfi[pattern] = tuple(codes)
        cfg = cls(
            select=select if select is not None else ("OP",),
            ignore=ignore,
            extend_select=extend,
            per_file_ignores=pfi,
            exclude=exclude,
            root=root,
            extend_ignore=extend_ignore,
            extend_exclude=extend_exclude,
            force_exclude=force,
        )
        cfg.validate(source)
        return cfg

    def validate(self, source: str = "config") -> None:
        """Raise :class:`LintConfigError` for selectors that match no rule code."""
        from openprogram_analyzers.codes import ALL_CODES

        selectors = [*self.select, *self.ignore, *self.extend_select, *self.extend_ignore]
        for codes in self.per_file_ignores.values():
            selectors.extend(codes)
        for sel in selectors:
            if not sel:  # would select (or ignore) nothing: a mistake, not a clean run
                raise LintConfigError(
                    f"{source}: empty rule selector: name a rule code or prefix (OP1), or ALL"
                )
            if sel != "ALL" and not any(c.startswith(sel) for c in ALL_CODES):
                raise LintConfigError(f"{source}: unknown rule code or prefix {sel!r}")


def find_pyproject(start: str | Path, memo: dict[str, Path | None] | None = None) -> Path | None:
    """The ``pyproject.toml`` whose ``[tool.openprogram]`` applies to ``start`` (a file or
    a folder): ``openprogram.contract.pyproject.find_config``, the one discovery rule
    (a pyproject that cannot be parsed is a :class:`LintConfigError`)."""
    from openprogram.contract.pyproject import find_config
    from openprogram.errors import ConfigError

    try:
        return find_config(start, memo)
    except ConfigError as exc:
        raise LintConfigError(str(exc)) from None


def _matches(code: str, selectors: Iterable[str]) -> bool:
    return _match_len(code, selectors) >= 0


def _match_len(code: str, selectors: Iterable[str]) -> int:
    best = -1
    for s in selectors:
        if s == "ALL":
            best = max(best, 0)
        elif code.startswith(s):
            best = max(best, len(s))
    return best


class ConfigsByFile:
    """The ``LintConfig`` of each linted file: the configuration applying to it
    (:func:`find_pyproject`, per file, as ``openprogram run`` and the language server find
    it) with the command line's selection applied; ``fixed`` (``--config``) applies to
    every file instead. Also the discovery's excluder: a file is excluded by the
    ``exclude`` of its own configuration."""

    def __init__(self, cwd: str, overrides: Mapping[str, Any], fixed: str | None = None) -> None:
        self.cwd = cwd
        self.overrides = overrides
        self.fixed = fixed
        self._where: dict[str, Path | None] = {}  # folder -> its pyproject (find_pyproject memo)
        self._configs: dict[str, LintConfig] = {}  # pyproject ("" for none) -> config

    def _load(self, pyproject: str | Path | None) -> LintConfig:
        key = "" if pyproject is None else str(pyproject)
        found = self._configs.get(key)
        if found is None:
            base = LintConfig.from_pyproject(pyproject) if pyproject else LintConfig(root=self.cwd)
            found = base.with_overrides(**self.overrides)
            found.validate("command line")
            self._configs[key] = found
        return found

    def for_path(self, path: str) -> LintConfig:
        """The configuration of the file (or folder) ``path``."""
        if self.fixed is not None:
            return self._load(self.fixed)
        return self._load(find_pyproject(path, self._where))

    def is_excluded(self, path: str) -> bool:
        return self.for_path(path).is_excluded(path)
