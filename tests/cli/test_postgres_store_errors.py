"""A ``--store`` PostgreSQL URL that cannot be used — malformed, an unknown database, an
unreachable server, given where no command takes it — is one line ``openprogram: error:
...`` and exit 2 from every command, and the URL's password (``user:PASSWORD@`` or
``?password=``) never appears in any output, also where libpq echoes the URL or a piece
of it. Real CLI subprocesses against a temporary PostgreSQL server (it trusts local
connections, so a password in the URL is accepted and ignored)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pgcluster import PORT, Cluster

BIN = Path(sys.executable).parent
SECRET = "Zq7-secret-9Kx"

PROGRAM = """
from openprogram import step


def act(name: str) -> str:
    return name


def main() -> list:
    return [step("a", act, "a")]


main.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["main"]
"""


def cli(cwd: Path, *args: str, tool: str = "openprogram") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / tool), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def url(cluster: Cluster, database: str, *, in_query: bool = False) -> str:
    """A URL of ``database`` on the test server with ``SECRET`` as its password."""
    where = f"host={cluster.base}&port={PORT}"
    if in_query:
        return f"postgresql://postgres@/{database}?{where}&password={SECRET}"
    return f"postgresql://postgres:{SECRET}@/{database}?{where}"


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    output = proc.stdout + proc.stderr
    assert SECRET not in output, output
    assert proc.returncode == 2, (proc.returncode, output)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openprogram: error: "), line
    return line


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path


COMMANDS = [
    ("runs",),
    ("sessions",),
    ("submit", "prog.py:main"),
    ("worker", "--exit-when-idle"),
    ("resume", "0123456789abcdef"),
    ("run", "prog.py:main", "--json"),
]
BAD_URLS = {
    # urlsplit refuses it (it was a traceback, exit 1); libpq echoes the whole URL
    "malformed": lambda c: f"postgresql://app:{SECRET}@[::1/openprogram",
    # libpq echoes the password: 'invalid percent-encoded token: "<password>%zz"'
    "bad percent-encoding": lambda c: url(c, "postgres").replace(SECRET, SECRET + "%zz"),
    "unknown database, password in the query": lambda c: url(c, "nodb", in_query=True),
    "unknown database": lambda c: url(c, "nodb"),
    "unreachable server": lambda c: url(c, "postgres").replace(f"port={PORT}", "port=1"),
}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("bad", list(BAD_URLS))
def test_an_unusable_store_url_is_one_line_without_its_password(
    work: Path, pg_cluster: Cluster, bad: str, command: tuple[str, ...]
) -> None:
    proc = cli(work, *command, "--store", BAD_URLS[bad](pg_cluster))
    line = one_error_line(proc)
    assert "store postgresql://" in line and "***" in line, line
    if "--json" in command:
        assert json.loads(proc.stdout)["status"] == "error"


def test_replay_of_an_unknown_run_does_not_show_the_password(
    work: Path, pg_cluster: Cluster, pg_dsn: str
) -> None:
    store = url(pg_cluster, pg_dsn.split("?")[0].rsplit("/", 1)[1])
    assert cli(work, "run", "prog.py:main", "--store", store).returncode == 0
    line = one_error_line(cli(work, "replay", "0123456789abcdef", "--store", store))
    assert "no run '0123456789abcdef'" in line, line


def test_a_store_url_where_no_command_takes_it(work: Path, pg_cluster: Cluster) -> None:
    """``--store`` before the command, or for the language server: a usage error that
    echoes the argument, without its password."""
    store = url(pg_cluster, "postgres")
    line = one_error_line(cli(work, "--store", store, "runs"))
    assert "invalid choice" in line, line
    lsp = cli(work, "lsp", "--store", store)
    assert lsp.returncode == 2 and SECRET not in lsp.stdout + lsp.stderr, lsp.stderr
    assert "unrecognized arguments: --store postgresql://postgres:***@" in lsp.stderr


def test_lint_with_an_unreadable_store_url_does_not_show_the_password(
    work: Path, pg_cluster: Cluster
) -> None:
    for store in (url(pg_cluster, "nodb"), url(pg_cluster, "nodb", in_query=True)):
        proc = cli(work, "--store", store, "prog.py", tool="openprogram-lint")
        assert proc.returncode == 2, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert line.startswith("openprogram-lint: store postgresql://postgres") and (
            'database "nodb" does not exist' in line
        ), line


def test_show_in_an_empty_database_does_not_show_the_password(
    work: Path, pg_cluster: Cluster, pg_dsn: str
) -> None:
    store = url(pg_cluster, pg_dsn.split("?")[0].rsplit("/", 1)[1])
    line = one_error_line(cli(work, "show", "0123456789abcdef", "--store", store))
    assert "there is no store at postgresql://postgres:***@" in line, line


def test_the_language_server_log_does_not_show_the_password(
    pg_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """The editor's runs view and OP209 read the store named by the ``store`` setting; an
    unreadable one is logged (``--log-level INFO``) without its password."""
    from openprogram_lsp.run_index import runs_for_file

    for store in (url(pg_cluster, "nodb"), url(pg_cluster, "nodb", in_query=True)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="openprogram_lsp"):
            assert runs_for_file(Path(store), "prog.py") == []
        [record] = [r for r in caplog.records if r.name.startswith("openprogram_lsp")]
        message = record.getMessage()
        assert SECRET not in message and 'database "nodb" does not exist' in message, message


def test_an_engine_error_names_its_store_as_a_fact(pg_cluster: Cluster, tmp_path: Path) -> None:
    """Which store an error names is an attribute of the error (``StoreError.store``: its
    location without the password), not a prefix of its text: the linter's reader names an
    unreadable store once, in the engine's words."""
    from openprogram.errors import StoreError
    from openprogram.store.postgres import redacted_location
    from openprogram.store.runs import read_run_store
    from openprogram_analyzers.store_adapter import StoreUnreadable, recorded_steps

    for store in (url(pg_cluster, "nodb"), url(pg_cluster, "nodb", in_query=True)):
        shown = redacted_location(store)
        assert SECRET not in shown and "***" in shown and shown.startswith("postgresql://")
        assert redacted_location(Path(store)) == redacted_location(str(Path(store)))
        assert SECRET not in redacted_location(Path(store))  # a URL through a path setting
        with pytest.raises(StoreError) as caught:
            read_run_store(store)
        assert caught.value.store == shown
        with pytest.raises(StoreUnreadable) as unreadable:
            recorded_steps(store)
        assert str(unreadable.value) == str(caught.value) and str(caught.value).count(shown) == 1
    a_file = tmp_path / "not-a-directory"
    a_file.write_text("x", encoding="utf-8")
    assert redacted_location(a_file) == str(a_file)
    with pytest.raises(StoreUnreadable) as unreadable:
        recorded_steps(str(a_file))
    assert str(unreadable.value).startswith(f"store path {a_file} is a file")  # named once


CONNINFO = f"host=/var/run/postgresql user=app password={SECRET} dbname=app"
CONNINFO_COMMANDS = [
    ("runs",),
    ("run", "prog.py:main"),
    ("submit", "prog.py:main"),
    ("worker", "--exit-when-idle"),
    ("resume", "0123456789abcdef", "--json"),
    ("sessions",),
]


@pytest.mark.parametrize("command", CONNINFO_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("via", ["--store", "OPENPROGRAM_STORE"])
def test_a_libpq_keyword_string_is_refused_without_its_password(
    work: Path, command: tuple[str, ...], via: str
) -> None:
    """``--store "host=... password=..."`` (the libpq form, not a URL) is one line that
    says to write a URL, never shows the password, and creates no directory named after
    it (as a path it used to: ``runs`` echoed it back, password included)."""
    if via == "--store":
        proc = cli(work, *command, "--store", CONNINFO)
    else:
        env = dict(os.environ, OPENPROGRAM_STORE=CONNINFO)
        proc = subprocess.run(
            [str(BIN / "openprogram"), *command], cwd=work, capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    line = one_error_line(proc)
    assert "libpq keyword string" in line and "postgresql://USER@HOST" in line, line
    assert "password=***" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["prog.py"]  # nothing created


@pytest.mark.parametrize(
    "command",
    [("runs",), ("run", "prog.py:main"), ("sessions",), ("resume", "--all-interrupted")],
    ids=" ".join,
)
def test_with_json_a_refused_store_is_one_json_object(work: Path, command: tuple[str, ...]) -> None:
    """``--json`` prints one object on stdout also for this error (these commands printed
    nothing there), the password hidden in it as on stderr."""
    proc = cli(work, *command, "--store", CONNINFO, "--json")
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stdout.strip().splitlines()
    out = json.loads(line)
    assert out["status"] == "error" and "libpq keyword string" in out["error"], out
    assert "password=***" in out["error"] and SECRET not in proc.stdout + proc.stderr


def test_lint_with_a_libpq_keyword_string_store(work: Path) -> None:
    proc = cli(work, "--store", CONNINFO, "prog.py", tool="openprogram-lint")
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert "libpq keyword string" in line and "password=***" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["prog.py"]


OTHER_SCHEME_COMMANDS = [
    ("openprogram", "submit", "prog.py:main"),
    ("openprogram", "worker", "--exit-when-idle"),
    ("openprogram", "runs"),
    ("openprogram", "show", "0123456789abcdef"),
    ("openprogram", "resume", "0123456789abcdef"),
    ("openprogram", "run", "prog.py:main"),
    ("openprogram", "sessions"),
    ("openprogram-lint", "prog.py"),
]
OTHER_SCHEMES = [  # (store, its scheme): each a URL no store takes
    (f"pgsql://app:{SECRET}@db.internal/app", "pgsql"),
    (f"mysql://app:{SECRET}@db.internal/app", "mysql"),
    (f"postgresql+psycopg://app:{SECRET}@db.internal/app", "postgresql+psycopg"),
    (f"pgsql:/app:{SECRET}@db.internal/app", "pgsql"),  # as a pathlib.Path leaves it
]


@pytest.mark.parametrize("command", OTHER_SCHEME_COMMANDS, ids=lambda c: " ".join(c[:2]))
@pytest.mark.parametrize("via", ["--store", "OPENPROGRAM_STORE"])
def test_a_url_of_another_scheme_is_refused_without_its_password(
    work: Path, command: tuple[str, ...], via: str
) -> None:
    """``--store pgsql://user:PASSWORD@host/db`` (any scheme but ``postgresql://`` /
    ``postgres://``) was taken for a directory: ``submit`` recorded the run into
    ``./pgsql:/user:PASSWORD@host/db/openprogram.db`` (exit 0) and ``runs`` / ``worker``
    showed that path, password included. Now every command exits 2 with one line naming
    the scheme and what is supported, the password hidden, and creates nothing."""
    tool, *args = command
    if via == "OPENPROGRAM_STORE" and tool == "openprogram-lint":
        pytest.skip("the linter reads a store only from --store")
    index = OTHER_SCHEME_COMMANDS.index(command) % len(OTHER_SCHEMES)
    store, scheme = OTHER_SCHEMES[index]
    if via == "--store":
        proc = cli(work, *args, "--store", store, tool=tool)
    else:
        env = dict(os.environ, OPENPROGRAM_STORE=store)
        proc = subprocess.run(
            [str(BIN / tool), *args], cwd=work, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2 and SECRET not in output, (proc.returncode, output)
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"{tool}: "), line
    assert f"unsupported URL scheme '{scheme}://'" in line, line
    assert "postgresql:// (or postgres://) URL or a directory" in line, line
    assert "app:***@db.internal/app" in line, line
    assert sorted(p.name for p in work.iterdir()) == ["prog.py"]  # nothing created


def test_a_sqlalchemy_url_is_refused_with_the_libpq_spelling(work: Path) -> None:
    """SQLAlchemy's ``postgresql+psycopg://`` is refused (one spelling per database: the
    URL is a store's identity) with the URL to write instead, its password hidden."""
    store = f"postgresql+psycopg://app:{SECRET}@db.internal:5433/app?sslmode=require"
    line = one_error_line(cli(work, "runs", "--store", store, "--json"))
    assert line.endswith(
        "(without SQLAlchemy's driver: postgresql://app:***@db.internal:5433/app?sslmode=require)"
    ), line


def test_which_store_values_are_urls_of_another_scheme() -> None:
    """A scheme is two characters or more: ``C:/data`` (a Windows drive) is a path."""
    from openprogram.store.postgres import other_scheme, redact_text, redacted_location
    from openprogram.store.session_store import resolve_root

    assert other_scheme("pgsql://u@h/db") == "pgsql"
    assert other_scheme("pgsql:/u@h/db") == "pgsql"
    assert other_scheme("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2"
    for supported in ("postgresql://u@h/db", "postgres://u@h/db", "postgresql:/u@h/db"):
        assert other_scheme(supported) is None
    for path in ("C:/data", "runs/store", "/abs/path", "./x:y", "data:store"):
        assert other_scheme(path) is None
        assert resolve_root(path) == Path(path)
    assert redacted_location(f"mysql://u:{SECRET}@h/db") == "mysql://u:***@h/db"
    assert redact_text(f"invalid choice: 'pgsql://u:{SECRET}@h/db'") == (
        "invalid choice: 'pgsql://u:***@h/db'"
    )


MISTYPED = [  # an option mistyped before a store: argparse echoes the store back
    ("openprogram", ("runs", "--stroe"), "openprogram: error: unrecognized arguments: --stroe "),
    ("openprogram-lint", ("prog.py", "--stroe"), "openprogram-lint: error: unrecognized arguments: --stroe "),
    ("openprogram-lsp", ("--stroe",), "openprogram-lsp: error: unrecognized arguments: --stroe "),
]  # fmt: skip
SHOWN = {  # each store as a usage error shows it
    f"postgresql://app:{SECRET}@db.internal/app": "postgresql://app:***@db.internal/app",
    f"host=db.internal user=app password={SECRET} dbname=app": (
        "host=db.internal user=app password=*** dbname=app"
    ),
}


@pytest.mark.parametrize("store", list(SHOWN), ids=["url", "libpq keywords"])
@pytest.mark.parametrize(("tool", "args", "start"), MISTYPED, ids=[m[0] for m in MISTYPED])
def test_a_usage_error_of_every_program_hides_the_password(
    work: Path, store: str, tool: str, args: tuple[str, ...], start: str
) -> None:
    """The three programs share one parser that hides passwords in usage errors; the
    linter's own copy hid a URL's but showed a libpq keyword string's ``password=``.
    Each keeps its own report and exit code 2: ``openprogram`` one line ending in its
    ``--help`` hint, the linter and the server argparse's usage and then the line."""
    proc = cli(work, *args, store, tool=tool)
    assert proc.returncode == 2, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(start + SHOWN[store]), last
    if tool == "openprogram":
        assert proc.stderr.strip() == last and last.endswith(" (see openprogram --help)"), last
    else:
        assert proc.stderr.startswith(f"usage: {tool} "), proc.stderr


def test_lint_of_a_libpq_keyword_string_given_as_a_path(work: Path) -> None:
    """The store written where the linter takes files: its error line hides the password
    as the parser's does (the linter hid only a URL's)."""
    proc = cli(work, f"host=db.internal password={SECRET} dbname=app", tool="openprogram-lint")
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr, proc.stderr
    assert proc.stderr == (
        "openprogram-lint: host=db.internal password=*** dbname=app: no such file or directory\n"
    )


def test_a_connect_timeout_in_the_url_is_the_one_used(work: Path) -> None:
    """A server that accepts connections and never answers: the URL's own
    ``connect_timeout=1`` is what the command waits, not the store's 10 s default (psycopg
    lets a keyword argument override the URL, so the default must not be passed over it).
    The subprocess's timeout, well under the default, is the only time bound."""
    import socket

    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    try:
        port = hung.getsockname()[1]
        store = f"postgresql://app:{SECRET}@127.0.0.1:{port}/db?connect_timeout=1"
        proc = subprocess.run(
            [str(BIN / "openprogram"), "runs", "--store", store], cwd=work, capture_output=True,
            text=True, timeout=8, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        line = one_error_line(proc)
        assert "timeout" in line and "***" in line, line
    finally:
        hung.close()
