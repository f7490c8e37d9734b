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
from typing import TYPE_CHECKING, Any

from .incremental import IncrementalAnalyzer

if TYPE_CHECKING:
    from openprogram_analyzers.program import ProgramModel

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
    model: ProgramModel | None = None  # whole-file analysis: the Program model it checked
    # whole-file analysis: helper files it read or looked for (absolute; None: unknown)
    depends_on: tuple[str, ...] | None = None


def analyzer_available() -> bool:
    try:
        import openprogram_analyzers

        return hasattr(openprogram_analyzers, "analyze_source")
    except Exception:
        return False


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
        # ``analyze_source`` hands libcst only what ``guard.check`` (Python's own parser)
        # accepts, whole file or one statement: deep nesting is OP001, never a crash
        if incremental is not None:
            found = incremental.fast(text, path, config, recorded_steps)
            return AnalysisResult(uri, version, text, found, complete=False)
        import os

        from openprogram_analyzers.analysis import analyze_with_model

        deps: dict[str, Any] = {}
        findings, model = analyze_with_model(
            text,
            path,
            config=config,
            recorded_steps=recorded_steps,
            helpers_at_call=True,
            depends_on=deps,
        )
        helpers = tuple(os.path.abspath(p) for p in deps)
        return AnalysisResult(uri, version, text, tuple(findings), model=model, depends_on=helpers)
    except Exception as exc:
        log.error("analyzer failed on %s:\n%s", uri, traceback.format_exc())
        msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        return AnalysisResult(uri, version, text, (), internal_error=msg)
