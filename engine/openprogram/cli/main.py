"""``openprogram`` entry point: argparse with one subcommand per module.

Adding a command is adding a module to :mod:`openprogram.cli.commands` that defines

* ``NAME`` (the subcommand), ``HELP`` (one line),
* ``add_arguments(parser)`` and ``execute(args: argparse.Namespace) -> int``;

or, for full control, ``register(subparsers)`` that adds its parser and sets
``handler=<function(args) -> int>`` as a default. A command's ``run_id`` argument
(``RUN_ID``) may be a unique prefix of a run id: it is resolved to the whole id before the
command runs (:func:`~openprogram.cli.common.resolve_run_arg`). A module may also define
``passthrough(argv) -> int``: its arguments are then handed over untouched (``lint`` and
``lsp`` delegate to other tools).

Exit codes and error lines come from the one table in :mod:`openprogram.cli.exits`
(0 ok, 1 failed, 2 usage, 3 paused, 130 interrupted, 143 terminated: SIGTERM stops a
command as Ctrl-C does). Errors are one line on stderr
(``openprogram: error: ...``), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from openprogram._version import __version__
from openprogram.cli.common import resolve_run_arg
from openprogram.cli.exits import (
    CliError,
    Exit,
    code_for,
    command_run,
    reader_gone,
    report_error,
)
from openprogram.cli.parsing import RedactingParser
from openprogram.errors import OpenProgramError, Terminated

PROG = "openprogram"


def command_modules() -> list[ModuleType]:
    """Every command module, sorted by name."""
    from openprogram.cli import commands

    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            mods.append(importlib.import_module(f"{commands.__name__}.{info.name}"))
    return mods


class _Parser(RedactingParser):
    """A usage error is the one error line of every command (raised as :class:`CliError`),
    without the password of a database URL it echoes (``openprogram --store URL runs``,
    ``--store`` before the command: :class:`~openprogram.cli.parsing.RedactingParser`)."""

    def usage_error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix(PROG).strip()
        where = f"{command}: " if command else ""
        hint = f"openprogram {command} --help" if command else "openprogram --help"
        raise CliError(f"{where}{message} (see {hint})")


def build_parser(modules: Sequence[ModuleType] | None = None) -> argparse.ArgumentParser:
    """The full ``openprogram`` parser."""
    parser = _Parser(
        prog=PROG,
        description="Run, inspect and check OpenProgram Programs and their recorded sessions.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in command_modules() if modules is None else modules:
        if hasattr(mod, "register"):
            mod.register(subparsers)
        else:
            about = getattr(mod, "HELP", None)
            sub = subparsers.add_parser(mod.NAME, help=about, description=about)
            mod.add_arguments(sub)
            sub.set_defaults(handler=mod.execute)
    return parser


def _escape_unencodable_output() -> None:
    """Text the terminal's encoding cannot hold — a lone surrogate (``"\\ud800"`` in
    ``--args`` or a result), or any character on a non-UTF-8 terminal — is printed as its
    backslash escape rather than failing after the run completed; in JSON output that
    escape is JSON's own, so the object stays valid."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM: stop as Ctrl-C does (a run is saved as it stands, ``--json`` prints its
    object), exiting 143."""
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv, on_sigterm=False)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        return _main(argv, on_sigterm=True)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None, *, on_sigterm: bool) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    _escape_unencodable_output()
    try:
        modules = command_modules()
        if args_list:
            for mod in modules:
                if getattr(mod, "NAME", None) == args_list[0] and hasattr(mod, "passthrough"):
                    return int(mod.passthrough(args_list[1:]) or 0)  # its own handling
        if on_sigterm:
            signal.signal(signal.SIGTERM, _terminate)
        parser = build_parser(modules)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:  # --help, --version
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        except CliError as exc:  # a usage error
            return report_error(exc, code=exc.code, as_json="--json" in args_list)
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help(sys.stderr)
            return Exit.USAGE
        run_id = getattr(args, "run_id", None)
        if run_id:  # a RUN_ID: the whole id, or a unique prefix of one
            with command_run(run_id):
                try:
                    args.run_id = run_id = resolve_run_arg(run_id, getattr(args, "store", None))
                except (CliError, OpenProgramError) as exc:
                    as_json = bool(getattr(args, "json", False))
                    return report_error(exc, code=code_for(exc), as_json=as_json)
        with command_run(run_id):
            return int(handler(args) or 0)
    except (CliError, OpenProgramError) as exc:  # with --json, also the one JSON object
        return report_error(exc, code=code_for(exc), as_json="--json" in args_list)
    except KeyboardInterrupt as exc:
        return report_error("interrupted", code=code_for(exc), as_json="--json" in args_list)
    except BrokenPipeError:  # e.g. `openprogram sessions | head`
        reader_gone()
        return 0
