"""Regenerate README.md's rule table from the rule classes (``Rule.readme_row``).

    python scripts/rule_table.py           # rewrite the rows in README.md
    python scripts/rule_table.py --check   # exit 1 when README.md is out of date

The table's rows (the lines starting ``| <a id="op``) are replaced as one block by one row
per rule, in code order; the header and the prose around it are kept. Reads the rules of
this checkout (``analyzers/`` first on ``sys.path``), so it works on a copy of the repo.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ROW_START = '| <a id="op'


def rule_rows() -> list[str]:
    """One README row per rule class, in code order."""
    sys.path[:0] = [str(ROOT / "analyzers"), str(ROOT / "engine")]
    from openprogram_analyzers.rules import RULES

    return [RULES[code].readme_row() for code in sorted(RULES)]


def regenerate(readme: str, rows: list[str]) -> str:
    """``readme`` with its rule rows replaced by ``rows`` (where the first row was)."""
    lines = readme.split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(ROW_START)]
    if not at:
        raise SystemExit(f"{README.name}: no rule table (rows starting {ROW_START!r})")
    kept = [line for i, line in enumerate(lines) if i not in set(at)]
    return "\n".join(kept[: at[0]] + rows + kept[at[0] :])


def main(argv: list[str]) -> int:
    text = README.read_text()
    new = regenerate(text, rule_rows())
    if "--check" in argv:
        if new != text:
            print("README.md's rule table is out of date: run python scripts/rule_table.py")
            return 1
        return 0
    if new != text:
        README.write_text(new)
        print("README.md: rule table regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
