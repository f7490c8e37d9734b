"""``openprogram-lint``: the analyzer as a CI command (SPEC §4)."""

from __future__ import annotations

import argparse
import os
import sys

from openprogram_analyzers.codes import ALL_CODES

TYPE_CHECKING = False  # config (dataclasses), findings, typing load only when a run needs them
if TYPE_CHECKING:
    from collections.abc import Sequence

    from openprogram_analyzers.config import ConfigsByFile, LintConfig
    from openprogram_analyzers.findings import Finding
    from openprogram_analyzers.first_party import Dependency
    from openprogram_analyzers.fixes import Rejected
    from openprogram_analyzers.memo import RunMemo

    JobResult = tuple[list[Finding], str | None, dict[str, Dependency]]
    """Findings, an internal error, the helper files the findings depend on."""

MAX_FILE_BYTES = 8 * 1024 * 1024
PARALLEL_THRESHOLD = 24
DEFAULT_TIME_LIMIT = 60.0


class Job:
    """One file to analyze (a plain class: ``dataclasses`` stays off the warm path)."""

    __slots__ = ("display", "encoding", "path", "source", "store")

    def __init__(
        self, path: str, display: str, source: str, store: str | None, encoding: str = "utf-8"
    ) -> None:
        self.path = path  # absolute
        self.display = display
        self.source = source
        self.store = store
        self.encoding = encoding  # written back in it by --fix


def _codes(values: Sequence[str] | None) -> list[str] | None:
    """The comma-separated items of an option given once or more; a value that names none
    (``--select ''``, ``--select ,``) is one empty item, which validation refuses."""
    if values is None:
        return None
    out: list[str] = []
    for v in values:
        out.extend([c.strip() for c in v.split(",") if c.strip()] or [""])
    return out


def _patterns(values: Sequence[str] | None) -> list[str] | None:
    """The comma-separated items of ``--extend-exclude`` or ``--explain``, empty ones
    left out."""
    found = _codes(values)
    return None if found is None else [p for p in found if p]


def _time_limit(text: str) -> float:
    """``--file-time-limit``'s seconds: a number above 0, or 0 for none."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):  # NaN compares false
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0 (0: no limit), got {text!r}"
        )
    return value


FORMATS = ("text", "json", "json-lines", "sarif", "github", "gitlab", "junit")


def build_parser() -> argparse.ArgumentParser:
    from openprogram.cli.parsing import RedactingParser
    from openprogram_analyzers.cache import version

    p = RedactingParser(
        prog="openprogram-lint",
        description="Check OpenProgram Programs (method_options, determinism of resumable "
        "functions, decision menus, PROGRAM_ENTRIES).",
    )
    p.add_argument("paths", nargs="*", help="files or directories (default: .); '-' reads stdin")
    p.add_argument("--version", action="version", version=f"openprogram-lint {version()}")
    p.add_argument("--stdin-filename", help="path reported for source read from stdin")
    p.add_argument("--select", action="append", help="comma-separated codes or prefixes")
    p.add_argument("--ignore", action="append", help="comma-separated codes or prefixes")
    p.add_argument("--extend-select", action="append", help="add codes to the selection")
    p.add_argument("--extend-ignore", action="append", help="add codes to the ignored ones")
    p.add_argument(
        "--extend-exclude", action="append", help="comma-separated patterns to exclude as well"
    )
    p.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply exclude patterns to files named on the command line too (pre-commit)",
    )
    p.add_argument("--format", choices=FORMATS, default="text", dest="fmt")
    p.add_argument("--output-file", "-o", metavar="PATH", help="write the report to PATH")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix/--diff: also apply unsafe fixes"
    )
    p.add_argument("--diff", action="store_true", help="show fixes as a diff, change nothing")
    p.add_argument("--show-fixes", action="store_true", help="list fixes (applied or available)")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings and nothing else")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings (2 stays 2)")
    p.add_argument(
        "--fail-on-info", action="store_true", help="info findings (OP108) fail the run too"
    )
    p.add_argument(
        "--explain",
        metavar="CODES",
        help="explain rules (codes or names, comma-separated, or 'all') and exit",
    )
    p.add_argument(
        "--list-rules", action="store_true", help="list every rule (code, name, severity)"
    )
    p.add_argument("--statistics", action="store_true", help="count findings per code")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--store", metavar="DIR", help="store root for OP209 (recorded runs)")
    p.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml")
    p.add_argument(
        "--file-time-limit",
        type=_time_limit,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help=f"report a file not analysed after this long (default {DEFAULT_TIME_LIMIT:g}; 0: none)",
    )
    return p


def _err(msg: str) -> None:
    """An error line, without the password of a database URL or libpq ``password=`` it
    echoes (a store given as a path, say)."""
    from openprogram.store.postgres import redact_text

    print(f"openprogram-lint: {redact_text(msg)}", file=sys.stderr)


def _analyze_job(job: Job, config: LintConfig) -> JobResult:
    """Analyze one file; never raises (an internal error is returned as text)."""
    try:
        from openprogram_analyzers.analysis import analyze_file

        recorded = None
        if job.store is not None:
            from openprogram_analyzers.store_adapter import recorded_steps

            recorded = recorded_steps(job.store, job.path)
        found, deps = analyze_file(job.source, job.display, config=config, recorded_steps=recorded)
        return found, None, deps
    except Exception as exc:  # pragma: no cover - reported, run continues
        return [], f"{job.display}: internal error: {type(exc).__name__}: {exc}", {}


def _decode(data: bytes) -> tuple[str, str] | Finding:
    """``(source text, encoding)`` (UTF-8 or the PEP 263 coding cookie), or OP001."""
    from openprogram.contract.source import decode_error, read_source

    try:
        return read_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        line, message = decode_error(data, exc)
        return _read_error("", message, line)


def _read_error(display: str, message: str, line: int = 1) -> Finding:
    from openprogram_analyzers.findings import Finding

    return Finding("OP001", message, "error", display, line, 1, line, 1)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.output_file:
        import contextlib

        try:
            out = open(args.output_file, "w", encoding="utf-8")
        except OSError as exc:
            _err(f"cannot write {args.output_file}: {exc.strerror}")
            return 2
        with out, contextlib.redirect_stdout(out):
            code = _main(args)
    else:
        try:
            code = _main(args)
        except BrokenPipeError:  # `openprogram-lint ... | head`: the reader is gone
            from openprogram.cli.exits import reader_gone

            reader_gone()
            return 1  # the findings were not all read: never a pass
    return 0 if code == 1 and args.exit_zero else code


#: The formats of the outputs that are not a report of findings (others are refused).
_OTHER_OUTPUT_FORMATS = {
    "--list-rules": ("text", "json"),
    "--explain": ("text",),
    "--statistics": ("text", "json", "json-lines"),
}


def _unsupported_format(args: argparse.Namespace) -> str | None:
    """The error for ``--format`` with an output that has no such format, else ``None``."""
    given = {
        "--list-rules": args.list_rules,
        "--explain": args.explain is not None,
        "--statistics": args.statistics,
    }
    for option, formats in _OTHER_OUTPUT_FORMATS.items():
        if given[option] and args.fmt not in formats:
            return f"{option} has no --format {args.fmt} (formats: {', '.join(formats)})"
    return None


def _main(args: argparse.Namespace) -> int:
    refused = _unsupported_format(args)
    if refused is not None:
        _err(refused)
        return 2
    if args.explain is not None or args.list_rules:  # --explain '' is an unknown code
        return _explain(args)
    cwd = os.getcwd()
    paths = args.paths or ["."]
    if "-" not in paths and _cacheable(args):
        from openprogram_analyzers.fastpath import try_replay

        last = try_replay(args, paths, cwd)
        if last is not None:
            sys.stdout.write(last[1])
            return last[0]
    from openprogram_analyzers.config import ConfigsByFile, LintConfigError

    overrides = {
        "select": _codes(args.select),
        "ignore": _codes(args.ignore),
        "extend_select": _codes(args.extend_select),
        "extend_ignore": _codes(args.extend_ignore),
        "extend_exclude": _patterns(args.extend_exclude),
        "force_exclude": args.force_exclude or None,
    }
    configs = ConfigsByFile(cwd, overrides, args.config)
    try:
        # stdin: the configuration of --stdin-filename's folder, else of the working one
        where = args.stdin_filename if "-" in paths and args.stdin_filename else cwd
        config = configs.for_path(os.path.join(cwd, where))
    except LintConfigError as exc:
        _err(str(exc))
        return 2
    if args.store:
        from openprogram_analyzers.store_adapter import StoreUnreadable, check_store

        try:
            check_store(args.store)
        except StoreUnreadable as exc:
            _err(str(exc))
            return 2
    if "-" in paths:
        return _run_stdin(args, config)
    try:
        return _run_files(args, configs, config, paths, cwd)
    except LintConfigError as exc:  # the configuration of a nested folder
        _err(str(exc))
        return 2


def _explain(args: argparse.Namespace) -> int:
    from openprogram_analyzers.rules import RULES

    if args.list_rules:
        rows = []
        for code, rule in sorted(RULES.items()):
            safety = rule.sections().get("Fix safety", "")
            fix = "safe" if safety.startswith("Safe") else None
            fix = "unsafe" if safety.startswith("Unsafe") else fix
            rows.append((code, rule, fix))
        if args.fmt == "json":
            import json

            listed = [
                {"code": c, "name": r.name, "severity": r.severity, "summary": r.summary, "fix": f}
                for c, r, f in rows
            ]
            print(json.dumps(listed, indent=2))
            return 0
        for code, rule, fix in rows:
            shown = {"safe": " [*]", "unsafe": " [unsafe fix]"}.get(fix or "", "")
            print(f"{code}  {rule.name:<28} {rule.severity:<8}{rule.summary}{shown}")
        return 0
    by_name = {rule.name: code for code, rule in RULES.items()}
    wanted: list[str] = []
    for item in _patterns([args.explain]) or [args.explain]:  # '' and ',' name no rule
        key = item.strip()
        if key.lower() == "all":
            wanted.extend(sorted(RULES))
        elif key.upper() in RULES:
            wanted.append(key.upper())
        elif key.lower() in by_name:
            wanted.append(by_name[key.lower()])
        else:
            _err(f"unknown rule code or name {key!r} (known: {', '.join(sorted(RULES))})")
            return 2
    sys.stdout.write("\n".join(RULES[code].explain() for code in dict.fromkeys(wanted)))
    return 0


def _cacheable(args: argparse.Namespace) -> bool:
    """Whether results may come from (and go to) the cache."""
    return not args.no_cache and not args.store and not args.fix and not args.diff


def _run_stdin(args: argparse.Namespace, config: LintConfig) -> int:
    from openprogram_analyzers.analysis import analyze_source
    from openprogram_analyzers.fixes import fix_until_stable, unified_diff

    display = args.stdin_filename or "<stdin>"
    decoded = _decode(sys.stdin.buffer.read())  # a PEP 263 coding cookie is honoured
    if not isinstance(decoded, tuple):
        from dataclasses import replace

        findings = [replace(decoded, path=display)]
        _emit(args, findings)
        return 1
    source, encoding = decoded

    def analyze(text: str) -> list[Finding]:
        return analyze_source(text, display, config=config)

    findings = analyze(source)
    if args.fix or args.diff:
        fixed, count, remaining, rejected = fix_until_stable(
            source, analyze, findings, unsafe=args.unsafe_fixes
        )
        _report_rejected(display, rejected)
        if args.diff:
            sys.stdout.write(unified_diff(display, source, fixed))
            return 1 if count else 0
        sys.stdout.flush()
        sys.stdout.buffer.write(fixed.encode(encoding, "surrogateescape"))
        return _exit_code(args, remaining)
    _emit(args, findings)
    return _exit_code(args, findings)


def _exit_code(args: argparse.Namespace, findings: Sequence[Finding]) -> int:
    """1 when a finding fails the run (info findings only with ``--fail-on-info``)."""
    return 1 if any(f.severity != "info" or args.fail_on_info for f in findings) else 0


def _run_files(
    args: argparse.Namespace,
    configs: ConfigsByFile,
    config: LintConfig,
    paths: list[str],
    cwd: str,
) -> int:
    """Lint the files under ``paths``, each with its own configuration (``configs``;
    ``config`` is the working directory's, whose ``force-exclude`` and cache hold)."""
    from openprogram_analyzers.files import discover

    use_cache = _cacheable(args)
    findings: list[Finding] = []
    internal: list[str] = []
    entries: list[tuple[str, str, os.stat_result]] = []
    replayable = use_cache  # every output line comes from analysis or the result cache
    for key, display in discover(paths, configs, cwd, force_exclude=config.force_exclude):
        try:
            entries.append((key, display, os.stat(key)))
        except OSError as exc:
            replayable = False
            if not os.path.lexists(key):
                # an error (exit 2) that a machine report holds too, as ruff's E902 does:
                # a report without it would read as a clean lint of that path
                # (its path as the error line shows it: a mistyped store URL given as a
                # path keeps its password hidden)
                from openprogram.store.postgres import redact_text

                _err(f"{display}: no such file or directory")
                internal.append(display)
                findings.append(_read_error(redact_text(display), "no such file or directory"))
            else:
                findings.append(_read_error(display, f"cannot read file: {exc.strerror}"))

    memo = None
    if replayable:
        from openprogram_analyzers.fastpath import run_memo, save_settings

        save_settings(args, cwd, config)
        memo = run_memo(args, str(config.root), config.fingerprint(), entries)
        last = memo.replay()
        if last is not None:
            sys.stdout.write(last[1])
            return last[0]
    groups: dict[int, tuple[LintConfig, list[tuple[str, str, os.stat_result]]]] = {}
    for entry in entries:
        own = configs.for_path(entry[0])
        groups.setdefault(id(own), (own, []))[1].append(entry)
    return _lint_entries(args, list(groups.values()), findings, internal, memo)


class _Lint:
    """What linting every group of files gathers."""

    def __init__(self, findings: list[Finding], internal: list[str]) -> None:
        self.findings = findings
        self.internal = internal
        self.uncached = False  # findings the result cache does not hold (no memo replay)
        # helper modules the findings depend on (absolute path -> stat key; None: absent)
        self.helpers: dict[str, str | None] = {}
        # findings in helper modules, reported from the Programs that call them (no fixes)
        self.followed: list[Finding] = []
        self.diff_found = False


def _lint_entries(
    args: argparse.Namespace,
    groups: list[tuple[LintConfig, list[tuple[str, str, os.stat_result]]]],
    findings: list[Finding],
    internal: list[str],
    memo: RunMemo | None,
) -> int:
    state = _Lint(findings, internal)
    for config, entries in groups:
        _lint_group(args, config, entries, state)
    findings, followed, internal = state.findings, state.followed, state.internal
    if followed:  # a helper called from two Programs (or also linted itself) shows once
        findings = _once([*findings, *followed])
    if findings:
        from openprogram_analyzers.findings import Finding

        findings.sort(key=Finding.sort_key)
    output = _render(args, findings)
    sys.stdout.write(output)
    if internal:
        return 2
    code = 1 if state.diff_found else _exit_code(args, findings)
    if memo is not None and not state.uncached:
        memo.save(code, output, state.helpers)
    return code


def _lint_group(
    args: argparse.Namespace,
    config: LintConfig,
    entries: list[tuple[str, str, os.stat_result]],
    state: _Lint,
) -> None:
    """Lint ``entries``, files of one configuration, into ``state``."""
    from openprogram_analyzers.cache import ResultCache, content_hash
    from openprogram_analyzers.prefilter import may_trigger

    use_cache = _cacheable(args)
    cache = ResultCache(config.root, config.fingerprint()) if use_cache else None
    jobs: list[Job] = []
    pending: list[tuple[Job, str, os.stat_result]] = []
    findings, internal, helpers, followed = (
        state.findings,
        state.internal,
        state.helpers,
        state.followed,
    )
    uncached = False
    for key, display, st in entries:
        if st.st_size > MAX_FILE_BYTES:
            uncached = True
            findings.append(
                _read_error(display, f"file too large to analyse ({st.st_size} bytes), skipped")
            )
            continue
        try:
            with open(key, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            uncached = True
            findings.append(_read_error(display, f"cannot read file: {exc.strerror}"))
            continue
        # Results are keyed by the content's digest: an edit is never served stale,
        # whatever the file's mtime and size say.
        digest = content_hash(data)
        if cache is not None:
            hit = cache.get(digest, display, helpers)
            if hit is not None:
                cache.hit(key, digest)
                for f in hit:
                    (findings if f.path == display else followed).append(f)
                continue
        # Binary and undecodable files depend on their content only: cached like results.
        decoded: tuple[str, str] | Finding
        if b"\0" in data:
            decoded = _read_error(display, "binary file (contains NUL bytes), skipped")
        else:
            decoded = _decode(data)
        if not isinstance(decoded, tuple):
            from dataclasses import replace

            unreadable = [replace(decoded, path=display)]
            findings.extend(unreadable)
            if cache is not None:
                cache.put(key, st, digest, unreadable, display)
            continue
        source, encoding = decoded
        if not may_trigger(source) and not args.store:
            if cache is not None:
                cache.put(key, st, digest, [], display)
            continue
        job = Job(key, display, source, args.store, encoding)
        jobs.append(job)
        pending.append((job, digest, st))

    results = _analyze_all(jobs, config, args.file_time_limit or None)
    for (job, digest, st), (found, error, deps) in zip(pending, results, strict=True):
        if error is not None:
            internal.append(error)
            _err(error)
            continue
        for f in found:
            (findings if f.path == job.display else followed).append(f)
        for path, dep in deps.items():
            helpers[os.path.abspath(path)] = None if dep is None else dep[0]
        if cache is not None:
            cache.put(job.path, st, digest, found, job.display, deps)
    if cache is not None:
        cache.save()
    state.uncached = state.uncached or uncached
    if args.fix or args.diff:
        state.findings, diff_found = _apply_fixes(args, config, findings, pending)
        state.diff_found = state.diff_found or diff_found


def _once(findings: list[Finding]) -> list[Finding]:
    """``findings`` without repeats of the same finding at the same place (the first kept:
    its call chain is the one shown)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Finding] = []
    for f in findings:
        key = (f.path, f.line, f.column, f.end_line, f.end_column, f.code, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _load_analyzer() -> None:
    """Import libcst and the rules once, fast (``dataclass_code.load_modules``)."""
    from openprogram_analyzers.dataclass_code import load_modules

    load_modules("openprogram_analyzers.analysis", "openprogram_analyzers.rules")


def _analyze_all(jobs: list[Job], config: LintConfig, time_limit: float | None) -> list[JobResult]:
    """Every job's result; each file runs in a forked worker (a crash or an overrun
    costs that file only, see ``workers.py``)."""
    if not jobs:
        return []
    _load_analyzer()
    from openprogram_analyzers.workers import Pool, cpu_count

    workers = 1 if len(jobs) < PARALLEL_THRESHOLD else min(cpu_count(), 8)
    pool: Pool[Job, JobResult] = Pool(
        lambda job: _analyze_job(job, config),
        _crashed,
        _timed_out,
        workers=workers,
        time_limit=time_limit,
    )
    return pool.run(jobs)


def _crashed(job: Job, how: str) -> JobResult:
    return [], f"{job.display}: internal error: {how}", {}


def _timed_out(job: Job, limit: float) -> JobResult:
    message = f"not analysed: the analysis took longer than the time limit of {limit:g} s"
    return [_read_error(job.display, message + " (--file-time-limit)")], None, {}


def _apply_fixes(
    args: argparse.Namespace,
    config: LintConfig,
    findings: list[Finding],
    pending: list[tuple[Job, str, os.stat_result]],
) -> tuple[list[Finding], bool]:
    """Apply (``--fix``) or show (``--diff``) the fixes of every file, re-analysing until
    nothing changes; files keep their encoding and line endings."""
    from openprogram_analyzers.analysis import analyze_source
    from openprogram_analyzers.fixes import applicable, fix_until_stable, unified_diff

    by_display = {job.display: job for job, _, _ in pending}
    result: list[Finding] = []
    diff_found = False
    grouped: dict[str, list[Finding]] = {}
    for f in findings:
        grouped.setdefault(f.path, []).append(f)
    for display, items in grouped.items():
        job = by_display.get(display)
        if job is None or not any(applicable(f.fix, unsafe=args.unsafe_fixes) for f in items):
            result.extend(items)
            continue
        fixed_findings = [f for f in items if applicable(f.fix, unsafe=args.unsafe_fixes)]

        def analyze(text: str, display: str = display) -> list[Finding]:
            return analyze_source(text, display, config=config)

        fixed, count, remaining, rejected = fix_until_stable(
            job.source, analyze, items, unsafe=args.unsafe_fixes
        )
        _report_rejected(display, rejected)
        if fixed == job.source:
            result.extend(items)
            continue
        diff_found = True
        if args.diff:
            sys.stdout.write(unified_diff(display, job.source, fixed))
            result.extend(items)
            continue
        try:
            data = fixed.encode(job.encoding, "surrogateescape")
            with open(job.path, "wb") as fh:  # bytes: no newline translation
                fh.write(data)
        except (OSError, UnicodeEncodeError) as exc:
            _err(f"{display}: cannot write the fixed file: {exc}")
            result.extend(items)
            continue
        if not args.quiet:
            plural = "s" if count != 1 else ""
            print(f"Fixed {count} finding{plural} in {display}", file=sys.stderr)
            if args.show_fixes:
                for f in fixed_findings:
                    assert f.fix is not None
                    print(f"    {f.code} {f.fix.description}", file=sys.stderr)
        result.extend(remaining)
    if args.fix:
        diff_found = False
    return result, diff_found


def _report_rejected(display: str, rejected: Sequence[Rejected]) -> None:
    """Say which fixes were not applied because the file would not parse after them."""
    for f, reason in rejected:
        assert f.fix is not None
        _err(
            f"{display}:{f.line}:{f.column}: {f.code}: fix not applied "
            f"({f.fix.description}): the fixed file would not parse: {reason}"
        )


def _emit(args: argparse.Namespace, findings: list[Finding]) -> None:
    sys.stdout.write(_render(args, findings))


def _render(args: argparse.Namespace, findings: list[Finding]) -> str:
    from openprogram_analyzers import formats

    if args.diff and args.fmt == "text":
        return ""
    if args.statistics:
        if args.fmt in ("json", "json-lines"):
            return formats.statistics_json(findings)
        return formats.statistics(findings)
    if args.fmt == "sarif":
        from openprogram_analyzers.cache import version

        return formats.sarif(findings, version())
    if args.fmt == "text":
        return formats.text(findings, show_fixes=args.show_fixes, quiet=args.quiet)
    return formats.RENDERERS[args.fmt](findings)


__all__ = ["ALL_CODES", "main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
