"""A ``requires_approval`` tool inside a run with no approver pauses the run as
``awaiting_approval``: listed by ``openprogram runs``, decided with ``openprogram
approve`` / ``deny`` (or the API), never resumed without a decision (issue 11, item 16).
Real subprocesses, on both store backends (an SQLite store; a PostgreSQL database of a
temporary cluster), a loopback server speaking the OpenAI wire format."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_programs import env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from durable_programs import JANITOR
from loopback import OpenAIServer
from loopback import openai_server as openai_server

OPENPROGRAM = str(Path(sys.executable).parent / "openprogram")


def _cli(folder: Path, server: OpenAIServer, *args: str) -> subprocess.CompletedProcess[str]:
    environment = env()
    environment["OPENAI_BASE_URL"] = server.base_url
    return subprocess.run(
        [OPENPROGRAM, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env=environment,
    )


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture()
def paused(tmp_path: Path, openai_server: OpenAIServer, st: str) -> tuple[Path, str]:
    (tmp_path / "janitor.py").write_text(JANITOR, encoding="utf-8")
    (tmp_path / "junk.txt").write_text("junk", encoding="utf-8")
    openai_server.reply_tool_calls([("call_1", "delete_file", {"path": "junk.txt"})])
    proc = _cli(
        tmp_path,
        openai_server,
        *("run", "janitor.py:clean", "--args", '{"target": "junk.txt"}'),
        *("--model", "openai:loop", "--store", st),
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr  # paused
    rid = proc.stdout.split()[1]
    assert "awaiting approval" in proc.stdout or "requires approval" in proc.stdout
    assert f"openprogram approve {rid}" in proc.stdout
    assert (tmp_path / "junk.txt").exists()  # the tool did not run
    return tmp_path, rid


def test_awaiting_run_is_listed_and_never_resumed_without_a_decision(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    folder, rid = paused
    (listed,) = _json(_cli(folder, openai_server, "runs", "--json", "--store", st))
    assert listed["run_id"] == rid and listed["status"] == "paused"
    assert listed["pause_reason"] == "awaiting_approval"
    assert listed["paused_step"] == "delete_file"
    table = _cli(folder, openai_server, "runs", "--status", "awaiting_approval", "--store", st)
    assert rid in table.stdout and "paused (awaiting_approval)" in table.stdout
    shown = _cli(folder, openai_server, "show", rid, "--store", st).stdout.splitlines()[0]
    assert shown.endswith("; run paused (awaiting_approval) at step 'delete_file'"), shown
    auto = _cli(folder, openai_server, "resume", "--all-interrupted", "--store", st)
    assert auto.returncode == 0 and "no interrupted runs" in auto.stdout
    plain = _cli(folder, openai_server, "resume", rid, "--store", st)
    assert plain.returncode == 2 and "awaiting approval of tool 'delete_file'" in plain.stderr
    assert len(openai_server.requests) == 1  # nothing re-ran


def test_approve_resumes_and_the_tool_runs(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    folder, rid = paused
    openai_server.reply_text("Removed junk.txt.")
    proc = _cli(folder, openai_server, "approve", rid, "--store", st, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _json(proc) == {
        "run_id": rid,
        "status": "completed",
        "result": {"report": "Removed junk.txt."},
    }
    assert not (folder / "junk.txt").exists()
    _continued_as_uninterrupted(openai_server, "deleted junk.txt")


def _continued_as_uninterrupted(server: OpenAIServer, tool_text: str) -> None:
    """After the decision the run sent one request: the conversation of the first one
    (its prompt unchanged: no paused run in its history), the model's tool call, and the
    decided call's result; the model's reply that asked for the call was not asked again."""
    first, after = (r.json["messages"] for r in server.requests)
    assert after[: len(first)] == first
    assert [m["role"] for m in after[len(first) :]] == ["assistant", "tool"]
    assert after[-2]["tool_calls"][0]["function"]["name"] == "delete_file"
    assert after[-1]["tool_call_id"] == "call_1" and tool_text in after[-1]["content"]
    assert "paused" not in json.dumps(after)


_SAME_CALL = ("call_1", "delete_file", {"path": "junk.txt"})


def test_an_approval_allows_one_execution(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """The approved call ran, then the step failed (the model's next request failed);
    ``resume`` re-ran the step, the model asked for the same call and the stored approval
    was used again: the side effect happened twice. Now the approval is used up once
    its call ran: the same request pauses the run for a new decision, and a denial
    then tells the model."""
    folder, rid = paused
    openai_server.reply_error(400, "upstream broke")  # the request after the call fails
    proc = _cli(folder, openai_server, "approve", rid, "--store", st, "--json")
    assert proc.returncode == 1 and _json(proc)["status"] == "failed", proc.stdout
    assert not (folder / "junk.txt").exists()  # ran once
    (folder / "junk.txt").write_text("junk again", encoding="utf-8")  # would go a 2nd time

    openai_server.reply_tool_calls([_SAME_CALL])
    again = _cli(folder, openai_server, "resume", rid, "--store", st, "--json")
    assert again.returncode == 3, again.stdout + again.stderr
    paused_again = _json(again)
    assert (paused_again["status"], paused_again["paused_step"]) == ("paused", "delete_file")
    assert "an identical call approved before already ran in this run" in paused_again["error"]
    assert "'deleted junk.txt'" in paused_again["error"]
    assert (folder / "junk.txt").exists()  # not run again without a decision
    (listed,) = _json(_cli(folder, openai_server, "runs", "--json", "--store", st))
    assert listed["pause_reason"] == "awaiting_approval"

    openai_server.reply_text("It was already removed.")
    denied = _cli(folder, openai_server, "deny", rid, "--store", st, "--json")
    assert _json(denied)["result"] == {"report": "It was already removed."}, denied.stdout
    assert (folder / "junk.txt").exists()
    assert "denied by the user" in openai_server.requests[-1].json["messages"][-1]["content"]


def test_the_model_asking_again_after_its_approved_call_ran_is_asked_about(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """In the continued conversation the model asks for the same call again: it does
    not run on the approval the first one used."""
    folder, rid = paused
    openai_server.reply_tool_calls([("call_2", "delete_file", {"path": "junk.txt"})])
    proc = _cli(folder, openai_server, "approve", rid, "--store", st, "--json")
    assert proc.returncode == 3 and _json(proc)["paused_step"] == "delete_file", proc.stdout
    assert not (folder / "junk.txt").exists()
    (folder / "junk.txt").write_text("junk again", encoding="utf-8")
    openai_server.reply_text("Removed it twice.")
    done = _cli(folder, openai_server, "approve", rid, "--store", st, "--json")
    assert _json(done)["result"] == {"report": "Removed it twice."}, done.stdout
    assert not (folder / "junk.txt").exists()  # the second approval: the second run
    # each decided call continued its conversation: three requests in all
    assert len(openai_server.requests) == 3
    last = openai_server.requests[-1].json["messages"]
    assert [m.get("tool_call_id") for m in last if m["role"] == "tool"] == ["call_1", "call_2"]


def test_approve_runs_the_call_the_model_asked_for_without_asking_again(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """``approve`` re-ran the step with a fresh model request: a model whose arguments
    vary asked for another call, the run paused again and the approved call never ran
    (and the prompt carried the paused run as history). Now the step's tool loop
    continues where it paused: the approved call runs with its arguments."""
    folder, rid = paused
    openai_server.reply_text("Done.")
    proc = _cli(folder, openai_server, "approve", rid, "--store", st, "--json")
    assert _json(proc)["result"] == {"report": "Done."}, proc.stdout
    assert not (folder / "junk.txt").exists()
    _continued_as_uninterrupted(openai_server, "deleted junk.txt")


def test_deny_resumes_and_the_model_is_told(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    folder, rid = paused
    openai_server.reply_text("Left junk.txt in place.")
    proc = _cli(folder, openai_server, "deny", rid, "--store", st, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _json(proc)["result"] == {"report": "Left junk.txt in place."}
    assert (folder / "junk.txt").exists()
    _continued_as_uninterrupted(openai_server, "denied by the user")
    again = _cli(folder, openai_server, "deny", rid, "--store", st)
    assert again.returncode == 2 and "not awaiting approval" in again.stderr


def test_api_approve_without_resume_then_resume(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    from openprogram.durable import approve_run

    folder, rid = paused
    assert approve_run(rid, store=st, resume=False) is None
    # decided: it waits for a resume now, and says so (it was listed as awaiting approval)
    waiting = _json(_cli(folder, openai_server, "runs", "--status", "awaiting_approval",
                         "--store", st, "--json"))  # fmt: skip
    assert waiting == []
    [run] = _json(_cli(folder, openai_server, "runs", "--store", st, "--json"))
    assert (run["status"], run["pause_reason"]) == ("paused", "requested")
    assert run["error"] == (
        f"the call of tool 'delete_file' was approved; continue the run with: "
        f"openprogram resume {rid}"
    )
    openai_server.reply_text("Removed.")
    proc = _cli(folder, openai_server, "resume", rid, "--store", st, "--json")
    assert proc.returncode == 0 and _json(proc)["result"] == {"report": "Removed."}
    assert not (folder / "junk.txt").exists()


def test_the_step_awaiting_approval_is_shown_paused_not_failed(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """``show`` of the paused run listed its step as ``[error] ApprovalPending: ...``, as
    if it had failed: it is paused, as its run is."""
    folder, rid = paused
    stored = _json(_cli(folder, openai_server, "show", rid, "--format", "json", "--store", st))
    by_name = {n["name"]: n for n in stored["nodes"] if n["kind"] == "code"}
    assert by_name["tidy"]["status"] == "paused"
    assert by_name["tidy"]["output"] == {
        "paused": 'tool \'delete_file\' requires approval for {"path": "junk.txt"}; approve '
        f"it with `openprogram approve {rid}` or deny it with `openprogram deny {rid}`"
    }
    tree = _cli(folder, openai_server, "show", rid, "--store", st).stdout
    assert not [line for line in tree.splitlines() if "[error]" in line], tree


def test_approve_with_a_queue_hands_the_run_to_a_worker(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """``approve RUN --queue Q``: the decision is recorded and the run goes to the
    workers of ``Q`` (it is not resumed here); a worker resumes it with the run's model,
    the approved tool runs once."""
    folder, rid = paused
    both = _cli(folder, openai_server, "approve", rid, "--no-resume", "--queue", "q1")
    assert both.returncode == 2 and "give --no-resume or --queue" in both.stderr
    proc = _cli(folder, openai_server, "approve", rid, "--queue", "q1", "--store", st, "--json")
    assert proc.returncode == 0, proc.stderr
    assert _json(proc) == {"run_id": rid, "status": "queued", "decision": "approved", "queue": "q1"}
    assert (folder / "junk.txt").exists() and len(openai_server.requests) == 1  # not resumed
    (listed,) = _json(_cli(folder, openai_server, "runs", "--json", "--store", st))
    assert (listed["status"], listed["queue"], listed["pause_reason"]) == ("queued", "q1", None)

    openai_server.reply_text("Removed junk.txt.")
    worker = _cli(
        folder, openai_server,
        *("worker", "--queue", "q1", "--exit-when-idle", "--poll", "0.05", "--store", st),
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert worker.stdout.splitlines() == [f"run {rid} completed"]
    assert not (folder / "junk.txt").exists()
    done = _json(_cli(folder, openai_server, "resume", rid, "--store", st, "--json"))
    assert "completed" in done["error"]
    tool_result = openai_server.requests[-1].json["messages"][-1]
    assert tool_result["role"] == "tool" and "deleted junk.txt" in tool_result["content"]


def test_api_deny_to_a_queue_then_wait_for_the_worker(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """The same through the public API, as a Python caller writes it:
    ``deny_run(..., queue=Q)`` records the decision and queues the run (nothing resumes
    here), ``wait_run`` returns once a worker of ``Q`` has finished it."""
    import threading

    from openprogram.durable import deny_run, wait_run

    folder, rid = paused
    assert deny_run(rid, store=st, queue="q2") is None
    assert len(openai_server.requests) == 1 and (folder / "junk.txt").exists()
    openai_server.reply_text("Left junk.txt in place.")
    done: list[Any] = []
    waiter = threading.Thread(target=lambda: done.append(wait_run(rid, store=st)))
    waiter.start()
    worker = _cli(
        folder, openai_server,
        *("worker", "--queue", "q2", "--exit-when-idle", "--poll", "0.05", "--store", st),
    )  # fmt: skip
    waiter.join(timeout=60)
    assert worker.returncode == 0, worker.stderr
    [outcome] = done
    assert (outcome.status, outcome.result) == ("completed", {"report": "Left junk.txt in place."})
    assert (folder / "junk.txt").exists()
    assert "denied by the user" in openai_server.requests[-1].json["messages"][-1]["content"]


def test_the_views_know_how_an_approval_pause_is_recorded() -> None:
    """The run views tell a step unwound by an approval pause by its recorded error
    (``store.run_views`` cannot import the durable layer): the prefix is the class's."""
    from openprogram.durable.approvals import ApprovalPending
    from openprogram.store.run_views import APPROVAL_PAUSE_ERROR

    assert APPROVAL_PAUSE_ERROR == f"{ApprovalPending.__name__}: "


def test_a_run_cancelled_while_awaiting_approval_shows_its_step_cancelled(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """Cancelled while awaiting approval, the run's steps were shown as the pause left
    them: ``show`` said ``tidy [paused]`` (``"status": "paused"``) of a run nothing will
    resume, and the Runs view said the step failed with ``ApprovalPending: ...``. The
    step ended in the cancel: ``cancelled``, with no error of its own."""
    folder, rid = paused
    done = _json(_cli(folder, openai_server, "cancel", rid, "--store", st, "--json"))
    assert done["status"] == "cancelled"
    (listed,) = _json(_cli(folder, openai_server, "runs", "--json", "--store", st))
    assert listed["status"] == "cancelled" and "ApprovalPending" not in listed["error"]
    # it awaits nothing any more: ``runs --json`` printed ``"awaiting_approval"`` still
    assert listed["pause_reason"] is None, listed
    stored = _json(_cli(folder, openai_server, "show", rid, "--format", "json", "--store", st))
    by_name = {n["name"]: n for n in stored["nodes"] if n["kind"] == "code"}
    assert (by_name["clean"]["status"], by_name["tidy"]["status"]) == ("cancelled", "cancelled")
    tree = _cli(folder, openai_server, "show", rid, "--store", st).stdout
    assert "code tidy [cancelled]" in tree, tree
    assert not [line for line in tree.splitlines() if "[paused]" in line or "[error]" in line]
    assert tree.splitlines()[0].endswith("; run cancelled"), tree


def _html_graph(folder: Path, server: OpenAIServer, rid: str, st: str) -> dict[str, Any]:
    page = _cli(folder, server, "show", rid, "--format", "html", "--store", st)
    assert page.returncode == 0, page.stderr
    data = re.search(
        r'<script id="openprogram-graph-data" type="application/json">(.*?)</script>',
        page.stdout,
        re.S,
    )
    assert data is not None, page.stdout[:500]
    return dict(json.loads(data.group(1)))


def test_a_run_cancelled_while_awaiting_approval_is_drawn_and_listed_as_cancelled(
    paused: tuple[Path, str], openai_server: OpenAIServer, st: str
) -> None:
    """Cancelled while awaiting approval, the run graph (``show --format html``, the editor's
    graph view) still drew ``clean`` and ``tidy`` as ``paused``, and ``runs`` still named
    ``delete_file`` as its PAUSED_STEP (``"paused_step"``): nothing is paused there any
    more. The graph says ``cancelled``, as ``show``'s tree does, and no step is named."""
    folder, rid = paused
    before = _html_graph(folder, openai_server, rid, st)
    assert {n["name"]: n["status"] for n in before["nodes"] if n["kind"] == "code"} == {
        "clean": "paused",
        "tidy": "paused",
    }
    assert _cli(folder, openai_server, "cancel", rid, "--store", st).returncode == 0
    graph = _html_graph(folder, openai_server, rid, st)
    assert graph["run"]["status"] == "cancelled"
    code = {n["name"]: n["status"] for n in graph["nodes"] if n["kind"] == "code"}
    assert code == {"clean": "cancelled", "tidy": "cancelled"}, graph["nodes"]
    assert "paused" not in {n["status"] for n in graph["nodes"]}
    (listed,) = _json(_cli(folder, openai_server, "runs", "--json", "--store", st))
    assert (listed["status"], listed["paused_step"], listed["paused_occurrence"]) == (
        "cancelled",
        None,
        None,
    )
    table = _cli(folder, openai_server, "runs", "--store", st).stdout.splitlines()
    header, row = (re.split(r"\s{2,}", line.strip()) for line in table)
    assert dict(zip(header, row, strict=True))["PAUSED_STEP"] == "-", table


PLAIN_ADMIN = '''
import os

from openprogram import Agent
from openprogram.programs import function

HERE = os.path.dirname(os.path.abspath(__file__))


@function(requires_approval=True)
def delete_account(user: str) -> str:
    """Delete a user account."""
    with open(os.path.join(HERE, "deleted.txt"), "a") as f:
        f.write(user + "\\n")
    return "deleted " + user


class Admin(Agent):
    def handle(self, request: str) -> str:
        """Handle a request with the delete tool."""
        return self(request, tools=[delete_account])


handle = Admin().handle
PROGRAM_ENTRIES = ["handle"]
'''


def test_approval_in_a_run_that_is_not_resumable_fails_it_saying_how(
    tmp_path: Path, openai_server: OpenAIServer
) -> None:
    """The model was told "not approved" and the run completed (exit 0): nothing told the
    user, and ``approve`` said the run was completed. A run of an entry that is not
    resumable cannot pause (it could only run again from its start): it fails, naming the
    tool and how to get a decision; the tool did not run and the model was asked once."""
    (tmp_path / "admin.py").write_text(PLAIN_ADMIN, encoding="utf-8")
    openai_server.reply_tool_calls([("call_1", "delete_account", {"user": "bob"})])
    openai_server.reply_text("I could not delete bob.")  # what the old run went on with
    proc = _cli(
        tmp_path,
        openai_server,
        *("run", "admin.py:handle", "--args", '{"request": "delete bob"}'),
        *("--model", "openai:loop", "--store", str(tmp_path / "store"), "--json"),
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = _json(proc)
    assert out["status"] == "failed"
    assert "tool 'delete_account' requires approval" in out["error"]
    assert "entry is not declared resumable" in out["error"]
    assert "openprogram approve" in out["error"] and "approvals" in out["error"]
    assert not (tmp_path / "deleted.txt").exists()
    assert len(openai_server.requests) == 1
