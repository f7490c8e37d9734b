"""Run the analyzer on a document snapshot, never raising.

The analyzer (``openprogram_analyzers``) is pure: it gets source text, never imports or
executes user code. Any exception it raises is caught here and turned into an
``internal_error`` on the result, so one bad document cannot take the server down.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .incremental import IncrementalAnalyzer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnalysisResult:
    """Findings for one version of one document."""

    uri: str
    version: int | None
    text: str
    findings: tuple[Any, ...]  # openprogram_analyzers.Finding
    internal_error: str | None = None
    complete: bool = True  # False: incremental result, cross-statement rules not refreshed


def analyzer_available() -> bool:
    try:
        import openprogram_analyzers

        return hasattr(openprogram_analyzers, "analyze_source")
    except Exception:
        return False


def nesting_guard(text: str, path: str, config: Any) -> tuple[Any, ...] | None:
    """``(OP001,)`` (or ``()`` when OP001 is off) for text nested too deeply to parse
    safely; None when the text may be parsed."""
    from openprogram_analyzers.depth import nesting_finding

    finding = nesting_finding(text, path)
    if finding is None:
        return None
    if config is not None:
        from openprogram_analyzers.rules import RULES

        if "OP001" not in config.enabled_codes(RULES, path):
            return ()
    return (finding,)


def analyze(
    uri: str,
    version: int | None,
    text: str,
    path: str,
    config: Any = None,
    recorded_steps: Mapping[str, Any] | None = None,
    incremental: IncrementalAnalyzer | None = None,
) -> AnalysisResult:
    """Analyse ``text`` (whole file, or incrementally when ``incremental`` is given).

    Exceptions become ``internal_error`` (logged with traceback), never propagate.
    """
    try:
        too_deep = nesting_guard(text, path, config)
        if too_deep is not None:  # never handed to libcst (it would crash this process)
            return AnalysisResult(uri, version, text, too_deep)
        if incremental is not None:
            found = incremental.fast(text, path, config, recorded_steps)
            return AnalysisResult(uri, version, text, found, complete=False)
        from openprogram_analyzers import analyze_source

        findings = analyze_source(text, path, config=config, recorded_steps=recorded_steps)
        return AnalysisResult(uri, version, text, tuple(findings))
    except Exception as exc:
        log.error("analyzer failed on %s:\n%s", uri, traceback.format_exc())
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        return AnalysisResult(uri, version, text, (), internal_error=msg)
