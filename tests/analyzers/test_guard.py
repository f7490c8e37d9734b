"""The guard that keeps too-deep files away from libcst (issue 13, item 1): Python's own
parser decides, so brackets in strings and comments never count and the location is
where Python stops."""

from __future__ import annotations

import subprocess
import sys

from openprogram_analyzers import analyze_source
from openprogram_analyzers.guard import too_deep, too_deep_finding

TOKENIZER_LIMIT = 200  # CPython refuses more nested brackets than this


def test_brackets_in_strings_and_comments_do_not_count() -> None:
    deep = "x = " + "(" * (TOKENIZER_LIMIT + 1) + "1" + ")" * (TOKENIZER_LIMIT + 1) + "\n"
    assert too_deep(deep)
    at_limit = "x = " + "[" * TOKENIZER_LIMIT + "]" * TOKENIZER_LIMIT + "\n"
    compile(at_limit, "<at-limit>", "exec")  # Python accepts the limit itself
    assert not too_deep(at_limit)
    hidden = f'"""\n{"(" * 500}\n"""\n# {"{" * 500}\ns = "{"[" * 500}"\n'
    assert not too_deep(hidden)
    later = 'a = """\n(\n"""\n' + "b = " + "{" * 300
    finding = too_deep_finding(later, "later.py")
    assert finding is not None and finding.line == 4
    assert too_deep("(" * 300 + "'unterminated")
    assert not too_deep("'" + "(" * 300)  # inside an unterminated string: a syntax error
    assert too_deep("x = " + " + ".join(["1"] * 1000) + "\n")  # libcst nests an operator chain


def test_finding_is_op001_where_python_stops() -> None:
    source = "def f():\n    return " + "(" * 2000 + "1" + ")" * 2000 + "\n"
    finding = too_deep_finding(source, "deep.py")
    assert finding is not None
    assert (finding.code, finding.line, finding.column) == ("OP001", 2, 12 + TOKENIZER_LIMIT)
    assert finding.message == "file does not parse: too many nested parentheses"  # as Python
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; compile(sys.stdin.read(), 'deep.py', 'exec')"],
        input=source,
        capture_output=True,
        text=True,
    )
    assert "too many nested parentheses" in proc.stderr
    # the analyzer reports it (libcst never sees the file: this process survives)
    program = "from openprogram import step\n\n\n" + source
    assert [(f.code, f.line) for f in analyze_source(program, "deep.py")] == [("OP001", 5)]
