"""Output formats of ``openprogram-lint``: text, json, sarif (2.1.0), github."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from openprogram_analyzers.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def text_lines(finding: Finding) -> list[str]:
    """The lines ``openprogram-lint`` prints for one finding (the runtime's
    pre-run determinism check prints exactly these too)."""
    f = finding
    fixable = " [*]" if f.fix is not None and f.fix.safe else ""
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code}{fixable} {f.message}"]
    for r in f.related:
        lines.append(f"    {r.path}:{r.line}:{r.column}: note: {r.message}")
    return lines


def text(findings: Sequence[Finding]) -> str:
    lines = [line for f in findings for line in text_lines(f)]
    if findings:
        n = len(findings)
        fixable_n = sum(1 for f in findings if f.fix is not None and f.fix.safe)
        lines.append(
            f"Found {n} finding{'s' if n != 1 else ''}"
            + (f" ({fixable_n} fixable with --fix)." if fixable_n else ".")
        )
    return "\n".join(lines) + ("\n" if lines else "")


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(findings: Sequence[Finding]) -> str:
    out = []
    for f in findings:
        kind = {"error": "error", "warning": "warning", "info": "notice"}[f.severity]
        out.append(
            f"::{kind} file={_escape_prop(f.path)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},"
            f"title={_escape_prop(f.code)}::{_escape_data(f.code + ' ' + f.message)}"
        )
    return "\n".join(out) + ("\n" if out else "")


def statistics(findings: Sequence[Finding]) -> str:
    from openprogram_analyzers.rules import RULES

    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None and f.fix.safe)
    lines = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mark = "[*]" if fixable[code] else "   "
        lines.append(f"{n:>5}  {code}  {mark} {RULES[code].name if code in RULES else ''}")
    return "\n".join(lines) + ("\n" if lines else "")


def _uri(path: str) -> str:
    return quote(PurePath(path).as_posix(), safe="/:")


def _region(line: int, col: int, end_line: int, end_col: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": col, "endLine": end_line, "endColumn": end_col}


def sarif(findings: Sequence[Finding], version: str) -> str:
    from openprogram_analyzers.rules import RULES

    codes = sorted(RULES)
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for c in codes:
        rule = RULES[c]
        rules.append(
            {
                "id": c,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": (rule.__doc__ or rule.summary).strip()},
                "help": {"text": rule.explain()},
                "defaultConfiguration": {"level": _LEVEL[rule.severity]},
            }
        )
    results: list[dict[str, Any]] = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index.get(f.code, 0),
            "level": _LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": _region(f.line, f.column, f.end_line, f.end_column),
                    }
                }
            ],
        }
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "message": {"text": r.message},
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(r.path)},
                        "region": _region(r.line, r.column, r.end_line, r.end_column),
                    },
                }
                for i, r in enumerate(f.related)
            ]
        if f.fix is not None and f.fix.edits:
            result["fixes"] = [
                {
                    "description": {"text": f.fix.description},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(f.path)},
                            "replacements": [
                                {
                                    "deletedRegion": _region(
                                        e.line, e.column, e.end_line, e.end_column
                                    ),
                                    "insertedContent": {"text": e.new_text},
                                }
                                for e in f.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "openprogram-lint",
                        "version": version,
                        "informationUri": "https://github.com/openprogram/openprogram",
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"
