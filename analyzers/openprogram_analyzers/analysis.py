"""Analyze one file: pre-filter, parse, one traversal, rules, positions, suppressions."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from openprogram_analyzers.config import LintConfig
from openprogram_analyzers.findings import Finding, Fix, Related, TextEdit
from openprogram_analyzers.index import build_index
from openprogram_analyzers.prefilter import may_trigger
from openprogram_analyzers.rule import Context, Pending
from openprogram_analyzers.suppressions import SourceText, apply_suppressions, suppression_fix

if TYPE_CHECKING:
    from openprogram_analyzers.program import ProgramModel


def analyze_source(
    source: str,
    path: str = "<stdin>",
    *,
    config: LintConfig | None = None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None = None,
    prefilter: bool = True,
) -> list[Finding]:
    """All findings for ``source`` (sorted), suppressions applied, OP900 included."""
    return _analyze(source, path, config, recorded_steps, prefilter, None)


def analyze_with_model(
    source: str,
    path: str = "<stdin>",
    *,
    config: LintConfig | None = None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None = None,
) -> tuple[list[Finding], ProgramModel | None]:
    """``analyze_source`` and the Program model of the same parse (what the editor shows
    is what was checked); the model is None when ``source`` is not analysed."""
    models: list[ProgramModel | None] = []
    findings = _analyze(source, path, config, recorded_steps, True, models)
    if models:
        return findings, models[0]
    from openprogram_analyzers.program import ProgramModel, program_model_of

    # not parsed: no rule could fire (no Agent, step or entry either) or none is enabled
    return findings, program_model_of(source) if may_trigger(source) else ProgramModel()


def _analyze(
    source: str,
    path: str,
    config: LintConfig | None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None,
    prefilter: bool,
    models: list[ProgramModel | None] | None,
) -> list[Finding]:
    from openprogram_analyzers.rules import RULES

    cfg = config or LintConfig()
    enabled = cfg.enabled_codes(RULES, path)
    if not enabled or (prefilter and not may_trigger(source)):
        return []
    module = parse_checked(source, path)
    if not isinstance(module, cst.Module):
        if models is not None:
            models.append(None)
        return [module] if "OP001" in enabled else []
    rules = [RULES[c]() for c in sorted(enabled) if c not in ("OP001", "OP900")]
    try:
        findings = _run(module, source, path, rules, enabled, recorded_steps, models)
    except RecursionError:
        if models is not None:
            models[:] = [None]
        if "OP001" not in enabled:
            return []
        return [
            Finding(
                "OP001",
                "file is too deeply nested to analyse (recursion limit)",
                "error",
                path,
                1,
                1,
                1,
                1,
            )
        ]
    # One SourceText per file: lines split and comments tokenized once, not per finding;
    # suppression fixes only for the findings that survive the suppressions.
    text = SourceText(source)
    kept = apply_suppressions(source, path, findings, enabled, text)
    return [_with_fix(source, text, f) for f in kept]


def _with_fix(source: str, text: SourceText, finding: Finding) -> Finding:
    """The finding with its rule's fix, or the suppression fix when it has none or when
    its fix would create a duplicate dict key (that silently changes behaviour)."""
    from openprogram_analyzers.fixes import creates_duplicate_key

    if finding.fix is not None and not creates_duplicate_key(source, finding.fix):
        return finding
    return replace(finding, fix=suppression_fix(text, finding))


def _run(
    module: cst.Module,
    source: str,
    path: str,
    rules: Iterable[Any],
    enabled: frozenset[str],
    recorded_steps: Any,
    models: list[ProgramModel | None] | None = None,
) -> list[Finding]:
    from openprogram_analyzers.index import IndexBuilder, walk

    rule_list = list(rules)
    builder = IndexBuilder(module)
    ctx = Context(source, path, builder.index, enabled, recorded_steps)
    # Rules may hook node types; the index builder fans every node out to them during
    # the one traversal that also builds the index the other rules read afterwards.
    for rule in rule_list:
        for node_type, hook in rule.hooks(ctx).items():
            builder.hooks.setdefault(node_type, []).append(hook)
    walk(module, builder)
    if builder.index.imports and os.path.isfile(path):
        from openprogram_analyzers.first_party import mark_first_party

        mark_first_party(builder.index, os.path.dirname(os.path.abspath(path)))
    for rule in rule_list:
        rule.check(ctx)
    if models is not None:
        from openprogram_analyzers.program import program_model

        models.append(program_model(builder.index))
    return resolve(module, path, ctx.pending)


def resolve(module: cst.Module, path: str, pending: list[Pending]) -> list[Finding]:
    """Turn pending findings into positioned findings (positions only if anything is reported)."""
    if not pending:
        return []
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def rng(node: cst.CSTNode) -> tuple[int, int, int, int]:
        r: CodeRange | None = positions.get(node)
        if r is None:
            return (1, 1, 1, 1)
        return (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)

    out: list[Finding] = []
    for p in pending:
        line, col, eline, ecol = rng(p.node)
        fix = None
        if p.fix_description is not None:
            edits = tuple(TextEdit(*rng(n), new_text=text) for n, text in p.fix_edits)
            fix = Fix(p.fix_description, edits, safe=p.fix_safe)
        related = tuple(Related(msg, path, *rng(n)) for msg, n in p.related)
        out.append(
            Finding(p.code, p.message, p.severity, path, line, col, eline, ecol, fix, related)
        )
    out.sort(key=Finding.sort_key)
    return out


def parse_checked(source: str, path: str) -> cst.Module | Finding:
    """The libcst module of ``source``, or the OP001 finding saying why there is none.

    Python's own parser decides first (``guard.check``): libcst never sees a source that
    is invalid, nested too deeply or too large, so it cannot crash the process. Valid
    Python that libcst still rejects is an info finding ("cannot analyse"), not an error.
    """
    from openprogram_analyzers.guard import check

    refusal = check(source)
    if refusal is not None:
        return Finding(
            "OP001",
            refusal.message,
            "error",
            path,
            refusal.line,
            refusal.column,
            refusal.line,
            refusal.column + 1,
        )
    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        found = parse_error(exc, path)
        message = found.message.replace("file does not parse: ", "")
        return replace(
            found,
            severity="info",
            message=f"cannot analyse this valid Python (the analyzer's parser rejects it: "
            f"{message})",
        )
    except (RecursionError, MemoryError, ValueError) as exc:
        return Finding(
            "OP001",
            f"cannot analyse this file ({type(exc).__name__} in the parser)",
            "info",
            path,
            1,
            1,
            1,
            1,
        )


def parse_error(exc: cst.ParserSyntaxError, path: str) -> Finding:
    message = str(getattr(exc, "message", "") or str(exc).splitlines()[0])
    line = max(exc.editor_line, 1)
    column = max(exc.editor_column, 1)
    m = _AT.match(message)
    if m:
        line, column = int(m.group(1)), int(m.group(2)) + 1
        message = message[m.end() :]
    return Finding(
        "OP001",
        f"file does not parse: {message}",
        "error",
        path,
        line,
        column,
        line,
        column + 1,
    )


_AT = re.compile(r"(?:parser error: )?error at (\d+):(\d+): ")


# ------------------------------------------------------------------ engine entry points


ENGINE_CODES = frozenset({"OP001", *(f"OP20{i}" for i in range(1, 9)), "OP212", "OP213", "OP900"})
"""What the pre-run check reports: parse errors and the determinism rules of one entry."""


@dataclass(frozen=True)
class EntryCheck:
    """The pre-run check of one resumable entry: its findings (suppressions and config
    applied, exactly as ``openprogram-lint`` reports them) and the functions it reached
    (what ``keep_original`` saves)."""

    findings: list[Finding]
    reached: list[str]
    helper_files: tuple[str, ...] = ()  # first-party modules followed (the cache checks them)


def config_for(path: str) -> LintConfig:
    """``[tool.openprogram.lint]`` of the nearest pyproject.toml (as ``openprogram-lint``)."""
    import os

    from openprogram_analyzers.config import find_pyproject

    found = find_pyproject(os.path.dirname(os.path.abspath(path)))
    return LintConfig.from_pyproject(found) if found is not None else LintConfig()


def check_entry(
    source: str, path: str, qualname: str, *, config: LintConfig | None = None
) -> EntryCheck:
    """``openprogram-lint`` restricted to one resumable entry: same rules, messages,
    suppressions (``# noqa: OP205``) and config; OP900 is left to the linter."""
    from openprogram_analyzers import determinism

    cfg = config or config_for(path)
    enabled = cfg.enabled_codes(ENGINE_CODES - {"OP900"}, path)
    module = parse_checked(source, path)
    if not isinstance(module, cst.Module):
        return EntryCheck([module], [])
    index = build_index(module)
    fn = index.functions.get(qualname)
    if fn is None:
        missing = Finding(
            "OP201",
            f"resumable function {qualname!r} not found in {path}: its source cannot be checked",
            "error",
            path,
            1,
            1,
            1,
            1,
        )
        return EntryCheck([missing], [])
    from openprogram_analyzers.first_party import HelperLoader, mark_first_party, resolve_reexports

    base = os.path.dirname(os.path.abspath(path))
    loader = HelperLoader(base)
    mark_first_party(index, base)
    resolve_reexports(index, loader)
    ctx = Context(source, path, index, enabled)
    scope = determinism.build_scope(index, fn)
    for f in determinism.compute_for(index, [fn]):
        if f.code in enabled:
            ctx.report(f.code, f.node, f.message, related=f.chain)
    found = resolve(module, path, ctx.pending)
    kept = apply_suppressions(source, path, found, enabled)
    reached = {**{q: True for q in scope.orchestration}, **{q: False for q in scope.dependencies}}
    kept.extend(_followed_findings(module, path, index, reached, loader, enabled))
    return EntryCheck(kept, list(reached), loader.files)


def _followed_findings(
    module: cst.Module,
    path: str,
    index: Any,
    reached: dict[str, bool],
    loader: Any,
    enabled: frozenset[str],
) -> list[Finding]:
    """Findings in first-party helper modules the entry calls (followed across files),
    each with the call in the entry module as related information."""
    from openprogram_analyzers import determinism
    from openprogram_analyzers.first_party import followed_calls, resolve_reexports

    out: list[Finding] = []
    todo: list[tuple[cst.Module, str, Any, dict[str, bool], tuple[Related, ...]]] = [
        (module, path, index, reached, ())
    ]
    seen: set[tuple[str, str]] = set()
    while todo and len(seen) < 200:
        mod, mod_path, idx, functions, links = todo.pop(0)
        positions: Any = None
        for call in followed_calls(idx, functions, loader):
            key = (call.helper.path, call.function.qualname)
            if key in seen:
                continue
            seen.add(key)
            if positions is None:
                positions = MetadataWrapper(mod, unsafe_skip_copy=True).resolve(PositionProvider)
            r = positions.get(call.call)
            where = (
                (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1)
                if r
                else (1, 1, 1, 1)
            )
            name = f"{os.path.splitext(os.path.basename(call.helper.path))[0]}.{call.function.qualname}"
            link = Related(f"'{call.caller}' calls '{name}' here", mod_path, *where)
            helper = call.helper
            resolve_reexports(helper.index, loader)
            hctx = Context(helper.source, helper.path, helper.index, enabled)
            marker: list[tuple[str, cst.CSTNode]] = [("", call.call)]
            for det in determinism.compute_for(
                helper.index, [call.function], chain=marker, orchestration=call.orchestration
            ):
                if det.code in enabled:
                    hctx.report(det.code, det.node, det.message, related=det.chain[1:])
            chain = (*links, link)
            for f in apply_suppressions(
                helper.source,
                helper.path,
                resolve(helper.module, helper.path, hctx.pending),
                enabled,
            ):
                out.append(replace(f, related=(*chain, *f.related)))
            scope = determinism.build_scope(helper.index, call.function, marker, call.orchestration)
            nested = {
                **{q: True for q in scope.orchestration},
                **{q: False for q in scope.dependencies},
            }
            todo.append((helper.module, helper.path, helper.index, nested, chain))
    return out


def analyze_for_engine(source: str, path: str, *, resumable: str) -> list[Finding]:
    """Determinism findings (OP001, OP201–OP208) for one named resumable function."""
    return check_entry(source, path, resumable).findings
