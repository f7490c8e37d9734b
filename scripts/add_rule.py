"""Add a rule: its file with the fixed doc headings and example skeletons, and its README row.

    .venv/bin/python scripts/add_rule.py OP109 options-too-long "what it flags" [--severity warning]

Then fill in the INVALID example (the finding it must produce: ``range=``, ``message=``,
``fixed=``), the VALID one, the ``Why:`` and ``Fix safety:`` sections and ``check``;
``pytest tests/analyzers/test_rules_examples.py`` runs the examples (they fail until the
check reports the finding). The code list, ``--explain``, ``--list-rules`` and the README
table all read the rule class: nothing else to register.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "analyzers" / "openprogram_analyzers" / "rules"
README = ROOT / "README.md"

TEMPLATE = '''"""{code}: {summary}."""

from __future__ import annotations

from typing import ClassVar

from openprogram_analyzers.rule import Context, Invalid, Rule, Valid


class Rule{code}(Rule):
    """Why: TODO: what goes wrong at run time when a Program does this.

    Fix safety: No fix: the change needs the author's decision; ``# noqa: {code}`` suppresses it.
    """

    code = "{code}"
    name = "{name}"
    summary = "{summary}"
    severity = "{severity}"
    VALID: ClassVar[list[Valid]] = [
        Valid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {{"f": {{"expose": "io"}}}}

                def f(self) -> str:
                    return "ok"
            """
        ),
    ]
    INVALID: ClassVar[list[Invalid]] = [
        Invalid(
            """
            from openprogram import Agent


            class A(Agent):
                method_options = {{"f": {{"expose": "io"}}}}  # TODO: the flagged code

                def f(self) -> str:
                    return "ok"
            """,
            range=(5, 5, 5, 19),
            message="TODO: the finding's message",
        ),
    ]

    def check(self, ctx: Context) -> None:
        """Report findings from ``ctx.index`` (see ``index.py``) with ``ctx.report``."""
'''


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("code", help="OPnnn, not taken yet")
    ap.add_argument("name", help="kebab-case name, e.g. options-too-long")
    ap.add_argument("summary", help="what it flags, one line (the README row)")
    ap.add_argument("--severity", choices=("error", "warning", "info"), default="error")
    args = ap.parse_args(argv)
    code = args.code.upper()
    if not re.fullmatch(r"OP\d{3}", code):
        ap.error(f"code must look like OP109, not {args.code!r}")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", args.name):
        ap.error(f"name must be kebab-case, not {args.name!r}")
    if list(RULES.glob(f"{code.lower()}_*.py")):
        ap.error(f"{code} exists already")
    path = RULES / f"{code.lower()}_{args.name.replace('-', '_')}.py"
    path.write_text(
        TEMPLATE.format(code=code, name=args.name, summary=args.summary, severity=args.severity)
    )
    import rule_table  # scripts/ is on sys.path: the table comes from the rule classes

    README.write_text(rule_table.regenerate(README.read_text(), rule_table.rule_rows()))
    print(f"created {path.relative_to(ROOT)} and its README row; now fill in the TODOs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
