"""A turn can be paused at a safe point (status ``paused``, continuation saved on its node)
and resumed; input appended while a turn runs is delivered at the next safe point, before
the next model request (issue 11, item 16). The model is a loopback OpenAI wire server; a
user acting while a request is in flight is the server's reply handler."""

from __future__ import annotations

import json
import threading
from typing import Any

from loopback import OpenAIServer, Received, Reply

from openprogram import Agent, TurnRequest, agent
from openprogram.context import Context
from openprogram.programs import function, isolated_registry
from openprogram.runtime import create_runtime
from openprogram.store import SessionStore
from openprogram.turns import append_input


def _messages(server: OpenAIServer, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.requests[index].json["messages"]
    return messages


def _while_in_flight(server: OpenAIServer, action: Any, reply: Reply) -> None:
    """Queue ``reply``, running ``action()`` (the user's move) while that request is served."""

    def handler(_request: Received) -> Reply:
        action()
        return reply

    server.reply_with(handler)


def _tool_reply(server: OpenAIServer, *calls: tuple[str, str, dict[str, Any]]) -> Reply:
    return server._json_reply(server.tool_payload(list(calls)))


def test_input_appended_during_a_turn_reaches_the_next_model_request(
    openai_server: OpenAIServer,
) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    with isolated_registry():

        @function(register_globally=False)
        def lookup(city: str) -> str:
            """Look up the weather of a city."""
            return "sunny in " + city

        helper = Agent(runtime=rt, tools=[lookup])
        request = TurnRequest("What is the weather in Oslo?")
        _while_in_flight(
            openai_server,
            lambda: append_input(request.request_id, "Also say it in French."),
            _tool_reply(openai_server, ("c1", "lookup", {"city": "Oslo"})),
        )
        openai_server.reply_text("Sunny in Oslo. Ensoleillé à Oslo.")
        result = helper.run_turn(request)
    rt.close()
    assert result.status == "completed", result.error
    first, second = _messages(openai_server, 0), _messages(openai_server, 1)
    assert "Also say it in French." not in json.dumps(first)
    assert second[-2]["role"] == "tool" and "sunny in Oslo" in second[-2]["content"]
    assert second[-1] == {"role": "user", "content": "Also say it in French."}
    assert not append_input(request.request_id, "too late")  # the turn is over


def test_a_paused_turn_is_persisted_and_resumed_with_its_pending_input(
    tmp_path: Any, openai_server: OpenAIServer
) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    store = SessionStore(root_path=tmp_path / "st")
    store.create_session("chat", agent_id="main")
    pause = threading.Event()
    ran: list[str] = []
    with isolated_registry():

        @function(register_globally=False)
        def lookup(city: str) -> str:
            """Look up the weather of a city."""
            ran.append(city)
            return "sunny in " + city

        helper = Agent(runtime=rt, tools=[lookup])
        request = TurnRequest("What is the weather in Oslo?")

        def user_pauses_and_adds() -> None:
            append_input(request.request_id, "Keep it short.")
            pause.set()

        _while_in_flight(
            openai_server,
            user_pauses_and_adds,
            _tool_reply(openai_server, ("c1", "lookup", {"city": "Oslo"})),
        )
        paused = helper.run_turn(
            request, context=Context.for_session(store, "chat"), pause_event=pause
        )
        assert paused.status == "paused" and paused.error == "turn paused at tool.started (lookup)"
        assert ran == []  # stopped at the safe point before the tool ran
        node = store.get_node(paused.turn_node_id or "")
        assert node is not None and node.status == "paused"
        saved = node.metadata["continuation"]
        assert saved["pending_input"] == ["Keep it short."]
        assert saved["request"]["request_id"] == request.request_id

        openai_server.reply_text("Sunny.")
        done = helper.resume_turn(node.id, context=Context.for_session(store, "chat"))
    store.close()
    rt.close()
    assert done.status == "completed" and done.output == "Sunny."
    resumed = _messages(openai_server, 1)
    assert resumed[-1] == {"role": "user", "content": "Keep it short."}  # delivered first
    # resumed at the paused tool call: the tool ran once, the first request was not re-sent
    assert len(openai_server.requests) == 2 and ran == ["Oslo"]
    assert resumed[-2]["role"] == "tool" and resumed[-2]["content"] == "sunny in Oslo"
    assert resumed[:1] == _messages(openai_server, 0)  # the same user message


def test_a_turn_paused_before_a_model_request_resumes_with_that_request(
    tmp_path: Any, openai_server: OpenAIServer
) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    store = SessionStore(root_path=tmp_path / "st")
    store.create_session("chat", agent_id="main")
    pause = threading.Event()
    ran: list[str] = []
    with isolated_registry():

        @function(register_globally=False)
        def lookup(city: str) -> str:
            """Look up the weather of a city."""
            ran.append(city)
            pause.set()  # the user pauses while the tool runs
            return "sunny in " + city

        helper = Agent(runtime=rt, tools=[lookup])
        openai_server.reply_tool_calls([("c1", "lookup", {"city": "Oslo"})])
        paused = helper.run_turn(
            TurnRequest("What is the weather in Oslo?"),
            context=Context.for_session(store, "chat"),
            pause_event=pause,
        )
        assert paused.status == "paused" and paused.error == "turn paused at llm.request"
        openai_server.reply_text("Sunny.")
        done = helper.resume_turn(paused, context=Context.for_session(store, "chat"))
    store.close()
    rt.close()
    assert done.status == "completed" and done.output == "Sunny.", done.error
    assert len(openai_server.requests) == 2 and ran == ["Oslo"]  # nothing re-sent or re-run
    resumed = _messages(openai_server, 1)
    assert resumed[0] == _messages(openai_server, 0)[0]
    assert resumed[-1]["role"] == "tool" and resumed[-1]["content"] == "sunny in Oslo"


def test_a_tool_running_several_loops_resumes_at_the_paused_one(
    tmp_path: Any, openai_server: OpenAIServer
) -> None:
    """The tool's first loop had finished when the turn paused before its second one:
    resuming returns the first loop's result and sends only the second one's request."""
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    store = SessionStore(root_path=tmp_path / "st")
    store.create_session("chat", agent_id="main")
    pause = threading.Event()
    ran: list[str] = []
    with isolated_registry():

        @function(register_globally=False)
        def brief(topic: str) -> str:
            """Write a brief in two passes."""
            ran.append(topic)
            draft = agent(f"Draft one line about {topic}", tools=[], runtime=rt)
            return agent(f"Polish: {draft}", tools=[], runtime=rt)

        helper = Agent(runtime=rt, tools=[brief])
        openai_server.reply_tool_calls([("c1", "brief", {"topic": "tides"})])
        _while_in_flight(  # the user pauses while the draft is being written
            openai_server, pause.set, openai_server._json_reply(openai_server.text_payload("draft"))
        )
        paused = helper.run_turn(
            TurnRequest("Brief me on tides"), context=Context.for_session(store, "chat"),
            pause_event=pause,
        )  # fmt: skip
        assert paused.status == "paused" and paused.error == "turn paused at llm.request"
        openai_server.reply_text("polished")
        openai_server.reply_text("Here it is: polished")
        done = helper.resume_turn(
            paused.turn_node_id or "", context=Context.for_session(store, "chat")
        )
    store.close()
    rt.close()
    assert done.status == "completed" and done.output == "Here it is: polished", done.error
    prompts = [json.dumps(_messages(openai_server, i)) for i in range(len(openai_server.requests))]
    assert len(prompts) == 4, prompts  # turn, draft, then after resuming: polish, turn
    assert "Draft one line about tides" in prompts[1]
    assert "Polish: draft" in prompts[2] and "Draft one line" not in prompts[2].split("Polish")[-1]
    assert ran == ["tides", "tides"]  # the tool's Python code runs again (no steps in it)


class TwoPass(Agent):
    tools = []

    def __call__(self, content: Any, **options: Any) -> Any:
        """The turn's body runs two loops: a draft, then its polish."""
        draft = super().__call__(f"Draft: {content}", **options)
        return super().__call__(f"Polish: {draft}", **options)


def test_a_turn_body_running_several_loops_resumes_at_the_paused_one(
    tmp_path: Any, openai_server: OpenAIServer
) -> None:
    rt = create_runtime("openai:loop", base_url=openai_server.base_url)
    store = SessionStore(root_path=tmp_path / "st")
    store.create_session("chat", agent_id="main")
    pause = threading.Event()
    writer = TwoPass(runtime=rt)
    _while_in_flight(
        openai_server, pause.set, openai_server._json_reply(openai_server.text_payload("draft"))
    )
    paused = writer.run_turn(
        TurnRequest("tides"), context=Context.for_session(store, "chat"), pause_event=pause
    )
    assert paused.status == "paused" and paused.error == "turn paused at llm.request"
    openai_server.reply_text("polished")
    done = writer.resume_turn(paused, context=Context.for_session(store, "chat"))
    store.close()
    rt.close()
    assert done.status == "completed" and done.output == "polished", done.error
    assert len(openai_server.requests) == 2  # the draft was not asked for again
    assert "Polish: draft" in json.dumps(_messages(openai_server, 1))
