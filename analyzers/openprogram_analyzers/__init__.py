"""Static analysis of OpenProgram Programs (libcst).

Public API (SPEC §3; used by ``openprogram-lint`` and the language server)::

    from openprogram_analyzers import analyze_source, Finding, Fix, TextEdit, Related
    from openprogram_analyzers import LintConfig, RULES, suppression_fix

Importing this package is cheap: everything (even ``dataclasses``) loads on first use, and nothing of
the engine's runtime (httpx, pydantic, the store) is ever imported.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not ``typing``: importing it costs a warm CLI run ~5 %

__all__ = [
    "RULES",
    "Finding",
    "Fix",
    "LintConfig",
    "LintConfigError",
    "Related",
    "Severity",
    "TextEdit",
    "analyze_source",
    "check_planner_code",
    "check_resumable",
    "suppression_fix",
]

_LAZY = {
    "LintConfig": "openprogram_analyzers.config",
    "LintConfigError": "openprogram_analyzers.config",
    "Finding": "openprogram_analyzers.findings",
    "Fix": "openprogram_analyzers.findings",
    "Related": "openprogram_analyzers.findings",
    "Severity": "openprogram_analyzers.findings",
    "TextEdit": "openprogram_analyzers.findings",
    "analyze_source": "openprogram_analyzers.analysis",
    "suppression_fix": "openprogram_analyzers.suppressions",
    "check_resumable": "openprogram_analyzers.determinism",
    "check_planner_code": "openprogram_analyzers.determinism",
    "RULES": "openprogram_analyzers.rules",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'openprogram_analyzers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from openprogram_analyzers.analysis import analyze_source
    from openprogram_analyzers.config import LintConfig, LintConfigError
    from openprogram_analyzers.determinism import check_planner_code, check_resumable
    from openprogram_analyzers.findings import Finding, Fix, Related, Severity, TextEdit
    from openprogram_analyzers.rules import RULES
    from openprogram_analyzers.suppressions import suppression_fix
