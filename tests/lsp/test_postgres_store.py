"""The server's lenses, commands, Runs view and hints against a PostgreSQL store (issue 15:
"the server's lenses/runs view work against" one). Real client over stdio, a real
throwaway PostgreSQL (``pg_dsn``), runs made by the real CLI and worker in subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import (
    SERVER_CMD,
    as_dict,
    diags_for,
    edit_doc,
    open_doc,
    request,
    runs_seen,
    start,
    stop,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

from openprogram_lsp.run_index import READ_BOUND_S

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")

PROGRAM = '''\
import time as t
from pathlib import Path

from openprogram import step
from openprogram.durable import current_run_id, pause_run


def prepare(n: int, store: str) -> int:
    """Ask for a pause of this very run before its next step."""
    pause_run(current_run_id(), store=store)
    return n + 1


def finish(n: int, log: str) -> int:
    """Record each execution in the log file (what a double resume must not repeat)."""
    with open(log, "a") as f:
        f.write("finish\\n")
    return n * 10


def wait_for_gate(gate: str) -> str:
    while not Path(gate).exists():
        t.sleep(0.05)
    return "open"


def pipeline(n: int, log: str, store: str) -> int:
    x = step("prepare", prepare, n, store)
    return step("finish", finish, x, log)


def gated(gate: str) -> str:
    return step("wait", wait_for_gate, gate)


pipeline.__agent_options__ = {"resumable": True}
gated.__agent_options__ = {"resumable": True}
PROGRAM_ENTRIES = ["pipeline", "gated"]
'''


def cli(folder: Path, *args: str, store: str) -> Any:
    proc = subprocess.run(
        [OPENPROGRAM, *args, "--store", store, "--json"],
        cwd=folder, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def execute(client: LanguageClient, command: str, *args: Any) -> dict[str, Any]:
    got = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command, arguments=list(args))
    )
    return dict(as_dict(got))


async def lenses(client: LanguageClient, uri: str) -> list[types.Command]:
    got = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command for lens in got or [] if lens.command is not None]


async def hints(client: LanguageClient, uri: str) -> dict[int, str]:
    res = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(200, 0)),
        )
    )
    return {h.position.line: str(h.label) for h in res or []}


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def hostless(dsn: str) -> str:
    """The test database as a local-socket URL with nothing between ``//`` and the path
    (``postgresql:///DB?host=...``), as a user writes one for a server on this machine."""
    _, _, rest = dsn.partition("@/")
    return f"postgresql:///{rest}&user=postgres"


def program_in(parent: Path, name: str, text: str = PROGRAM) -> Path:
    folder = parent / name
    folder.mkdir()
    (folder / "prog.py").write_text(text)
    return folder


def resume_lenses(cmds: list[types.Command]) -> list[tuple[str, list[Any]]]:
    return [(c.title, list(c.arguments or [])) for c in cmds if c.command == "openprogram.resume"]


@pytest.mark.parametrize("given", ["env", "setting"])
async def test_run_resume_lenses_views_and_hints_on_postgresql(
    tmp_path: Path, pg_dsn: str, given: str
) -> None:
    """``OPENPROGRAM_STORE`` in the server's environment, or the ``store`` setting, naming
    a PostgreSQL database by a local-socket URL: Run records the run there, Resume continues
    it once, and the lenses, hints and Runs view follow it."""
    folder = program_in(tmp_path, "ws")
    url = hostless(pg_dsn)
    if given == "env":
        client = await start([folder], env={"OPENPROGRAM_STORE": url})
    else:
        client = await start([folder], options={"store": url})
    try:
        uri, log = (folder / "prog.py").as_uri(), folder / "finish.log"
        open_doc(client, uri, PROGRAM)
        paused = await execute(
            client, "openprogram.run", uri, "pipeline", {"n": 1, "log": str(log), "store": url}
        )
        assert paused["status"] == "paused" and paused["paused_step"] == "finish", paused
        run_id = paused["run_id"]
        listed = cli(folder, "runs", store=pg_dsn)  # recorded in PostgreSQL
        assert [(r["run_id"], r["status"]) for r in listed] == [(run_id, "paused")]
        assert not (folder / ".openprogram").exists()

        async def resume_lens() -> Any:
            return resume_lenses(await lenses(client, uri))

        lens = await resume_lens()
        assert lens == [('⟳ Resume (step "finish" #0)', [run_id])]
        prepare, finish = line_of(PROGRAM, 'step("prepare"'), line_of(PROGRAM, 'step("finish"')
        got = await hints(client, uri)
        assert got[finish] == "‖ paused here" and got[prepare].endswith(" → 2")
        [shown] = (await request(client, "openprogram/runs", {}))["folders"]
        assert shown["store"] == url
        assert [(r["id"], r["status"], r["resumable"]) for r in shown["runs"]] == [
            (run_id, "paused", True)
        ]

        seen = runs_seen(client)
        before = seen.runs_changed
        # a double click on the lens: two resumes at once, one executes the run
        results = await asyncio.gather(
            execute(client, "openprogram.resume", *lens[0][1]),
            execute(client, "openprogram.resume", *lens[0][1]),
        )
        assert sorted(r["exit_code"] for r in results) == [0, 2], results
        assert [r["result"] for r in results if r["exit_code"] == 0] == [20]
        assert log.read_text() == "finish\n"  # the step ran once
        await wait_for(lambda: seen.runs_changed > before, "openprogram/runsChanged")
        got = await hints(client, uri)
        assert got[finish].endswith(" → 20") and got[prepare].endswith(" → 2")
        assert await resume_lens() == []
        steps = await request(client, "openprogram/runSteps", {"runId": run_id})
        assert steps["run"]["status"] == "completed" and steps["run"]["result"] == "20"
        assert [(s["label"], s["state"], s["result"]) for s in steps["steps"]] == [
            ("prepare #0", "completed", "2"),
            ("finish #0", "completed", "20"),
        ]
        graph = await request(client, "openprogram/runGraph", {"runId": run_id})
        assert graph["run"]["status"] == "completed"
        assert sorted(n["step"] for n in graph["nodes"] if n["step"]) == ["finish #0", "prepare #0"]
    finally:
        await stop(client)


async def test_a_run_executing_in_a_worker_is_live_in_the_views(
    tmp_path: Path, pg_dsn: str
) -> None:
    folder = program_in(tmp_path, "ws")
    gate = folder / "gate"
    client = await start([folder], options={"store": pg_dsn})
    worker: subprocess.Popen[str] | None = None
    try:
        uri = (folder / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        args = json.dumps({"gate": str(gate)})
        run_id = cli(
            folder, "submit", "prog.py:gated", "--args", args, "--queue", "ed", store=pg_dsn
        )["run_id"]
        worker = subprocess.Popen(
            [OPENPROGRAM, "worker", "--store", pg_dsn, "--queue", "ed", "--poll", "0.05", "--exit-when-idle"],
            cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

        async def run_steps() -> dict[str, Any]:
            return dict(await request(client, "openprogram/runSteps", {"runId": run_id}))

        steps: dict[str, Any] = {}
        for _ in range(400):  # until the worker has claimed the run and dispatched its step
            steps = await run_steps()
            if steps["run"]["status"] == "running" and steps["steps"]:
                break
            await asyncio.sleep(0.05)
        assert [(s["label"], s["state"]) for s in steps["steps"]] == [("wait #0", "running")]
        [shown] = (await request(client, "openprogram/runs", {}))["folders"]
        assert [(r["id"], r["status"], r["resumable"]) for r in shown["runs"]] == [
            (run_id, "running", False)
        ]
        wait_line = line_of(PROGRAM, 'step("wait"')
        assert (await hints(client, uri))[wait_line] == "… running"

        seen = runs_seen(client)
        before = seen.runs_changed
        gate.touch()
        assert worker.wait(timeout=60) == 0, worker.communicate()
        await wait_for(lambda: seen.runs_changed > before, "openprogram/runsChanged")
        steps = await run_steps()
        assert steps["run"]["status"] == "completed"
        assert [(s["label"], s["state"], s["result"]) for s in steps["steps"]] == [
            ("wait #0", "completed", '"open"')
        ]
        assert (await hints(client, uri))[wait_line].endswith(' → "open"')
    finally:
        if worker is not None and worker.poll() is None:
            worker.kill()
            worker.wait()
        await stop(client)


SECRET = "s3cret-pw"
OP205_PROGRAM = PROGRAM.replace(
    "def gated(gate: str) -> str:\n", "def gated(gate: str) -> str:\n    t.time()\n"
)


def role_with_password(cluster: Any, password: str) -> str:
    """A role of the throwaway cluster that must give ``password`` (scram-sha-256; the
    cluster trusts every other role); returns its name."""
    import psycopg

    role = "pw_" + uuid.uuid4().hex[:8]
    hba = cluster.data / "pg_hba.conf"
    hba.write_text(f"local all {role} scram-sha-256\n" + hba.read_text())
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        conn.execute("SELECT pg_reload_conf()")
    return role


@pytest.mark.parametrize(
    "kind",
    ["refused", "wrong password", "unknown role", "malformed", "password not encoded", "hung"],
)
async def test_a_bad_postgresql_store_is_one_message_and_diagnostics_go_on(
    tmp_path: Path, pg_cluster: Any, kind: str
) -> None:
    """An unreachable, refusing, malformed or hung store, a wrong password: the document keeps its
    diagnostics, the lenses and views answer (without runs), one message says why, and the
    password shows nowhere."""
    hung = socket.socket()  # accepts connections, never answers: a hung server
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    role = role_with_password(pg_cluster, "the-right-one") if kind == "wrong password" else ""
    local = f"host={pg_cluster.base}&port=5432"  # the throwaway cluster's socket
    url = {
        "refused": f"postgresql://app:{SECRET}@127.0.0.1:1/openprogram",
        "wrong password": f"postgresql://{role}:{SECRET}@/postgres?{local}",
        "unknown role": f"postgresql://nobody:{SECRET}@/postgres?{local}",
        "malformed": f"postgresql://app:{SECRET}@[::1/openprogram",
        "password not encoded": f"postgresql://app:{SECRET}%zz@127.0.0.1:1/openprogram",
        "hung": f"postgresql://app:{SECRET}@127.0.0.1:{hung.getsockname()[1]}/openprogram",
    }[kind]
    folder = program_in(tmp_path, "ws", OP205_PROGRAM)
    client = await start([folder], options={"store": url})
    try:
        uri = (folder / "prog.py").as_uri()
        open_doc(client, uri, OP205_PROGRAM)
        assert [d.code for d in await diags_for(client, uri, 1)] == ["OP205"]
        titles = [c.title for c in await lenses(client, uri)]
        assert titles == ["▶ Run", "▶ Run"]
        assert await hints(client, uri) == {}

        def store_messages() -> list[str]:
            return [m.message for m in client.messages if "run store" in m.message]

        [message] = await wait_for(store_messages, "the store's message", timeout=40.0)
        assert message.startswith("OpenProgram cannot read the run store: store postgresql://")
        reason = {
            "refused": "Connection refused",
            "wrong password": "password authentication failed",
            "unknown role": 'role "nobody" does not exist',
            "malformed": "IPv6 host address",
            "password not encoded": "invalid percent-encoded token",
            "hung": "connection timeout expired",
        }[kind]
        assert reason in message, message
        [shown] = (await request(client, "openprogram/runs", {}))["folders"]
        assert shown["runs"] == [] and shown["error"] in message
        assert (await request(client, "openprogram/runSteps", {"runId": "0" * 16}))["run"] is None
        edit_doc(client, uri, OP205_PROGRAM + "\n")
        assert [d.code for d in await diags_for(client, uri, 2)] == ["OP205"]
        assert await lenses(client, uri) and store_messages() == [message]
        said = [m.message for m in [*client.messages, *client.log_messages]]
        assert not [m for m in said if SECRET in m], said
        assert SECRET not in json.dumps(shown)
    finally:
        hung.close()
        await stop(client)


async def test_two_folders_each_with_its_own_store(tmp_path: Path, pg_dsn: str) -> None:
    """alpha keeps the default SQLite store, beta's resource-scoped ``store`` setting names
    PostgreSQL: each folder's Run, Resume, lenses and Runs view use its own store."""
    alpha, beta = program_in(tmp_path, "alpha"), program_in(tmp_path, "beta")
    url = hostless(pg_dsn)
    client = await start([alpha, beta], scoped={beta: {"store": url}})
    try:

        async def stores() -> dict[str, Any]:
            got = await request(client, "openprogram/runs", {})
            return {f["name"]: f for f in got["folders"]}

        for _ in range(200):  # the folders' settings are pulled after `initialized`
            if (await stores())["beta"]["store"] == url:
                break
            await asyncio.sleep(0.05)
        sqlite_store = str(alpha / ".openprogram")
        ids = {}
        for folder, store, n in ((alpha, sqlite_store, 1), (beta, url, 5)):
            uri = (folder / "prog.py").as_uri()
            open_doc(client, uri, PROGRAM)
            args = {"n": n, "log": str(folder / "finish.log"), "store": store}
            paused = await execute(client, "openprogram.run", uri, "pipeline", args)
            assert paused["status"] == "paused", paused
            ids[folder.name] = paused["run_id"]
        assert [r["run_id"] for r in cli(beta, "runs", store=pg_dsn)] == [ids["beta"]]
        assert [r["run_id"] for r in cli(alpha, "runs", store=sqlite_store)] == [ids["alpha"]]
        for folder in (alpha, beta):
            [(_, args)] = resume_lenses(await lenses(client, (folder / "prog.py").as_uri()))
            assert args == [ids[folder.name]], folder.name
        got = await stores()
        assert got["alpha"]["store"] == sqlite_store and got["beta"]["store"] == url
        assert {name: [r["id"] for r in f["runs"]] for name, f in got.items()} == {
            "alpha": [ids["alpha"]],
            "beta": [ids["beta"]],
        }
        done = await execute(client, "openprogram.resume", ids["beta"])
        assert done["status"] == "completed" and done["result"] == 60
        assert [r["status"] for r in cli(beta, "runs", store=pg_dsn)] == ["completed"]
        assert [r["status"] for r in cli(alpha, "runs", store=sqlite_store)] == ["paused"]
    finally:
        await stop(client)


async def test_op209_and_cancel_on_runs_recorded_in_postgresql(tmp_path: Path, pg_dsn: str) -> None:
    folder = program_in(tmp_path, "ws")
    (folder / "pyproject.toml").write_text(
        '[tool.openprogram.execution]\ncode_change_policy = "use_latest"\n'
    )
    url = hostless(pg_dsn)
    client = await start([folder], options={"store": url})
    try:
        uri = (folder / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        assert await diags_for(client, uri, 1) == []
        args = {"n": 1, "log": str(folder / "finish.log"), "store": url}
        paused = await execute(client, "openprogram.run", uri, "pipeline", args)
        assert paused["status"] == "paused", paused
        edited = PROGRAM.replace('step("prepare", prepare', 'step("prep", prepare')
        [diag] = await diags_for(client, uri, edit_doc(client, uri, edited))
        assert diag.code == "OP209" and "'prepare'" in diag.message
        assert diag.message.endswith("this edit breaks 1 unfinished run")
        cancelled = await request(client, "openprogram/cancelRun", {"runId": paused["run_id"]})
        assert cancelled == {"status": "cancelled", "cancel": "cancelled"}
        assert [r["status"] for r in cli(folder, "runs", store=pg_dsn)] == ["cancelled"]
    finally:
        await stop(client)


def _cmdline_of(needle: str) -> list[bytes]:
    """Command lines (``/proc/PID/cmdline``, as ``ps`` shows them to every local user) of the
    processes whose command line contains ``needle``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            raw = (proc / "cmdline").read_bytes()
        except OSError:  # not a process, or gone
            continue
        if needle.encode() in raw:
            found.append(raw)
    return found


async def test_run_lens_keeps_the_store_password_off_the_command_line(
    tmp_path: Path, pg_cluster: Any, pg_dsn: str
) -> None:
    """Run with a store URL that has a password: while the run's subprocess executes, its
    command line does not hold the password, and the run is recorded in that database."""
    role = role_with_password(pg_cluster, SECRET)
    db = pg_dsn.partition("@/")[2].partition("?")[0]
    import psycopg

    with psycopg.connect(pg_cluster.dsn(db), autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {db} OWNER TO {role}")
        conn.execute(f"ALTER SCHEMA public OWNER TO {role}")
    url = f"postgresql://{role}:{SECRET}@/{db}?host={pg_cluster.base}&port=5432"
    folder = program_in(tmp_path, "ws")
    gate = folder / "gate"
    client = await start([folder], options={"store": url})
    try:
        uri = (folder / "prog.py").as_uri()
        open_doc(client, uri, PROGRAM)
        running = asyncio.ensure_future(
            execute(client, "openprogram.run", uri, "gated", {"gate": str(gate)})
        )
        target = f"{folder / 'prog.py'}:gated"
        lines = await wait_for(lambda: _cmdline_of(target), "the run's subprocess", timeout=60.0)
        assert not [c for c in lines if SECRET.encode() in c], lines
        gate.touch()
        done = await running
        assert done["status"] == "completed" and done["result"] == "open", done
        listed = cli(folder, "runs", store=pg_dsn)  # recorded in the URL's database
        assert [(r["run_id"], r["status"]) for r in listed] == [(done["run_id"], "completed")]
        said = [m.message for m in [*client.messages, *client.log_messages]]
        assert not [m for m in said if SECRET in m], said
    finally:
        if not gate.exists():
            gate.touch()
        await stop(client)


def backends(cluster: Any, dsn: str) -> set[int]:
    """The server processes of the connections open to ``dsn``'s database now (each
    connection is one; a new connection is a new one)."""
    import psycopg

    db = dsn.partition("@/")[2].partition("?")[0]
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:  # another database
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (db,),
        ).fetchall()
    return {pid for (pid,) in rows}


async def refresh_all(client: LanguageClient, uri: str) -> list[str]:
    """What an editor asks after a change: the Runs view, the hints, the lenses; returns
    the ids the Runs view lists."""
    [shown] = (await request(client, "openprogram/runs", {}))["folders"]
    assert "error" not in shown, shown
    await hints(client, uri)
    await lenses(client, uri)
    return [r["id"] for r in shown["runs"]]


async def serving_a_queued_run(
    tmp_path: Path, pg_dsn: str, text: str = PROGRAM, env: dict[str, str] | None = None
) -> tuple[LanguageClient, str, str]:
    """A server (``env`` added to its environment) on a folder whose PostgreSQL store holds
    one queued run, with the Program open (``text`` in the editor), once its views list
    that run: (client, the Program's uri, the run id). The caller stops the client."""
    folder = program_in(tmp_path, "ws")
    args = json.dumps({"gate": str(folder / "gate")})
    run_id = cli(folder, "submit", "prog.py:gated", "--args", args, "--queue", "q", store=pg_dsn)[
        "run_id"
    ]
    client = await start([folder], env=env, options={"store": pg_dsn})
    try:
        uri = (folder / "prog.py").as_uri()
        open_doc(client, uri, text)
        for _ in range(400):  # until the server's probe found the store readable
            if await refresh_all(client, uri) == [run_id]:
                break
            await asyncio.sleep(0.05)
    except BaseException:
        await stop(client)
        raise
    return client, uri, run_id


async def test_the_server_reads_a_postgresql_store_through_one_set_of_connections(
    tmp_path: Path, pg_cluster: Any, pg_dsn: str
) -> None:
    """Refresh after refresh (and the Runs view's watcher meanwhile) read the store through
    the same connections (at most the reader's two): none is opened per read. Once the
    ``store`` setting names another store, they are closed."""
    client, uri, run_id = await serving_a_queued_run(tmp_path, pg_dsn)
    try:
        seen: set[int] = set()
        for _ in range(10):
            assert await refresh_all(client, uri) == [run_id]
            now = backends(pg_cluster, pg_dsn)
            assert now, "the server's reader keeps its connection between reads"
            seen |= now
            await asyncio.sleep(0.2)  # the watcher reads meanwhile (every 0.5 s)
        assert len(seen) <= 2, seen

        folder = tmp_path / "ws"  # serving_a_queued_run's
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"openprogram": {"store": str(folder / ".openprogram")}}
            )
        )
        await wait_for(lambda: not backends(pg_cluster, pg_dsn), "the reader closed", 30.0)
        [shown] = (await request(client, "openprogram/runs", {}))["folders"]
        assert shown["store"] == str(folder / ".openprogram") and shown["runs"] == []
    finally:
        await stop(client)


async def test_the_views_read_a_postgresql_store_again_after_it_restarted(
    tmp_path: Path, pg_cluster: Any, pg_dsn: str
) -> None:
    """PostgreSQL restarted while the server keeps its reader (its connections are gone):
    the Runs view, hints and lenses list the runs again, through one new set of
    connections, without the server being restarted."""
    client, uri, run_id = await serving_a_queued_run(tmp_path, pg_dsn)
    try:
        before = backends(pg_cluster, pg_dsn)
        assert before

        pg_cluster.restart()

        async def listed() -> bool:
            [shown] = (await request(client, "openprogram/runs", {}))["folders"]
            return "error" not in shown and [r["id"] for r in shown["runs"]] == [run_id]

        for _ in range(1200):  # at once, or after the store's next probe (30 s)
            if await listed():
                break
            await asyncio.sleep(0.05)
        seen: set[int] = set()
        for _ in range(5):
            assert await refresh_all(client, uri) == [run_id]
            seen |= backends(pg_cluster, pg_dsn)
            await asyncio.sleep(0.2)
        assert seen and not seen & before and len(seen) <= 2, (seen, before)
    finally:
        await stop(client)


REQUEST_S = 60.0  # a request not answered by then: the server hangs
RECHECK_S = 2  # OPENPROGRAM_LSP_RECHECK_S: the store probed again 2 s after a failure


def test_a_bad_recheck_setting_stops_the_server_at_start_with_one_line() -> None:
    for bad in ["abc", "0"]:  # every bad value: env_seconds's own tests
        proc = subprocess.run(
            [*SERVER_CMD],
            input="",
            capture_output=True,
            text=True,
            env={**os.environ, "OPENPROGRAM_LSP_RECHECK_S": bad},
            timeout=120,
        )
        assert (proc.returncode, proc.stderr.splitlines()) == (
            2,
            [
                f"openprogram-lsp: error: OPENPROGRAM_LSP_RECHECK_S={bad!r} is not a time "
                "between probes of a run store: use a finite number of seconds > 0 (default 30)"
            ],
        ), proc.stderr


async def test_a_frozen_postgresql_server_does_not_freeze_the_language_server(
    tmp_path: Path, pg_cluster: Any, pg_dsn: str
) -> None:
    """The database stops answering while the server's reader is connected to it (its
    processes stopped: a partition with the connections still open). Diagnostics go on,
    the Runs view answers with the outage said, and once the database answers again the
    view lists the runs again, without the server being restarted."""
    # the editor's text has an OP205 finding (the saved file runs)
    client, uri, run_id = await serving_a_queued_run(
        tmp_path, pg_dsn, OP205_PROGRAM, env={"OPENPROGRAM_LSP_RECHECK_S": str(RECHECK_S)}
    )
    frozen = False
    try:
        assert [d.code for d in await diags_for(client, uri, 1)] == ["OP205"]

        pg_cluster.freeze()
        frozen = True
        version = edit_doc(client, uri, OP205_PROGRAM + "\n")
        got = await asyncio.wait_for(diags_for(client, uri, version), REQUEST_S)
        assert [d.code for d in got] == ["OP205"]

        async def first_folder() -> dict[str, Any]:
            got = await asyncio.wait_for(request(client, "openprogram/runs", {}), REQUEST_S)
            return dict(got["folders"][0])

        shown = await first_folder()
        for _ in range(600):  # a read that failed first: its probe says why (at most 10 s)
            if "error" in shown:
                break
            assert shown["runs"] == [], shown
            await asyncio.sleep(0.05)
            shown = await first_folder()
        assert shown["runs"] == [] and shown["error"], shown
        said = [m.message for m in [*client.messages, *client.log_messages]]
        assert [m for m in said if shown["error"] in m], said  # its reason said
        titles = [c.title for c in await asyncio.wait_for(lenses(client, uri), REQUEST_S)]
        assert titles == ["▶ Run", "▶ Run"]
        assert await asyncio.wait_for(hints(client, uri), REQUEST_S) == {}

        pg_cluster.thaw()
        frozen = False

        async def listed() -> bool:
            shown = await first_folder()
            return "error" not in shown and [r["id"] for r in shown["runs"]] == [run_id]

        for _ in range(2400):  # after the store's next probe (RECHECK_S)
            if await listed():
                break
            await asyncio.sleep(0.05)
        assert await refresh_all(client, uri) == [run_id]
        messages = [m.message for m in client.messages if "run store" in m.message]
        assert len(messages) == 1, messages  # one message for the outage
    finally:
        if frozen:
            pg_cluster.thaw()
        await stop(client)


async def test_cancel_from_the_editor_on_a_frozen_postgresql_server_is_answered(
    tmp_path: Path, pg_cluster: Any, pg_dsn: str
) -> None:
    """Cancel Run while the database does not answer (its processes stopped, the server's
    connections open): the request waited for it without a bound. It is answered within
    the server's read bound, as the Runs view is, with an error naming the store without
    its password, and nothing is written then: once the database answers again, Cancel
    Run cancels the run (the first cancel did not land meanwhile)."""
    dsn = pg_dsn.replace("postgresql://postgres@", f"postgresql://postgres:{SECRET}@")
    client, _, run_id = await serving_a_queued_run(
        tmp_path, dsn, env={"OPENPROGRAM_LSP_RECHECK_S": str(RECHECK_S)}
    )
    frozen = False
    try:
        pg_cluster.freeze()
        frozen = True
        cancel = request(client, "openprogram/cancelRun", {"runId": run_id})
        got = await asyncio.wait_for(cancel, REQUEST_S)
        assert set(got) == {"error"}, got
        error = got["error"]
        assert SECRET not in error and "store postgresql://postgres:***@/" in error, error
        # why: its read did not return within the server's bound, or (its reader's
        # connection taken by a read stuck meanwhile) no connection came
        waited = f"no answer within {READ_BOUND_S:g} s; run {run_id} was not cancelled"
        assert waited in error or "no connection to the database within" in error, error

        pg_cluster.thaw()
        frozen = False
        for _ in range(2400):  # the store is read again after its next probe (RECHECK_S)
            got = await request(client, "openprogram/cancelRun", {"runId": run_id})
            if "error" not in got:
                break
            assert SECRET not in got["error"], got
            await asyncio.sleep(0.05)
        assert got == {"status": "cancelled", "cancel": "cancelled"}, got
    finally:
        if frozen:
            pg_cluster.thaw()
        await stop(client)


async def test_a_fresh_server_answers_its_first_requests_with_the_runs_of_postgresql(
    tmp_path: Path, pg_dsn: str
) -> None:
    """The first request of a fresh server waits for its first probe of the PostgreSQL
    store (at most ``READ_BOUND_S``) and answers with the store's data: never "no such
    run" or "no runs" because the server had not connected yet."""
    folder = program_in(tmp_path, "ws")
    (folder / "gate").touch()
    run_id = cli(
        folder, "run", "prog.py:gated", "--args", json.dumps({"gate": "gate"}), store=pg_dsn
    )["run_id"]
    for first in ("openprogram/runSteps", "openprogram/runGraph", "openprogram/runs"):
        client = await start([folder], options={"store": pg_dsn})
        try:
            got = await request(
                client, first, {"runId": run_id} if first != "openprogram/runs" else {}
            )
            if first == "openprogram/runs":
                [shown] = got["folders"]
                assert "error" not in shown, shown
                assert [r["id"] for r in shown["runs"]] == [run_id] and shown["olderRuns"] == 0
            else:
                assert got is not None and got["run"] is not None, (first, got)
                assert got["run"]["status"] == "completed"
        finally:
            await stop(client)
