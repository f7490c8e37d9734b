"""OP001: file does not parse (reported, never a crash)."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule, Valid


class RuleOP001(Rule):
    """Why: The file is not valid Python for the parser. The analyzer reports the location of the
    syntax error (Python's own message, nesting beyond Python's limit too) and checks nothing
    else in the file.

    Fix safety: No fix: correct the syntax error (a parse error cannot be suppressed).
    """

    code = "OP001"
    name = "file-does-not-parse"
    summary = "file does not parse (reported, never a crash)"
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent

            x = 1
            """
        ),
        # as deeply nested as Python compiles (200 brackets) is analysed
        Valid("from openprogram import Agent\n\nx = " + "[" * 200 + "]" * 200 + "\n"),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent

            def f(:
                pass
            """,
            range=(3, 7, 3, 8),
            message="file does not parse: invalid syntax",
        ),
        # nested deeper than Python allows: Python's own error, as ``openprogram run`` says
        Invalid(
            "from openprogram import Agent\n\nx = " + "[" * 201 + "]" * 201 + "\n",
            range=(3, 205, 3, 206),
            message="file does not parse: too many nested parentheses",
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Reported by the parser step of the analysis (never by a traversal)."""
