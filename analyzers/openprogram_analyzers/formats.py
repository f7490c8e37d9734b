"""Output formats of ``openprogram-lint``: text, json, json-lines, sarif (2.1.0), github,
gitlab (Code Quality), junit (XML)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from openprogram_analyzers.findings import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
DOCS_URI = "https://github.com/openprogram/openprogram"
"""Home of the README whose rule table has one anchor per code (``#op102``)."""
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def text_lines(finding: Finding, *, show_fixes: bool = False) -> list[str]:
    """The lines ``openprogram-lint`` prints for one finding (the runtime's
    pre-run determinism check prints exactly these too)."""
    from openprogram_analyzers.fixes import applicable

    f = finding
    fixable = " [*]" if applicable(f.fix) else ""
    lines = [f"{f.path}:{f.line}:{f.column}: {f.code}{fixable} {f.message}"]
    for r in f.related:
        lines.append(f"    {r.path}:{r.line}:{r.column}: note: {r.message}")
    if show_fixes and applicable(f.fix, unsafe=True):
        assert f.fix is not None
        unsafe = "" if f.fix.safe else " (unsafe: --unsafe-fixes)"
        lines.append(f"    fix: {f.fix.description}{unsafe}")
    return lines


def text(findings: Sequence[Finding], *, show_fixes: bool = False, quiet: bool = False) -> str:
    from openprogram_analyzers.fixes import applicable

    lines = [line for f in findings for line in text_lines(f, show_fixes=show_fixes)]
    if findings and not quiet:
        n = len(findings)
        safe_n = sum(1 for f in findings if applicable(f.fix))
        unsafe_n = sum(1 for f in findings if applicable(f.fix, unsafe=True)) - safe_n
        notes = []
        if safe_n:
            notes.append(f"{safe_n} fixable with --fix")
        if unsafe_n:
            notes.append(f"{unsafe_n} more with --fix --unsafe-fixes")
        lines.append(
            f"Found {n} finding{'s' if n != 1 else ''}"
            + (f" ({'; '.join(notes)})." if notes else ".")
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


def _counts(findings: Sequence[Finding]) -> list[tuple[str, int, int]]:
    """``(code, findings, safely fixable)`` per code, most frequent first."""
    from openprogram_analyzers.fixes import applicable

    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if applicable(f.fix))
    return [
        (code, n, fixable[code])
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]


def statistics(findings: Sequence[Finding]) -> str:
    from openprogram_analyzers.rules import RULES

    lines = []
    for code, n, fixable in _counts(findings):
        mark = "[*]" if fixable else "   "
        lines.append(f"{n:>5}  {code}  {mark} {RULES[code].name if code in RULES else ''}")
    return "\n".join(lines) + ("\n" if lines else "")


def statistics_json(findings: Sequence[Finding]) -> str:
    from openprogram_analyzers.rules import RULES

    rows = [
        {
            "code": code,
            "name": RULES[code].name if code in RULES else "",
            "count": n,
            "fixable": fixable,
        }
        for code, n, fixable in _counts(findings)
    ]
    return json.dumps(rows, indent=2) + "\n"


def json_lines(findings: Sequence[Finding]) -> str:
    return "".join(json.dumps(f.to_json()) + "\n" for f in findings)


def gitlab(findings: Sequence[Finding]) -> str:
    """GitLab Code Quality report (a JSON array; stable fingerprints per finding)."""
    import hashlib

    severity = {"error": "major", "warning": "minor", "info": "info"}
    seen: Counter[str] = Counter()
    out = []
    for f in findings:
        base = f"{f.path}\0{f.code}\0{f.message}"
        seen[base] += 1  # identical findings in one file stay distinct
        out.append(
            {
                "description": f"{f.code} {f.message}",
                "check_name": f.code,
                "fingerprint": hashlib.sha256(f"{base}\0{seen[base]}".encode()).hexdigest(),
                "severity": severity[f.severity],
                "location": {"path": f.path, "lines": {"begin": f.line, "end": f.end_line}},
            }
        )
    return json.dumps(out, indent=2) + "\n"


def junit(findings: Sequence[Finding]) -> str:
    """JUnit XML: one test suite per file, one failed test case per finding."""
    from xml.etree import ElementTree as ET

    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        by_path.setdefault(f.path, []).append(f)
    root = ET.Element(
        "testsuites", name="openprogram-lint", tests=str(len(findings)), failures=str(len(findings))
    )
    for path, items in by_path.items():
        suite = ET.SubElement(
            root, "testsuite", name=path, tests=str(len(items)), failures=str(len(items))
        )
        for f in items:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"org.openprogram.{f.code}",
                classname=path,
                line=str(f.line),
                column=str(f.column),
            )
            failure = ET.SubElement(case, "failure", message=f"{f.code} {f.message}")
            failure.text = f"line {f.line}, col {f.column}, {f.message}"
    if not findings:
        ET.SubElement(root, "testsuite", name="openprogram-lint", tests="0", failures="0")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


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
                "helpUri": f"{DOCS_URI}#{c.lower()}",
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
                        "informationUri": DOCS_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


RENDERERS = {
    "json": as_json,
    "json-lines": json_lines,
    "github": github,
    "gitlab": gitlab,
    "junit": junit,
}
"""Formats rendered from the findings alone (text and sarif take options)."""
