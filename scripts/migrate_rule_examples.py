"""Rewrite rule files still in the old format to the one-readable-file format.

Old format: ``VALID: ClassVar[list[str]]`` of escaped strings, ``INVALID`` as
``(source, Invalid(code, line, col, end_line, end_col, message, fixed=...))`` tuples, a
plain docstring and ``family = "name"``. New format: dedented triple-quoted ``Valid(...)``
/ ``Invalid(..., range=, message=, fixed=)`` blocks, a docstring with the fixed headings
``Why:`` / ``Fix safety:`` and ``family = name.findings_for``.

Files already in the new format are left alone, so it is safe to re-run after merging a
branch that added rules the old way::

    python scripts/migrate_rule_examples.py            # every rule file under the repo
    python scripts/migrate_rule_examples.py FILE...    # just these

Old files are read with ``ast`` (literals only, never imported or evaluated: the current ``rule.Invalid`` no longer
accepts the old positional form), then ``scripts/rule_table.py`` is the README's table.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RULES_DIR = ROOT / "analyzers" / "openprogram_analyzers" / "rules"
IND = "    "


@dataclass
class OldInvalid:
    """The old positional ``Invalid``, only to evaluate old example lists."""

    code: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fixed: str | None = None


def is_old_format(text: str) -> bool:
    return "ClassVar[list[str]]" in text or "list[tuple[str, Invalid]]" in text


def block(text: str, indent: str) -> str:
    """``text`` as a triple-quoted block that ``rule.example`` turns back into ``text``."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.split("\n")
    if lines[-1] != "":
        raise ValueError(f"example does not end with a newline: {text[-20:]!r}")
    out = ['"""']
    out.extend(indent + line if line.strip() else "" for line in lines[:-1])
    out.append(indent + '"""')
    return "\n".join(out)


def fix_safety(code: str, has_fix: bool, fix_safe: bool) -> str:
    if code == "OP900":
        return (
            "Safe: the fix removes the unused code from the comment (the whole comment\n"
            f"{IND}when it was the only one); ``--fix`` applies it."
        )
    if has_fix and fix_safe:
        return "Safe: the fix keeps the program's meaning; ``--fix`` applies it."
    if has_fix:
        return (
            "Unsafe: the fix is a did-you-mean guess and may change what the program does\n"
            f'{IND}(``"tol"`` -> ``"tool"`` turns a method into a tool); ``--fix --unsafe-fixes``\n'
            f"{IND}applies it. It is never offered when it would create a duplicate key."
        )
    return f"No fix: the change needs the author's decision; ``# noqa: {code}`` suppresses it."


def _rule_class(tree: ast.Module) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("RuleOP"):
            return node
    raise ValueError("no RuleOPnnn class")


def _assigned(node: ast.stmt) -> str | None:
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def migrate(text: str) -> str:
    """The new-format text of an old-format rule file."""
    tree = ast.parse(text)
    cls = _rule_class(tree)
    lines = text.split("\n")
    doc = cls.body[0]
    if not (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)):
        raise ValueError(f"{cls.name} has no docstring")
    spans: dict[str, ast.stmt] = {}
    attrs: dict[str, object] = {}
    for node in cls.body:
        name = _assigned(node)
        if name in ("VALID", "INVALID"):
            spans[name] = node
        elif name in ("code", "fix_safe") and node.value is not None:  # type: ignore[attr-defined]
            attrs[name] = ast.literal_eval(node.value)  # type: ignore[attr-defined]
    if set(spans) != {"VALID", "INVALID"} or "code" not in attrs:
        raise ValueError(f"{cls.name}: code, VALID and INVALID must be class attributes")
    code = str(attrs["code"])
    has_fix = any(isinstance(n, ast.FunctionDef) and n.name == "fix_for" for n in cls.body)

    def invalid_of(call: ast.expr) -> OldInvalid:
        if not isinstance(call, ast.Call):
            raise ValueError(f"{cls.name}: INVALID entries must be Invalid(...) calls")
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        return OldInvalid(*args, **kwargs)

    valid_node, invalid_node = spans["VALID"], spans["INVALID"]
    valid_srcs = ast.literal_eval(valid_node.value)  # type: ignore[attr-defined]
    invalid_pairs = [
        (ast.literal_eval(pair.elts[0]), invalid_of(pair.elts[1]))
        for pair in invalid_node.value.elts  # type: ignore[attr-defined]
    ]
    valid = [f"{IND * 2}Valid(\n{IND * 3}{block(src, IND * 3)}\n{IND * 2})," for src in valid_srcs]
    invalid = []
    for src, inv in invalid_pairs:
        parts = [f"{IND * 3}{block(src, IND * 3)},"]
        if inv.code != code:
            parts.append(f"{IND * 3}code={inv.code!r},")
        parts.append(
            f"{IND * 3}range=({inv.line}, {inv.column}, {inv.end_line}, {inv.end_column}),"
        )
        parts.append(f"{IND * 3}message={inv.message!r},")
        if inv.fixed is not None:
            parts.append(f"{IND * 3}fixed={block(inv.fixed, IND * 3)},")
        invalid.append(f"{IND * 2}Invalid(\n" + "\n".join(parts) + f"\n{IND * 2}),")
    why = inspect.cleandoc(doc.value.value)
    if why.startswith("Why: "):
        why = why[len("Why: ") :]
    why = "\n".join(IND + line if line.strip() else "" for line in why.split("\n")).strip()
    replacements = [
        (
            doc,
            f'{IND}"""Why: {why}\n\n{IND}Fix safety: {fix_safety(code, has_fix, attrs.get("fix_safe", True) is not False)}\n{IND}"""',
        ),
        (
            spans["VALID"],
            f"{IND}VALID: ClassVar[list[Valid]] = [\n" + "\n".join(valid) + f"\n{IND}]",
        ),
        (
            spans["INVALID"],
            f"{IND}INVALID: ClassVar[list[Invalid]] = [\n" + "\n".join(invalid) + f"\n{IND}]",
        ),
    ]
    for node, new in sorted(replacements, key=lambda r: -r[0].lineno):
        lines[node.lineno - 1 : node.end_lineno] = new.split("\n")
    out = "\n".join(lines)
    out = re.sub(
        r"from openprogram_analyzers\.rule import ([^\n]*)",
        lambda m: (
            "from openprogram_analyzers.rule import "
            + ", ".join(sorted({*m.group(1).split(", "), "Invalid", "Valid"}))
        ),
        out,
        count=1,
    )
    fam = re.search(r'\n    family = "([a-z_]+)"\n', out)
    if fam:
        out = out.replace(fam.group(0), f"\n    family = {fam.group(1)}.findings_for\n")
        out = out.replace(
            "from openprogram_analyzers.rule import",
            f"from openprogram_analyzers import {fam.group(1)}\nfrom openprogram_analyzers.rule import",
            1,
        )
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(RULES_DIR.glob("op[0-9]*.py"))
    changed = 0
    for path in paths:
        text = path.read_text()
        if not is_old_format(text):
            continue
        path.write_text(migrate(text))
        changed += 1
        print(f"rewrote {path}")
    print(f"{changed} rule file(s) rewritten; run `ruff format` on them")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
