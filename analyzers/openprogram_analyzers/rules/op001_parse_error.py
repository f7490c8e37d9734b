"""OP001: file does not parse (reported, never a crash)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule


class RuleOP001(Rule):
    """The file is not valid Python for the parser. The analyzer reports the location of the
    syntax error and checks nothing else in the file.
    """

    code = "OP001"
    name = "file-does-not-parse"
    summary = "file does not parse (reported, never a crash)"
    VALID: ClassVar[list[str]] = [
        "from openprogram import Agent\n\nx = 1\n",
    ]
    INVALID: ClassVar[list[tuple[str, Invalid]]] = [
        (
            "from openprogram import Agent\n\ndef f(:\n    pass\n",
            Invalid("OP001", 3, 7, 3, 8, "file does not parse: invalid syntax", fixed=None),
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by the parser step of the analysis (never by a traversal)."""
