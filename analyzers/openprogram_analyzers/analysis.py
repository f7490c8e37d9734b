"""Analyze one file: pre-filter, parse, one traversal, rules, positions, suppressions."""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
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
    from openprogram_analyzers.first_party import Dependency, HelperLoader
    from openprogram_analyzers.index import ModuleIndex
    from openprogram_analyzers.program import ProgramModel


def analyze_source(
    source: str,
    path: str = "<stdin>",
    *,
    config: LintConfig | None = None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None = None,
    prefilter: bool = True,
    helpers_at_call: bool = False,
) -> list[Finding]:
    """All findings for ``source`` (sorted), suppressions applied, OP900 included.

    When ``path`` is a file, the first-party helper modules next to it that its resumable
    functions call are followed (as the pre-run check does): their findings carry the
    helper's path and the call chain from ``path`` as related locations, or, with
    ``helpers_at_call`` (an editor showing ``path``), are placed at the call in ``path``
    (:func:`at_call_site`)."""
    return _analyze(source, path, config, recorded_steps, prefilter, None, None, helpers_at_call)


def analyze_file(
    source: str,
    path: str,
    *,
    config: LintConfig | None = None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None = None,
) -> tuple[list[Finding], dict[str, Dependency]]:
    """``analyze_source`` and the helper files its result depends on (every file probed,
    with its stat and digest, None when missing): what a cache checks before reusing it."""
    deps: dict[str, Dependency] = {}
    return _analyze(source, path, config, recorded_steps, True, None, deps, False), deps


FOUND_HERE = "the finding is here, in a helper module this call reaches"
"""Related message of a helper module's finding shown at the call that reaches it."""


def at_call_site(finding: Finding, path: str) -> Finding:
    """A finding in a helper module, placed at the call in ``path`` that reaches it (the
    first related location in ``path``): same code and message, its own location becomes
    the first related one. Unchanged when it is in ``path`` or no call is."""
    if finding.path == path:
        return finding
    for i, r in enumerate(finding.related):
        if r.path == path:
            here = Related(
                FOUND_HERE,
                finding.path,
                finding.line,
                finding.column,
                finding.end_line,
                finding.end_column,
            )
            rest = finding.related[:i] + finding.related[i + 1 :]
            return replace(
                finding,
                path=path,
                line=r.line,
                column=r.column,
                end_line=r.end_line,
                end_column=r.end_column,
                fix=None,
                related=(here, *rest),
            )
    return finding


def analyze_with_model(
    source: str,
    path: str = "<stdin>",
    *,
    config: LintConfig | None = None,
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None = None,
    helpers_at_call: bool = False,
    depends_on: dict[str, Dependency] | None = None,
) -> tuple[list[Finding], ProgramModel | None]:
    """``analyze_source`` and the Program model of the same parse (what the editor shows
    is what was checked); the model is None when ``source`` is not analysed.
    ``depends_on`` receives the helper files the findings depend on (``analyze_file``)."""
    models: list[ProgramModel | None] = []
    findings = _analyze(
        source, path, config, recorded_steps, True, models, depends_on, helpers_at_call
    )
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
    deps: dict[str, Dependency] | None,
    helpers_at_call: bool,
) -> list[Finding]:
    from openprogram_analyzers.rules import RULES

    cfg = config or LintConfig()
    enabled = cfg.enabled_codes(RULES, path)
    if not enabled or (prefilter and not may_trigger(source)):
        return []
    from openprogram_analyzers.guard import recursion_headroom

    with cyclic_gc_paused(), recursion_headroom():
        return _analyze_parsed(source, path, enabled, recorded_steps, models, deps, helpers_at_call)


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one file is analysed, on again after.

    A parse allocates a libcst node for every token and its whitespace (about 10,000 per
    1,000 lines), all alive until the analysis ends: the collector's passes over them find
    nothing to free and were a fifth of the analyzer's time on real code. Reference
    counting still frees everything; a cycle made meanwhile is collected after. Nested or
    concurrent analyses (threads of the language server) leave it as they found it: only
    the one that switched it off switches it on."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _analyze_parsed(
    source: str,
    path: str,
    enabled: frozenset[str],
    recorded_steps: Mapping[str, Sequence[Sequence[tuple[str, int]]]] | None,
    models: list[ProgramModel | None] | None,
    deps: dict[str, Dependency] | None,
    helpers_at_call: bool,
) -> list[Finding]:
    from openprogram_analyzers.rules import RULES

    module = parse_checked(source, path)
    if not isinstance(module, cst.Module):
        if models is not None:
            models.append(None)
        return [module] if "OP001" in enabled else []
    rules = [RULES[c]() for c in sorted(enabled) if c not in ("OP001", "OP900")]
    try:
        findings, followed, index = _run(
            module, source, path, rules, enabled, recorded_steps, models, deps
        )
    except RecursionError:
        if models is not None:
            models[:] = [None]
        return [_out_of_recursion(path)] if "OP001" in enabled else []
    # One SourceText per file: lines split and comments tokenized once, not per finding;
    # suppression fixes only for the findings that survive the suppressions.
    text = SourceText(source)
    judged = _judged_here(module, index) if "OP900" in enabled else None
    kept = apply_suppressions(source, path, findings, enabled, text, judged=judged)
    # findings in helper modules: suppressed by their own file's comments, no fix here
    if helpers_at_call:
        followed = [at_call_site(f, path) for f in followed]
    out = [*(_with_fix(source, text, f) for f in kept), *followed]
    if followed:
        out.sort(key=Finding.sort_key)
    return out


def _judged_here(module: cst.Module, index: ModuleIndex) -> Callable[[str, int], bool]:
    """Whether this file's lint can tell that a suppression of ``code`` on ``line`` is
    unused (OP900). A helper module's OP201–OP208 findings (``FOLLOWED_CODES``) come from
    the Programs that import it, which this file's lint does not see: a suppression of one
    in a function this module's own resumable functions do not reach in their
    orchestration body may be used by one of them (``# noqa: OP205`` in ``helpers.py``,
    honoured when ``prog.py`` is linted), so it is not judged. Every other line is (no
    such finding is ever placed outside a function). The function lines are found (a
    positions pass) only for such a suppression that nothing here used."""
    lines: tuple[set[int], set[int]] | None = None  # (in any function, judged among them)

    def judged(code: str, line: int) -> bool:
        nonlocal lines
        if code not in FOLLOWED_CODES:
            return True
        if lines is None:
            lines = _function_lines(module, index)
        in_function, reached = lines
        return line not in in_function or line in reached

    return judged


def _function_lines(module: cst.Module, index: ModuleIndex) -> tuple[set[int], set[int]]:
    """The lines of every function of ``index``, and those of the functions its resumable
    functions reach in their orchestration body (:func:`reached_functions`)."""
    from openprogram_analyzers.determinism import resumable_functions

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)

    def lines_of(node: cst.CSTNode) -> range:
        r: CodeRange | None = positions.get(node)
        return range(0) if r is None else range(r.start.line, r.end.line + 1)

    in_function: set[int] = set()
    for fn in index.functions.values():
        in_function.update(lines_of(fn.node))
    reached: set[int] = set()
    for qualname, orchestration in reached_functions(index, resumable_functions(index)).items():
        if orchestration:
            reached.update(lines_of(index.functions[qualname].node))
    return in_function, reached


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
    deps: dict[str, Dependency] | None = None,
) -> tuple[list[Finding], list[Finding], ModuleIndex]:
    """This file's findings (before suppressions), those in the first-party helper
    modules its resumable functions call (suppressions of their own files applied), and
    the module's index."""
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
    loader = None
    if builder.index.imports and os.path.isfile(path):
        # helper modules next to the Program, spelt like ``path`` (``prog.py`` ->
        # ``helpers.py``), resolved before the rules read the index
        loader = follow_imports(builder.index, path)
    for rule in rule_list:
        rule.check(ctx)
    if models is not None:
        from openprogram_analyzers.program import program_model

        models.append(program_model(builder.index))
    followed: list[Finding] = []
    if loader is not None:
        if not enabled.isdisjoint(FOLLOWED_CODES):
            from openprogram_analyzers.determinism import resumable_functions

            bodies: dict[str, str] = {}
            reached = reached_functions(builder.index, resumable_functions(builder.index), bodies)
            followed = _followed_findings(
                module, path, builder.index, reached, loader, enabled, bodies
            )
        if deps is not None:
            deps.update(loader.dependencies())
    return resolve(module, path, ctx.pending), followed, builder.index


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


def _out_of_recursion(path: str) -> Finding:
    """OP001 for an analysis that ran out of recursion (lint and the pre-run check)."""
    from openprogram_analyzers.guard import RECURSION_LIMIT_MESSAGE

    return Finding("OP001", RECURSION_LIMIT_MESSAGE, "error", path, 1, 1, 1, 1)


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

FOLLOWED_CODES = frozenset(f"OP20{i}" for i in range(1, 9))
"""What a first-party helper module reached from a resumable function can be reported for."""


def follow_imports(index: ModuleIndex, path: str) -> HelperLoader:
    """Resolve the relative imports of ``index`` (the Program file ``path``), mark its
    first-party imports (modules next to the Program, or in the folder holding its
    package) and resolve what helper modules re-export: the one way the pre-run check and
    ``openprogram-lint`` see a Program's imports."""
    from openprogram_analyzers.first_party import HelperLoader, link_first_party

    loader = HelperLoader(os.path.dirname(path))
    loader.absolute(index, path)
    link_first_party(index, loader)
    return loader


def reached_functions(
    index: ModuleIndex, roots: Iterable[Any], bodies: dict[str, str] | None = None
) -> dict[str, bool]:
    """Qualname -> whether it is in an orchestration body (else a step dependency only),
    over the scopes of ``roots``: where calls into helper modules are followed from.
    ``bodies`` receives the step dependencies run again on resume (a ``workflow(...)``
    body or a durable ``parallel({...})`` branch: qualname -> which)."""
    from openprogram_analyzers import determinism

    orchestration: dict[str, bool] = {}
    dependencies: dict[str, bool] = {}
    for fn in roots:
        scope = determinism.build_scope(index, fn)
        orchestration.update(dict.fromkeys(scope.orchestration, True))
        dependencies.update(dict.fromkeys(scope.dependencies, False))
        if bodies is not None:
            bodies.update(scope.workflow_bodies)
    return {**orchestration, **{q: o for q, o in dependencies.items() if q not in orchestration}}


@dataclass(frozen=True)
class EntryCheck:
    """The pre-run check of one resumable entry: its findings (suppressions and config
    applied, exactly as ``openprogram-lint`` reports them) and the functions it reached
    (what ``keep_original`` saves)."""

    findings: list[Finding]
    reached: list[str]
    helper_files: tuple[str, ...] = ()  # first-party modules followed (the cache checks them)


def config_for(path: str) -> LintConfig:
    """``[tool.openprogram.lint]`` of the configuration applying to ``path``
    (``find_config``, as ``openprogram-lint`` and the language server find it)."""
    from openprogram_analyzers.config import find_pyproject

    found = find_pyproject(path)
    return LintConfig.from_pyproject(found) if found is not None else LintConfig()


def check_entry(
    source: str, path: str, qualname: str, *, config: LintConfig | None = None
) -> EntryCheck:
    """``openprogram-lint`` restricted to one resumable entry: same rules, messages,
    suppressions (``# noqa: OP205``) and config; OP900 is left to the linter."""
    from openprogram_analyzers.guard import recursion_headroom

    with recursion_headroom():
        try:
            return _check_entry(source, path, qualname, config)
        except RecursionError:
            return EntryCheck([_out_of_recursion(path)], [])


def _check_entry(source: str, path: str, qualname: str, config: LintConfig | None) -> EntryCheck:
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
    loader = follow_imports(index, os.path.abspath(path))
    ctx = Context(source, path, index, enabled)
    bodies: dict[str, str] = {}
    reached = reached_functions(index, [fn], bodies)
    # the entry's orchestration and what it runs: its step calls' names and functions too
    for f in [*determinism.compute_for(index, [fn]), *determinism.step_usage(index, reached)]:
        if f.code in enabled:
            ctx.report(f.code, f.node, f.message, related=f.chain)
    found = resolve(module, path, ctx.pending)
    kept = apply_suppressions(source, path, found, enabled)
    kept.extend(_followed_findings(module, path, index, reached, loader, enabled, bodies))
    return EntryCheck(kept, list(reached), loader.files)


def _followed_findings(
    module: cst.Module,
    path: str,
    index: Any,
    reached: dict[str, bool],
    loader: Any,
    enabled: frozenset[str],
    bodies: dict[str, str],
) -> list[Finding]:
    """Findings in first-party helper modules the entry calls (followed across files),
    each with the call in the entry module as related information (``bodies``: the
    functions of ``reached`` run again on resume, a helper they call is checked as such).
    A helper's own suppressions apply; whether they are used is that file's lint (no
    OP900 here)."""
    from openprogram_analyzers import determinism
    from openprogram_analyzers.first_party import followed_calls, link_first_party

    enabled = enabled - {"OP900"}
    # a call chain's links (message, path, module, call), placed only for a finding:
    # positions cost a pass over the module, and most helpers report nothing
    Link = tuple[str, str, cst.Module, cst.CSTNode]
    positions: dict[int, Any] = {}

    def placed(link: Link) -> Related:
        message, mod_path, mod, node = link
        if id(mod) not in positions:
            positions[id(mod)] = MetadataWrapper(mod, unsafe_skip_copy=True).resolve(
                PositionProvider
            )
        r = positions[id(mod)].get(node)
        where = (r.start.line, r.start.column + 1, r.end.line, r.end.column + 1) if r else (1,) * 4
        return Related(message, mod_path, *where)

    out: list[Finding] = []
    todo: list[tuple[cst.Module, str, Any, dict[str, bool], dict[str, str], tuple[Link, ...]]] = [
        (module, path, index, reached, bodies, ())
    ]
    seen: set[tuple[str, str]] = set()
    while todo and len(seen) < 200:
        mod, mod_path, idx, functions, in_bodies, links = todo.pop(0)
        for call in followed_calls(idx, functions, loader, in_bodies):
            key = (call.helper.path, call.function.qualname)
            if key in seen:
                continue
            seen.add(key)
            name = f"{os.path.splitext(os.path.basename(call.helper.path))[0]}.{call.function.qualname}"
            link: Link = (f"'{call.caller}' calls '{name}' here", mod_path, mod, call.call)
            helper = call.helper
            # its own imports of helper modules are first-party too (followed, not OP208);
            # once per helper, however many of its functions are followed
            if not helper.linked:
                helper.linked = True
                link_first_party(helper.index, loader)
            hctx = Context(helper.source, helper.path, helper.index, enabled)
            marker: list[tuple[str, cst.CSTNode]] = [("", call.call)]
            for det in determinism.compute_for(
                helper.index,
                [call.function],
                chain=marker,
                orchestration=call.orchestration,
                body=call.body,
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
                out.append(replace(f, related=(*map(placed, chain), *f.related)))
            scope = determinism.build_scope(
                helper.index, call.function, marker, call.orchestration, call.body
            )
            nested = {
                **{q: True for q in scope.orchestration},
                **{q: False for q in scope.dependencies},
            }
            todo.append(
                (helper.module, helper.path, helper.index, nested, scope.workflow_bodies, chain)
            )
    return out


def analyze_for_engine(source: str, path: str, *, resumable: str) -> list[Finding]:
    """Determinism findings (OP001, OP201–OP208) for one named resumable function."""
    return check_entry(source, path, resumable).findings
