"""One-off: rewrite every rule file's examples as dedented triple-quoted blocks with
keyword arguments, and its docstring with the fixed headings. Run from the repo root with
the repo's venv python (imports the rules as they are)."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

sys.path[:0] = ["analyzers", "engine"]
RULES_DIR = Path("analyzers/openprogram_analyzers/rules")


def block(text: str, indent: str) -> str:
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.split("\n")
    assert lines[-1] == "", repr(text[-20:])
    out = ['"""']
    for line in lines[:-1]:
        out.append(indent + line if line.strip() else "")
    out.append(indent + '"""')
    return "\n".join(out)


def fix_safety(rule: type) -> str:
    code = rule.code
    if code == "OP900":
        return "Safe: the fix removes the unused code from the comment (the whole comment\n    when it was the only one); ``--fix`` applies it."
    if "fix_for" in vars(rule):
        if rule.fix_safe:
            return "Safe: the fix keeps the program's meaning; ``--fix`` applies it."
        return (
            "Unsafe: the fix is a did-you-mean guess and may change what the program does\n"
            '    (``"tol"`` -> ``"tool"`` turns a method into a tool); ``--fix --unsafe-fixes``\n'
            "    applies it. It is never offered when it would create a duplicate key."
        )
    return f"No fix: the change needs the author's decision; ``# noqa: {code}`` suppresses it."


def main() -> None:
    for path in sorted(RULES_DIR.glob("op[0-9]*.py")):
        mod = importlib.import_module(f"openprogram_analyzers.rules.{path.stem}")
        rule = next(
            v
            for v in vars(mod).values()
            if isinstance(v, type) and getattr(v, "__module__", "") == mod.__name__ and hasattr(v, "code")
        )
        text = path.read_text()
        tree = ast.parse(text)
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == rule.__name__)
        lines = text.split("\n")
        spans: dict[str, tuple[int, int]] = {}
        doc_span = None
        for node in cls.body:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) and doc_span is None:
                doc_span = (node.lineno, node.end_lineno)
            target = None
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                target = node.target.id
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                target = node.targets[0].id
            if target in ("VALID", "INVALID"):
                spans[target] = (node.lineno, node.end_lineno)
        assert doc_span and set(spans) == {"VALID", "INVALID"}, path
        ind = "    "
        valid = [f"{ind*2}Valid(\n{ind*3}{block(src, ind*3)}\n{ind*2}),"
                 for src in rule.VALID]
        valid_src = f"{ind}VALID: ClassVar[list[Valid]] = [\n" + "\n".join(valid) + f"\n{ind}]"
        invalid = []
        for src, inv in rule.INVALID:
            parts = [f"{ind*3}{block(src, ind*3)},"]
            if inv.code != rule.code:
                parts.append(f"{ind*3}code={inv.code!r},")
            parts.append(f"{ind*3}range=({inv.line}, {inv.column}, {inv.end_line}, {inv.end_column}),")
            parts.append(f"{ind*3}message={inv.message!r},")
            if inv.fixed is not None:
                parts.append(f"{ind*3}fixed={block(inv.fixed, ind*3)},")
            invalid.append(f"{ind*2}Invalid(\n" + "\n".join(parts) + f"\n{ind*2}),")
        invalid_src = f"{ind}INVALID: ClassVar[list[Invalid]] = [\n" + "\n".join(invalid) + f"\n{ind}]"
        why = inspect.cleandoc(rule.__doc__ or "")
        why = "\n".join((ind + l if l.strip() else "") for l in why.split("\n")).strip()
        doc = (
            f'{ind}"""Why: {why}\n\n{ind}Fix safety: {fix_safety(rule)}\n{ind}"""'
        )
        repl = sorted(
            [(doc_span, doc), (spans["VALID"], valid_src), (spans["INVALID"], invalid_src)],
            key=lambda t: -t[0][0],
        )
        for (start, end), new in repl:
            lines[start - 1 : end] = new.split("\n")
        new_text = "\n".join(lines)
        new_text = new_text.replace(
            "INVALID: ClassVar[list[tuple[str, Invalid]]]", "INVALID: ClassVar[list[Invalid]]"
        )
        # import Valid next to Invalid
        new_text = new_text.replace("import Context, Invalid, Rule", "import Context, Invalid, Rule, Valid")
        new_text = new_text.replace("import FamilyRule, Invalid\n", "import FamilyRule, Invalid, Valid\n")
        new_text = new_text.replace("import Context, FamilyRule, Invalid\n", "import Context, FamilyRule, Invalid, Valid\n")
        new_text = new_text.replace("import Invalid, Rule\n", "import Invalid, Rule, Valid\n")
        if "Valid\n" not in new_text and "Valid," not in new_text.split("class ")[0]:
            print("CHECK IMPORT", path)
        m = re.search(r'\n    family = "([a-z_]+)"\n', new_text)
        if m:
            fam = m.group(1)
            new_text = new_text.replace(m.group(0), f"\n    family = {fam}.findings_for\n")
            new_text = new_text.replace(
                "from openprogram_analyzers.rule import",
                f"from openprogram_analyzers import {fam}\nfrom openprogram_analyzers.rule import",
                1,
            )
        path.write_text(new_text)
        print("rewrote", path)


if __name__ == "__main__":
    main()
