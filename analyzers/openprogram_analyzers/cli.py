"""``openprogram-lint``: the analyzer as a CI command (SPEC §4)."""

from __future__ import annotations

import argparse
import os
import sys

from openprogram_analyzers.codes import ALL_CODES

TYPE_CHECKING = False  # config (dataclasses), findings, typing load only when a run needs them
if TYPE_CHECKING:
    from collections.abc import Sequence

    from openprogram_analyzers.config import LintConfig
    from openprogram_analyzers.findings import Finding
    from openprogram_analyzers.memo import RunMemo

MAX_FILE_BYTES = 8 * 1024 * 1024
PARALLEL_THRESHOLD = 24
DEFAULT_TIME_LIMIT = 60.0


class Job:
    """One file to analyze (a plain class: ``dataclasses`` stays off the warm path)."""

    __slots__ = ("display", "path", "source", "store")

    def __init__(self, path: str, display: str, source: str, store: str | None) -> None:
        self.path = path  # absolute
        self.display = display
        self.source = source
        self.store = store


def _codes(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    out: list[str] = []
    for v in values:
        out.extend(c.strip() for c in v.split(",") if c.strip())
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="openprogram-lint",
        description="Check OpenProgram Programs (method_options, determinism of resumable "
        "functions, decision menus, PROGRAM_ENTRIES).",
    )
    p.add_argument("paths", nargs="*", help="files or directories (default: .); '-' reads stdin")
    p.add_argument("--stdin-filename", help="path reported for source read from stdin")
    p.add_argument("--select", action="append", help="comma-separated codes or prefixes")
    p.add_argument("--ignore", action="append", help="comma-separated codes or prefixes")
    p.add_argument("--extend-select", action="append", help="add codes to the selection")
    p.add_argument(
        "--format", choices=("text", "json", "sarif", "github"), default="text", dest="fmt"
    )
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--diff", action="store_true", help="show safe fixes as a diff, change nothing")
    p.add_argument("--explain", metavar="CODE", help="explain a rule and exit")
    p.add_argument("--statistics", action="store_true", help="count findings per code")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    p.add_argument("--store", metavar="DIR", help="store root for OP209 (recorded runs)")
    p.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml")
    p.add_argument(
        "--file-time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help=f"report a file not analysed after this long (default {DEFAULT_TIME_LIMIT:g}; 0: none)",
    )
    return p


def _err(msg: str) -> None:
    print(f"openprogram-lint: {msg}", file=sys.stderr)


def _analyze_job(job: Job, config: LintConfig) -> tuple[list[Finding], str | None]:
    """Analyze one file; never raises (an internal error is returned as text)."""
    try:
        from openprogram_analyzers.analysis import analyze_source

        recorded = None
        if job.store is not None:
            from openprogram_analyzers.store_adapter import recorded_steps

            recorded = recorded_steps(job.store, job.path)
        return analyze_source(job.source, job.display, config=config, recorded_steps=recorded), None
    except Exception as exc:  # pragma: no cover - reported, run continues
        return [], f"{job.display}: internal error: {type(exc).__name__}: {exc}"


def _decode(data: bytes) -> str | Finding:
    """Source text (UTF-8 or the PEP 263 coding cookie), or an OP001 finding."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        first = exc
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return _read_error(
            "", f"file is not valid text in its encoding: {first.reason} at byte {first.start}"
        )


def _read_error(display: str, message: str) -> Finding:
    from openprogram_analyzers.findings import Finding

    return Finding("OP001", message, "error", display, 1, 1, 1, 1)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.explain:
        from openprogram_analyzers.rules import RULES

        code = args.explain.strip().upper()
        if code not in RULES:
            _err(f"unknown rule code {args.explain!r} (known: {', '.join(sorted(RULES))})")
            return 2
        sys.stdout.write(RULES[code].explain())
        return 0
    cwd = os.getcwd()
    paths = args.paths or ["."]
    if "-" not in paths and _cacheable(args):
        from openprogram_analyzers.fastpath import try_replay

        last = try_replay(args, paths, cwd)
        if last is not None:
            sys.stdout.write(last[1])
            return last[0]
    from openprogram_analyzers.config import LintConfig, LintConfigError
    from openprogram_analyzers.paths import find_pyproject_str

    try:
        pyproject = args.config or find_pyproject_str(cwd)
        config = LintConfig.from_pyproject(pyproject) if pyproject else LintConfig(root=cwd)
        config = config.with_overrides(
            select=_codes(args.select),
            ignore=_codes(args.ignore),
            extend_select=_codes(args.extend_select),
        )
        config.validate("command line")
    except LintConfigError as exc:
        _err(str(exc))
        return 2
    if "-" in paths:
        return _run_stdin(args, config)
    return _run_files(args, config, paths, cwd)


def _cacheable(args: argparse.Namespace) -> bool:
    """Whether results may come from (and go to) the cache."""
    return not args.no_cache and not args.store and not args.fix and not args.diff


def _run_stdin(args: argparse.Namespace, config: LintConfig) -> int:
    from openprogram_analyzers.analysis import analyze_source
    from openprogram_analyzers.fixes import apply_safe_fixes, unified_diff

    display = args.stdin_filename or "<stdin>"
    data = sys.stdin.buffer.read()
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        findings = [
            _read_error(display, f"file is not UTF-8 text: {exc.reason} at byte {exc.start}")
        ]
        _emit(args, findings)
        return 1
    findings = analyze_source(source, display, config=config)
    if args.fix or args.diff:
        fixed, count = apply_safe_fixes(source, findings)
        if args.diff:
            sys.stdout.write(unified_diff(display, source, fixed))
            return 1 if count else 0
        sys.stdout.write(fixed)
        remaining = analyze_source(fixed, display, config=config)
        return 1 if remaining else 0
    _emit(args, findings)
    return 1 if findings else 0


def _run_files(args: argparse.Namespace, config: LintConfig, paths: list[str], cwd: str) -> int:
    from openprogram_analyzers.files import discover

    use_cache = _cacheable(args)
    findings: list[Finding] = []
    internal: list[str] = []
    entries: list[tuple[str, str, os.stat_result]] = []
    replayable = use_cache  # every output line comes from analysis or the result cache
    for key, display in discover(paths, config, cwd):
        try:
            entries.append((key, display, os.stat(key)))
        except OSError as exc:
            replayable = False
            if not os.path.lexists(key):
                _err(f"{display}: no such file or directory")
                internal.append(display)
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
    return _lint_entries(args, config, entries, findings, internal, memo)


def _lint_entries(
    args: argparse.Namespace,
    config: LintConfig,
    entries: list[tuple[str, str, os.stat_result]],
    findings: list[Finding],
    internal: list[str],
    memo: RunMemo | None,
) -> int:
    from openprogram_analyzers.cache import ResultCache, content_hash
    from openprogram_analyzers.prefilter import may_trigger

    use_cache = _cacheable(args)
    cache = ResultCache(config.root, config.fingerprint()) if use_cache else None
    jobs: list[Job] = []
    pending: list[tuple[Job, str, os.stat_result]] = []
    uncached = False  # findings the result cache does not hold (a memo could not replay)
    for key, display, st in entries:
        if cache is not None:
            digest = cache.lookup_stat(key, st)
            if digest is not None:
                hit = cache.get(digest, display)
                if hit is not None:
                    findings.extend(hit)
                    continue
        if st.st_size > MAX_FILE_BYTES:
            uncached = True
            findings.append(
                _read_error(display, f"file too large to analyze ({st.st_size} bytes), skipped")
            )
            continue
        try:
            with open(key, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            uncached = True
            findings.append(_read_error(display, f"cannot read file: {exc.strerror}"))
            continue
        digest = content_hash(data)
        if cache is not None:
            hit = cache.get(digest, display)
            if hit is not None:
                cache.put(key, st, digest, hit)
                findings.extend(hit)
                continue
        # Binary and undecodable files depend on their content only: cached like results.
        source_or_error: str | Finding
        if b"\0" in data:
            source_or_error = _read_error(display, "binary file (contains NUL bytes), skipped")
        else:
            source_or_error = _decode(data)
        if not isinstance(source_or_error, str):
            from dataclasses import replace

            unreadable = [replace(source_or_error, path=display)]
            findings.extend(unreadable)
            if cache is not None:
                cache.put(key, st, digest, unreadable)
            continue
        source = source_or_error
        if not may_trigger(source) and not args.store:
            if cache is not None:
                cache.put(key, st, digest, [])
            continue
        job = Job(key, display, source, args.store)
        jobs.append(job)
        pending.append((job, digest, st))

    results = _analyze_all(jobs, config, args.file_time_limit or None)
    for (job, digest, st), (found, error) in zip(pending, results, strict=True):
        if error is not None:
            internal.append(error)
            _err(error)
            continue
        findings.extend(found)
        if cache is not None:
            cache.put(job.path, st, digest, found)
    if cache is not None:
        cache.save()

    diff_found = False
    if args.fix or args.diff:
        findings, diff_found = _apply_fixes(args, config, findings, pending)
    if findings:
        from openprogram_analyzers.findings import Finding

        findings.sort(key=Finding.sort_key)
    output = _render(args, findings)
    sys.stdout.write(output)
    if internal:
        return 2
    code = 1 if findings or diff_found else 0
    if memo is not None and not uncached:
        memo.save(code, output)
    return code


def _load_analyzer() -> None:
    """Import libcst and the rules once, with the cyclic GC paused (its passes over
    libcst's thousands of new classes are a tenth of the import), then freeze them."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        import openprogram_analyzers.analysis
        import openprogram_analyzers.rules  # noqa: F401
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _analyze_all(
    jobs: list[Job], config: LintConfig, time_limit: float | None
) -> list[tuple[list[Finding], str | None]]:
    """Every job's result; each file runs in a forked worker (a crash or an overrun
    costs that file only, see ``workers.py``)."""
    if not jobs:
        return []
    _load_analyzer()
    from openprogram_analyzers.workers import Pool, cpu_count

    workers = 1 if len(jobs) < PARALLEL_THRESHOLD else min(cpu_count(), 8)
    pool: Pool[Job, tuple[list[Finding], str | None]] = Pool(
        lambda job: _analyze_job(job, config),
        _crashed,
        _timed_out,
        workers=workers,
        time_limit=time_limit,
    )
    return pool.run(jobs)


def _crashed(job: Job, how: str) -> tuple[list[Finding], str | None]:
    return [], f"{job.display}: internal error: {how}"


def _timed_out(job: Job, limit: float) -> tuple[list[Finding], str | None]:
    message = f"not analysed: the analysis took longer than the time limit of {limit:g} s"
    return [_read_error(job.display, message + " (--file-time-limit)")], None


def _apply_fixes(
    args: argparse.Namespace,
    config: LintConfig,
    findings: list[Finding],
    pending: list[tuple[Job, str, os.stat_result]],
) -> tuple[list[Finding], bool]:
    from openprogram_analyzers.analysis import analyze_source
    from openprogram_analyzers.fixes import apply_safe_fixes, unified_diff

    by_display = {job.display: job for job, _, _ in pending}
    result: list[Finding] = []
    diff_found = False
    grouped: dict[str, list[Finding]] = {}
    for f in findings:
        grouped.setdefault(f.path, []).append(f)
    for display, items in grouped.items():
        job = by_display.get(display)
        if job is None:
            result.extend(items)
            continue
        fixed, count = apply_safe_fixes(job.source, items)
        if not count:
            result.extend(items)
            continue
        diff_found = True
        if args.diff:
            sys.stdout.write(unified_diff(display, job.source, fixed))
            result.extend(items)
            continue
        with open(job.path, "w", encoding="utf-8") as fh:
            fh.write(fixed)
        print(f"Fixed {count} finding{'s' if count != 1 else ''} in {display}", file=sys.stderr)
        result.extend(analyze_source(fixed, display, config=config))
    if args.fix:
        diff_found = False
    return result, diff_found


def _emit(args: argparse.Namespace, findings: list[Finding]) -> None:
    sys.stdout.write(_render(args, findings))


def _render(args: argparse.Namespace, findings: list[Finding]) -> str:
    from openprogram_analyzers import formats

    if args.diff and args.fmt == "text":
        return ""
    if args.statistics:
        return formats.statistics(findings)
    if args.fmt == "json":
        return formats.as_json(findings)
    if args.fmt == "sarif":
        from openprogram_analyzers.cache import version

        return formats.sarif(findings, version())
    if args.fmt == "github":
        return formats.github(findings)
    return formats.text(findings)


__all__ = ["ALL_CODES", "main"]

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
