"""``openprogram-lsp`` / ``python -m openprogram_lsp``: stdio by default, ``--tcp HOST:PORT``."""

from __future__ import annotations

import argparse
import logging
import sys


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    from openprogram.cli.parsing import RedactingParser  # a --store URL echoed back

    parser = RedactingParser(prog="openprogram-lsp", description=__doc__)
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (default)")
    parser.add_argument("--tcp", type=_host_port, metavar="HOST:PORT", help="serve over TCP")
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level",
    )
    ns = parser.parse_args(argv)
    from openprogram.errors import ConfigError

    from .config import recheck_seconds

    try:
        recheck_s = recheck_seconds()
    except ConfigError as exc:  # one line (no usage: no argument was wrong), exit 2
        print(f"openprogram-lsp: error: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        stream=sys.stderr, level=ns.log_level, format="%(levelname)s %(name)s: %(message)s"
    )
    # the protocol types' and libcst's generated methods not compiled again on each start
    from openprogram_analyzers.dataclass_code import load_modules

    load_modules("openprogram_lsp.server", attrs=True)
    from .run_index import GATE
    from .server import create_server

    GATE.recheck_s = recheck_s

    server = create_server()
    if ns.tcp:
        server.start_tcp(*ns.tcp)
    else:
        server.start_io()
    # LSP: exit code 0 only after a `shutdown` request, 1 otherwise (pygls swallows its
    # own sys.exit); the analysis worker goes with the server
    server.diagnostics.close()
    return 0 if server.protocol._shutdown else 1


if __name__ == "__main__":
    sys.exit(main())
