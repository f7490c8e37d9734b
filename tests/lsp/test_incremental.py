"""Incremental analysis: statement chunking and re-checking only touched statements."""

from __future__ import annotations

import ast

from openprogram_analyzers import analyze_source
from openprogram_lsp.incremental import IncrementalAnalyzer, split_chunks

TRICKY = '''\
"""Module docstring
def not_a_def():
"""
import os
from x import (
    a,
    b,
)

@decorator
@other(
    1,
)
class A:
    s = """
class NotAClass:
"""

    def m(self):
        return {
"k": 1,
        }


if os:
    pass
else:
    pass
try:
    pass
except Exception:
    pass
x = 1 + \\
    2
# comment at column 0
y = 'a#b'  # trailing
z = "unterminated
w = 3
'''


def _ast_starts(src: str) -> list[int]:
    tree = ast.parse(src)
    out = []
    for node in tree.body:
        decorators = getattr(node, "decorator_list", None)
        out.append((decorators[0].lineno if decorators else node.lineno) - 1)
    return out


def test_chunks_are_top_level_statements() -> None:
    valid = TRICKY.replace('z = "unterminated\n', "")
    chunks = split_chunks(valid)
    assert "".join(c.text for c in chunks) == valid
    assert [c.start_line for c in chunks] == _ast_starts(valid)
    # an unterminated string ends at its line: the next statement still starts a chunk
    chunks = split_chunks(TRICKY)
    assert chunks[-1].text == "w = 3\n" and chunks[-2].text.startswith('z = "unterminated')
    assert split_chunks("") == split_chunks("")  # empty text: one empty chunk
    assert [c.text for c in split_chunks("")] == [""]


def _program(n: int) -> str:
    parts = ["from openprogram import Agent, llm, step\n\n\n"]
    for i in range(n):
        parts.append(
            f"class W{i}(Agent):\n"
            f'    method_options = {{"run": {{"resumable": True, "expose": "io"}}}}\n\n'
            f"    def run(self, t):\n"
            f'        return step("s", str.upper, t)\n\n\n'
            f"def helper_{i}(t):\n    return llm(t)\n\n\n"
        )
    parts.append("PROGRAM_ENTRIES = [" + ", ".join(f"helper_{i}" for i in range(n)) + "]\n")
    return "".join(parts)


def _key(findings: object) -> list[tuple[str, int, int, int, int]]:
    return sorted((f.code, f.line, f.column, f.end_line, f.end_column) for f in findings)  # type: ignore[attr-defined]


def test_only_touched_statements_are_rechecked() -> None:
    src = _program(30)
    inc = IncrementalAnalyzer()
    full = analyze_source(src, "p.py")
    inc.set_base(src, tuple(full))
    assert _key(inc.fast(src, "p.py", None, None)) == _key(full)
    assert inc.last_reanalysed == 0

    at = src.index('"io"', src.index("class W7("))
    edited = src[:at] + '"iox"' + src[at + 4 :]
    assert edited != src
    fast = inc.fast(edited, "p.py", None, None)
    assert inc.last_reanalysed == 1
    assert _key(fast) == _key(analyze_source(edited, "p.py"))
    assert "OP104" in {f.code for f in fast}

    # inserting lines shifts the findings of later statements
    shifted = "\n\n" + edited.replace(
        "from openprogram import Agent, llm, step\n",
        "from openprogram import Agent, llm, step\nimport os\n",
    )
    fast = inc.fast(shifted, "p.py", None, None)
    assert _key(fast) == _key(analyze_source(shifted, "p.py"))
    fixes = [f.fix for f in fast if f.code == "OP104"]
    assert fixes and fixes[0] is not None
    line = shifted.splitlines()[fixes[0].edits[0].line - 1]
    assert '"iox"' in line


def test_chunks_of_successive_versions_match_a_fresh_split() -> None:
    """The per-document chunker re-lexes only around an edit; after any sequence of
    edits (quotes, brackets, decorators, continuations, newlines opening or closing a
    string far from the edit) its chunks are exactly those of a fresh split."""
    import random

    from openprogram_lsp.incremental import Chunker

    pieces = ['"""', "'", '"', "(", ")", "[", "]", "\n", "\n\n", "@d\n", "else:\n", "#", "\\\n"]
    pieces += ["x = 1\n", "def f():\n    pass\n", "    y = 2\n", "class A:\n", "\r\n", "\r", ""]
    rng = random.Random(7)
    for _ in range(30):
        chunker = Chunker()
        text = TRICKY + _program(3)
        assert chunker.split(text) == split_chunks(text)
        for _ in range(60):
            at = rng.randrange(len(text) + 1)
            end = min(len(text), at + rng.choice([0, 0, 1, 2, 5, 40]))
            text = text[:at] + rng.choice(pieces) + text[end:]
            assert chunker.split(text) == split_chunks(text), repr(text)
