"""The nesting guard that keeps too-deep files away from libcst (issue 13, item 1)."""

from __future__ import annotations

import subprocess
import sys

from openprogram_analyzers.depth import MAX_BRACKETS, nesting_finding, too_deep_at


def test_counts_brackets_outside_strings_and_comments() -> None:
    deep = "x = " + "(" * (MAX_BRACKETS + 1) + "1" + ")" * (MAX_BRACKETS + 1) + "\n"
    assert too_deep_at(deep) == (1, 5 + MAX_BRACKETS)
    at_limit = "x = " + "[" * MAX_BRACKETS + "]" * MAX_BRACKETS + "\n"
    assert too_deep_at(at_limit) is None
    compile(at_limit, "<at-limit>", "exec")  # Python accepts the limit itself
    hidden = f'"""\n{"(" * 500}\n"""\n# {"{" * 500}\ns = "{"[" * 500}"\n'
    assert too_deep_at(hidden) is None
    later = 'a = """\n(\n"""\n' + "b = " + "{" * 300
    assert too_deep_at(later) == (4, 5 + MAX_BRACKETS)
    assert too_deep_at("(" * 300 + "'unterminated") is not None
    assert too_deep_at("'" + "(" * 300) is None  # inside an unterminated string


def test_finding_is_op001_and_python_agrees_the_file_is_invalid() -> None:
    source = "def f():\n    return " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    finding = nesting_finding(source, "deep.py")
    assert finding is not None
    assert (finding.code, finding.line, finding.column) == ("OP001", 2, 12 + MAX_BRACKETS)
    assert "too deeply nested to analyse" in finding.message
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; compile(sys.stdin.read(), 'deep.py', 'exec')"],
        input=source,
        capture_output=True,
        text=True,
    )
    assert "too many nested parentheses" in proc.stderr
