"""What a revised or retried Planner workflow reuses of its previous run, and what it asks
the model again (real HTTP: loopback servers speaking the OpenAI and Anthropic wire formats).

* A reply the workflow's own code then failed on (``int(llm("how many?"))`` got "five") is
  asked again on the next run instead of replaying the same bad reply forever.
* A call whose Context changed (its blocks or what its providers return) is asked again:
  the checkpoint key covers what the Context adds to the request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from loopback import LoopbackServer, Received, Reply, RetryPolicy, runtime_for

from openprogram import Context
from openprogram.programs.workflow import Checkpoint, plan_and_run, run_workflow_code

NO_RETRY = RetryPolicy(max_retries=0)


def prompts_of(body: dict[str, Any]) -> str:
    """The last user text of a request body (after any context/history blocks)."""
    content = body["messages"][-1]["content"]
    return str(content if isinstance(content, str) else content[-1]["text"])


def prompts(server: LoopbackServer) -> list[str]:
    return [prompts_of(r.json) for r in server.requests]


# ------------------------------------------------------------------ a reply the code failed on

COUNT = "def workflow():\n    return int(llm('How many modules? Answer with a number.'))\n"


def test_a_reply_the_workflow_failed_on_is_asked_again(server: LoopbackServer) -> None:
    rt = runtime_for(server, retry=NO_RETRY)
    ckpt = Checkpoint()
    server.reply_text("five")
    with pytest.raises(ValueError, match="five"):
        run_workflow_code(COUNT, runtime=rt, checkpoint=ckpt)
    server.reply_text("5")
    assert run_workflow_code(COUNT, runtime=rt, checkpoint=ckpt) == 5  # the same code, retried
    assert len(server.requests) == 2 and ckpt.hits == 0
    # a successful run is reused as before
    assert run_workflow_code(COUNT, runtime=rt, checkpoint=ckpt) == 5
    assert len(server.requests) == 2 and ckpt.hits == 1
    rt.close()


def _planner_reply(code: str) -> str:
    return f"```python\n{code}```"


def test_a_revision_asks_again_only_the_reply_the_code_failed_on(server: LoopbackServer) -> None:
    first = (
        "def workflow():\n"
        "    files = agent('List the auth files', tools=[])\n"
        "    count = llm('How many files are in: ' + files)\n"
        "    return int(count)\n"
    )
    revised = first.replace("int(count)", "int(count.strip())")
    replies = {
        "List the auth files": ["login.py token.py"],
        "How many files are in: login.py token.py": ["two", "2"],
    }
    planner = [_planner_reply(first), _planner_reply(revised)]

    def answer(request: Received) -> Reply:
        if "You are the Planner" in json.dumps(request.json):
            text = planner.pop(0)
        else:
            text = replies[prompts_of(request.json)].pop(0)
        payload = json.dumps(server.text_payload(text)).encode()
        return Reply(200, payload, {"content-type": "application/json"})

    server.reply_with(*[answer] * 6)
    rt = runtime_for(server, retry=NO_RETRY)
    run = plan_and_run("count the auth files", runtime=rt, max_revisions=1)
    assert (run.result, run.revisions) == (2, 1)
    asked = [p for p in prompts(server) if not p.startswith("Task:")]
    # the listing the workflow went on with is reused; the count it failed on is asked again
    assert asked == [
        "List the auth files",
        "How many files are in: login.py token.py",
        "How many files are in: login.py token.py",
    ]
    rt.close()


def _answers(server: LoopbackServer, replies: dict[str, list[str]]) -> None:
    """Answer every request by its prompt, from ``replies`` in order."""

    def answer(request: Received) -> Reply:
        text = replies[prompts_of(request.json)].pop(0)
        payload = json.dumps(server.text_payload(text)).encode()
        return Reply(200, payload, {"content-type": "application/json"})

    server.reply_with(*[answer] * sum(len(v) for v in replies.values()))


@pytest.mark.parametrize("failing", ["int(a)", "int(a.strip())", "to_int(a)"])
def test_the_reply_the_failing_expression_used_is_asked_again_not_the_last_one(
    server: LoopbackServer, failing: str
) -> None:
    code = (
        "def workflow():\n"
        "    def to_int(text):\n"
        "        return int(text)\n"
        "    a = llm('How many modules?')\n"
        "    b = llm('Name one module.')\n"
        f"    return {failing}, b\n"
    )
    _answers(server, {"How many modules?": ["five", "5"], "Name one module.": ["auth", "auth"]})
    rt = runtime_for(server, retry=NO_RETRY)
    ckpt = Checkpoint()
    with pytest.raises(ValueError, match="five"):
        run_workflow_code(code, runtime=rt, checkpoint=ckpt)
    assert [e["reusable"] for e in ckpt.entries if "reusable" in e] == [False]
    assert [e["prompt"] for e in ckpt.entries if e.get("reusable") is False] == [
        "How many modules?"
    ]
    assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == (5, "auth")
    assert prompts(server)[2] == "How many modules?"  # not "Name one module." again
    rt.close()


def test_an_item_of_a_parallel_result_the_code_failed_on_asks_the_parallel_again(
    server: LoopbackServer,
) -> None:
    code = (
        "def workflow():\n"
        "    counts = parallel([lambda: llm('Count A'), lambda: llm('Count B')])\n"
        "    first = counts[0]\n"
        "    note = llm('Say done.')\n"
        "    return int(first) + int(counts[1]), note\n"
    )
    _answers(server, {"Count A": ["one", "1"], "Count B": ["2", "2"], "Say done.": ["done"] * 2})
    rt = runtime_for(server, retry=NO_RETRY)
    ckpt = Checkpoint()
    with pytest.raises(ValueError, match="one"):
        run_workflow_code(code, runtime=rt, checkpoint=ckpt)
    assert [e["prompt"] for e in ckpt.entries if e.get("reusable") is False] == ["Count A"]
    assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == (3, "done")
    # the branch it failed on is asked again, its sibling reused; later calls run again
    assert sorted(prompts(server)[3:]) == ["Count A", "Say done."]
    rt.close()


# ------------------------------------------------------------------ the Context is part of the key


def test_a_changed_context_provider_is_asked_again(server: LoopbackServer) -> None:
    tickets = {"open": 3}
    ctx = Context({"team": "billing"}, providers={"open_tickets": lambda _ctx: tickets["open"]})
    code = "def workflow():\n    return llm('How busy is the team?')\n"
    rt = runtime_for(server, retry=NO_RETRY)
    ckpt = Checkpoint()
    server.reply_text("quiet")
    server.reply_text("swamped")
    with ctx.bind():
        assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == "quiet"
        assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == "quiet"  # reused
        assert len(server.requests) == 1
        tickets["open"] = 40
        assert run_workflow_code(code, runtime=rt, checkpoint=ckpt) == "swamped"
    assert len(server.requests) == 2
    assert "40" in json.dumps(server.requests[1].json)
    rt.close()


def test_context_providers_run_once_per_request_of_a_workflow_call(
    server: LoopbackServer,
) -> None:
    """The checkpoint key and the request share one run of the providers: a call that is
    not reused runs them once per model request, a reused one once (for its key)."""
    runs: list[str] = []

    def open_tickets(ctx: Context) -> int:
        runs.append(ctx["team"])
        return 3

    def lookup(key: str) -> str:
        """Look a key up."""
        return "value-of-" + key

    ctx = Context({"team": "billing"}, providers={"open_tickets": open_tickets})
    code = (
        "def workflow():\n"
        "    a = llm('How busy is the team?')\n"
        "    return a + ' / ' + agent('Look up a', tools=[lookup])\n"
    )
    rt = runtime_for(server, retry=NO_RETRY)
    ckpt = Checkpoint()
    server.reply_text("quiet")
    server.reply_tool_calls([("call_1", "lookup", {"key": "a"})])
    server.reply_text("a is value-of-a")
    with ctx.bind():
        result = run_workflow_code(code, runtime=rt, checkpoint=ckpt, extra={"lookup": lookup})
        assert result == "quiet / a is value-of-a"
        assert len(server.requests) == 3 and len(runs) == 3  # one per model request
        for request in server.requests:
            assert '<context name="open_tickets">' in json.dumps(request.json).replace("\\", "")
        runs.clear()
        assert run_workflow_code(code, runtime=rt, checkpoint=ckpt, extra={"lookup": lookup})
        assert len(server.requests) == 3 and len(runs) == 2  # reused: one per call's key
    rt.close()
