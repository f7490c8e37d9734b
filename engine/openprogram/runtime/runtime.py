"""``Runtime``: the one object that talks to a model, including the tool loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import inspect
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram import safepoints
from openprogram.durable.errors import RunPaused
from openprogram.errors import ConfigError, OpenProgramError, ResponseFormatViolation
from openprogram.runtime import paused_loops
from openprogram.runtime.cassette import CassetteWriter
from openprogram.runtime.config import detect_model, model_setting
from openprogram.runtime.model_string import PROVIDER_PREFIXES, ModelString, parse_model_string
from openprogram.runtime.providers.base import Provider
from openprogram.runtime.retry import RetryPolicy
from openprogram.runtime.types import Message, ModelRequest, ModelResponse, ToolCall, Usage
from openprogram.schema_grammar import check_response_format, response_format_path_text
from openprogram.scope import (
    Frame,
    current_frame,
    nearest_option,
    pop_frame,
    push_frame,
    record_llm_call,
)

if TYPE_CHECKING:
    from openprogram.context import Context
    from openprogram.programs.function_tools import Tool
    from openprogram.store import SessionStore

log = logging.getLogger("openprogram.runtime")

Content = str | list[dict[str, Any]]


class MaxIterationsExceeded(OpenProgramError, RuntimeError):
    """The model kept requesting tools for ``max_iterations`` model requests."""


@dataclasses.dataclass
class ToolCallRecord:
    """One tool call made during a turn and the result fed back to the model."""

    id: str
    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool = False


@dataclasses.dataclass
class ExecResult:
    """Everything one ``exec`` produced: final text, every reply, tool trace, usage."""

    text: str
    responses: list[ModelResponse]
    tool_calls: list[ToolCallRecord]
    usage: Usage
    messages: list[Message]
    #: With ``choices=``: the resolved decision (the chosen function's result or value).
    decision: Any = None

    @property
    def iterations(self) -> int:
        """Number of model requests made."""
        return len(self.responses)

    @property
    def last_response(self) -> ModelResponse:
        return self.responses[-1]


class Runtime:
    """Runs model turns on one provider.

    ``model`` is a model string (``openai:gpt-4.1-mini``, ``anthropic:claude-sonnet-4-5``,
    ``scripted:echo``, ``replay:run.jsonl``, ``replay:session:ID``); ``None`` autodetects
    like :func:`create_runtime`. ``provider=`` passes a provider object instead.
    ``record_to=`` writes a JSONL cassette of every request for later ``replay:``.
    The API key is held by the provider and never shown in reprs, logs or errors.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        provider: Provider | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 60.0,
        system: str | None = None,
        retry: RetryPolicy | None = None,
        record_to: str | Path | CassetteWriter | None = None,
        store: SessionStore | None = None,
    ) -> None:
        self.system = system
        self.timeout_s = timeout_s
        self._retry = retry or RetryPolicy(max_retries=max_retries)
        self._base_url = base_url
        self._store = store
        self._extra: dict[str, Provider] = {}
        self._closed = False
        self.last_result: ExecResult | None = None
        if provider is not None:
            self.provider: Provider = provider
            self._owns_provider = False
            if model is not None:
                parsed = _split_model(model, provider.name)
                self.provider.model_id = parsed.model_id
        else:
            parsed = parse_model_string(model if model is not None else detect_model())
            self.provider = self._build(parsed, api_key)
            self._owns_provider = True
        self._api_key_given = api_key is not None
        self._cassette = (
            record_to
            if isinstance(record_to, CassetteWriter) or record_to is None
            else CassetteWriter(record_to)
        )

    # -- construction ---------------------------------------------------------------

    def _build(self, parsed: ModelString, api_key: str | None) -> Provider:
        if parsed.provider == "openai":
            from openprogram.runtime.providers.openai import OpenAIProvider

            return OpenAIProvider(
                parsed.model_id,
                base_url=self._base_url,
                api_key=api_key,
                timeout_s=self.timeout_s,
                retry=self._retry,
            )
        if parsed.provider == "anthropic":
            from openprogram.runtime.providers.anthropic import AnthropicProvider

            return AnthropicProvider(
                parsed.model_id,
                base_url=self._base_url,
                api_key=api_key,
                timeout_s=self.timeout_s,
                retry=self._retry,
            )
        if parsed.provider == "scripted":
            from openprogram.runtime.providers.scripted import ScriptedProvider

            return ScriptedProvider(mode=parsed.model_id)
        from openprogram.runtime.providers.replay import ReplayProvider

        return ReplayProvider.from_target(parsed.model_id, self._store)

    @property
    def model(self) -> str:
        """The default model as a model string."""
        return f"{self.provider.name}:{self.provider.model_id}"

    def __repr__(self) -> str:
        return f"Runtime(model={self.model!r})"

    # -- public API -----------------------------------------------------------------

    def exec(
        self,
        content: Content,
        *,
        tools: Sequence[Any] | None = None,
        toolset: Any = None,
        choices: Any = None,
        response_format: Any = None,
        model: str | None = None,
        effort: str | None = None,
        system: str | None = None,
        max_iterations: int = 20,
        timeout_s: float | None = None,
        history: Sequence[Message] | None = None,
        context: Context | None = None,
    ) -> Any:
        """Run one model turn (with the tool loop) and return the final reply text.

        With ``choices`` the turn ends in a next-step decision (seed next-step-decision,
        "entry two"): the menu and :data:`~openprogram.decision.DECISION_FINISH_INSTRUCTION`
        are appended to ``content``, the turn runs with its tools, and the final reply is
        parsed and resolved (one fixed retry); the resolved result is returned.
        ``context`` adds its blocks and provider values (evaluated at every model request,
        tool-loop iterations included) and the session history before ``content``.
        """
        result = self.exec_full(
            content,
            tools=tools,
            toolset=toolset,
            choices=choices,
            response_format=response_format,
            model=model,
            effort=effort,
            system=system,
            max_iterations=max_iterations,
            timeout_s=timeout_s,
            history=history,
            context=context,
        )
        return result.text if choices is None else result.decision

    def exec_full(
        self,
        content: Content,
        *,
        tools: Sequence[Any] | None = None,
        toolset: Any = None,
        choices: Any = None,
        response_format: Any = None,
        model: str | None = None,
        effort: str | None = None,
        system: str | None = None,
        max_iterations: int = 20,
        timeout_s: float | None = None,
        history: Sequence[Message] | None = None,
        context: Context | None = None,
    ) -> ExecResult:
        """Like :meth:`exec` but returns the :class:`ExecResult` (replies, tool trace, usage;
        ``decision`` holds the resolved choice)."""
        turn = self._start(
            content, tools, toolset, choices, response_format, model, effort, system,
            max_iterations, timeout_s, history, context,
        )  # fmt: skip
        result = self._loop(turn)
        if choices is not None:
            result.decision = self._decide(turn, result, choices)
        return result

    def ask_for_decision(
        self,
        content: Content,
        choices: Any,
        *,
        system: str | None = None,
        context: Context | None = None,
        model: str | None = None,
    ) -> str:
        """One model request for ``decision.make``: ``content`` (prompt and menu, as the
        caller wrote it) with no tools; ``choices`` ride along on the request for
        providers that look at them (``scripted:``). ``system``, ``context`` and ``model``
        are as in :meth:`exec` (inside an Agent method, the Agent's instructions, Context
        and model). Returns the reply text unparsed."""
        turn = self._start(
            content, [], None, choices, None, model, None, system, 1, None, None, context,
            menu=False,
        )  # fmt: skip
        turn.choose_only = True
        return self._loop(turn).text

    def _loop(self, turn: _Turn) -> ExecResult:
        calls = turn.resume()  # a resumed turn continues at its paused tool call
        if calls is None:  # this loop had finished before the turn paused
            return self._finish(turn)
        while True:
            if not calls:
                try:
                    request = _before_request(turn, turn.next_request())
                except safepoints.TurnPaused as paused:  # resumed: this request is next
                    turn.save(paused, [])
                    raise
                response = self._call(turn.provider, request)
                _after_response(turn, response)
                if turn.accept(response):
                    return self._finish(turn)
                calls = list(response.tool_calls)
            for index, call in enumerate(calls):
                with paused_loops.journal() as done:  # loops the tool runs
                    try:
                        _before_tool(turn, call)
                        record = self._run_tool(turn, call)
                    except (RunPaused, safepoints.TurnPaused) as paused:
                        turn.save(paused, calls[index:], done)
                        raise
                _after_tool(record)
                turn.add_tool_result(call, record)
            calls = []

    async def _aloop(self, turn: _Turn) -> ExecResult:
        calls = turn.resume()
        if calls is None:
            return self._finish(turn)
        while True:
            if not calls:
                try:
                    request = _before_request(turn, turn.next_request())
                except safepoints.TurnPaused as paused:  # resumed: this request is next
                    turn.save(paused, [])
                    raise
                response = await self._acall(turn.provider, request)
                _after_response(turn, response)
                if turn.accept(response):
                    return self._finish(turn)
                calls = list(response.tool_calls)
            for index, call in enumerate(calls):
                with paused_loops.journal() as done:  # loops the tool runs
                    try:
                        _before_tool(turn, call)
                        record = await self._arun_tool(turn, call)
                    except (RunPaused, safepoints.TurnPaused) as paused:
                        turn.save(paused, calls[index:], done)
                        raise
                _after_tool(record)
                turn.add_tool_result(call, record)
            calls = []

    def _decide(self, turn: _Turn, result: ExecResult, choices: Any) -> Any:
        """Parse the turn's final reply as a decision (one fixed retry) and resolve it."""
        from openprogram.decision import decide_from_reply

        asked = list(turn.messages)
        reply = result.text

        def retry(message: str) -> str:
            nonlocal reply, asked
            past = [*asked, Message(role="assistant", content=reply)]
            again = self._start(
                message, [], None, choices, None, None, turn.effort, turn.template.system,
                1, turn.template.timeout_s, past, None, menu=False, model_id=turn.model_id,
                provider=turn.provider,
            )  # fmt: skip
            if any(m.tool_calls or m.role == "tool" for m in past):
                # the history holds the turn's tool calls: the same definitions go along
                # (a wire may reject tool blocks without them), not to be called again
                again.template = dataclasses.replace(
                    again.template, tools=list(turn.template.tools), tool_choice="none"
                )
            again.choose_only = True
            reply = self._loop(again).text
            asked = list(again.messages)
            return reply

        return decide_from_reply(
            reply, choices, retry=retry, max_retries=1, context=turn.menu_context, runtime=self
        )

    async def aexec(
        self,
        content: Content,
        *,
        tools: Sequence[Any] | None = None,
        toolset: Any = None,
        choices: Any = None,
        response_format: Any = None,
        model: str | None = None,
        effort: str | None = None,
        system: str | None = None,
        max_iterations: int = 20,
        timeout_s: float | None = None,
        history: Sequence[Message] | None = None,
        context: Context | None = None,
    ) -> Any:
        """Async :meth:`exec`: provider calls are awaited, sync tools run in a thread."""
        result = await self.aexec_full(
            content,
            tools=tools,
            toolset=toolset,
            choices=choices,
            response_format=response_format,
            model=model,
            effort=effort,
            system=system,
            max_iterations=max_iterations,
            timeout_s=timeout_s,
            history=history,
            context=context,
        )
        return result.text if choices is None else result.decision

    async def aexec_full(
        self,
        content: Content,
        *,
        tools: Sequence[Any] | None = None,
        toolset: Any = None,
        choices: Any = None,
        response_format: Any = None,
        model: str | None = None,
        effort: str | None = None,
        system: str | None = None,
        max_iterations: int = 20,
        timeout_s: float | None = None,
        history: Sequence[Message] | None = None,
        context: Context | None = None,
    ) -> ExecResult:
        """Async :meth:`exec_full`."""
        turn = self._start(
            content, tools, toolset, choices, response_format, model, effort, system,
            max_iterations, timeout_s, history, context,
        )  # fmt: skip
        result = await self._aloop(turn)
        if choices is not None:
            # the retry (if any) and the chosen function run in a worker thread
            result.decision = await asyncio.to_thread(
                contextvars.copy_context().run, self._decide, turn, result, choices
            )
        return result

    def close(self) -> None:
        """Close providers this runtime created and the cassette file."""
        if self._closed:
            return
        self._closed = True
        providers = list(self._extra.values())
        if self._owns_provider:
            providers.append(self.provider)
        for provider in providers:
            provider.close()
        if self._cassette is not None:
            self._cassette.close()

    async def aclose(self) -> None:
        """Close providers (and their async connection pools) and the cassette file."""
        if self._closed:
            return
        providers = list(self._extra.values())
        if self._owns_provider:
            providers.append(self.provider)
        for provider in providers:
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                await aclose()
        self.close()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- internals ------------------------------------------------------------------

    def _start(
        self,
        content: Content,
        tools: Sequence[Any] | None,
        toolset: Any,
        choices: Any,
        response_format: Any,
        model: str | None,
        effort: str | None,
        system: str | None,
        max_iterations: int,
        timeout_s: float | None,
        history: Sequence[Message] | None,
        context: Context | None,
        *,
        menu: bool = True,
        model_id: str | None = None,
        provider: Provider | None = None,
    ) -> _Turn:
        if self._closed:
            raise ConfigError(f"{self!r} is closed; create a new Runtime")
        if not isinstance(content, (str, list)):
            raise TypeError(
                f"content must be a string or a list of content blocks, got {type(content).__name__}"
            )
        if max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
        if provider is None or model_id is None:
            provider, model_id = self._provider_for(model)
        prepared = self._prepare_tools(tools, toolset)
        menu_context = context
        if choices is not None and menu_context is None:
            from openprogram.context import Context

            menu_context = Context.current()
        prompt = _Prompt.build(content, context, choices if menu else None, menu_context)
        messages = list(history or [])
        messages.append(Message(role="user", content=prompt.first()))
        return _Turn(
            provider=provider,
            template=ModelRequest(
                model_id=model_id,
                messages=[],
                system=self._system_for(system),
                tools=[t.spec for t in prepared],
                response_format=normalize_response_format(response_format),
                effort=effort,
                timeout_s=timeout_s if timeout_s is not None else self.timeout_s,
                choices=choices,
            ),
            tools={t.name: t for t in prepared},
            messages=messages,
            max_iterations=max_iterations,
            prompt=prompt,
            prompt_index=len(messages) - 1,
            menu_context=menu_context,
        )

    def _provider_for(self, model: str | None) -> tuple[Provider, str]:
        if model is None:
            return self.provider, self.provider.model_id
        prefix = model.partition(":")[0].strip().lower()
        if ":" not in model or prefix not in PROVIDER_PREFIXES:
            return self.provider, model.strip()  # a bare model id for this provider
        parsed = parse_model_string(model)
        same_endpoint = parsed.provider in ("openai", "anthropic")
        if parsed.provider == self.provider.name and (
            same_endpoint or parsed.model_id == self.provider.model_id
        ):
            return self.provider, parsed.model_id  # scripted/replay ids name a mode or file
        key = str(parsed)
        if key not in self._extra:
            self._extra[key] = self._build(parsed, None)
        return self._extra[key], parsed.model_id

    def _system_for(self, system: str | None) -> str | None:
        if system is not None:
            return system
        return nearest_option("system") or self.system

    def _prepare_tools(self, tools: Sequence[Any] | None, toolset: Any) -> list[Tool]:
        # imported here: function_tools imports openprogram.runtime.types (no cycle at load)
        from openprogram.programs.function_tools import as_tool

        items = list(tools or [])
        if toolset is not None:
            if isinstance(toolset, (list, tuple)) and all(not isinstance(t, str) for t in toolset):
                items.extend(toolset)  # tool objects, not names
            else:  # names of registry toolsets (an unknown name is an error)
                from openprogram.programs.registry import REGISTRY

                items.extend(t for t in REGISTRY.resolve(None, toolset=toolset) if t not in items)
        prepared = [as_tool(item) for item in items]
        seen: set[str] = set()
        for tool in prepared:
            if tool.name in seen:
                raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique")
            seen.add(tool.name)
        return prepared

    def _call(self, provider: Provider, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        log.debug(
            "%s: request %s (%d messages)", provider.name, request.model_id, len(request.messages)
        )
        try:
            response = provider.complete(request)
        except Exception as exc:
            self._record(provider, request, None, exc, started)
            raise
        self._record(provider, request, response, None, started)
        _log_reply(provider, response)
        return response

    async def _acall(self, provider: Provider, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        log.debug(
            "%s: request %s (%d messages)", provider.name, request.model_id, len(request.messages)
        )
        try:
            response = await provider.acomplete(request)
        except Exception as exc:
            self._record(provider, request, None, exc, started)
            raise
        self._record(provider, request, response, None, started)
        _log_reply(provider, response)
        return response

    def _record(
        self,
        provider: Provider,
        request: ModelRequest,
        response: ModelResponse | None,
        error: BaseException | None,
        started: float,
    ) -> None:
        duration = time.perf_counter() - started
        record_llm_call(
            provider=provider.name,
            request=request,
            response=response,
            error=error,
            duration_s=duration,
        )
        if self._cassette is not None:
            self._cassette.append(request, response, error)

    def _run_tool(self, turn: _Turn, call: ToolCall) -> ToolCallRecord:
        from openprogram.programs.function_tools import check_arguments

        tool, problem = turn.lookup(call)
        if tool is None:
            return _record_of(call, problem, True)
        token = push_frame(Frame("tool-dispatch", current_frame(), self))
        try:
            arguments = check_arguments(tool, call.arguments)
            value = tool.invoke(arguments, runtime=self)
            if inspect.isawaitable(value):
                value = _run_sync(value)
        except Exception as exc:
            log.debug("tool %s failed: %s", call.name, type(exc).__name__)
            return _record_of(call, f"{type(exc).__name__}: {exc}", True)
        finally:
            pop_frame(token)
        return _record_of(call, format_tool_result(value), False)

    async def _arun_tool(self, turn: _Turn, call: ToolCall) -> ToolCallRecord:
        from openprogram.programs.function_tools import check_arguments

        tool, problem = turn.lookup(call)
        if tool is None:
            return _record_of(call, problem, True)
        token = push_frame(Frame("tool-dispatch", current_frame(), self))
        try:
            arguments = check_arguments(tool, call.arguments)
            if _is_async(tool.call):
                value = await tool.invoke(arguments, runtime=self)
            else:
                value = await asyncio.to_thread(tool.invoke, arguments, self)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:
            log.debug("tool %s failed: %s", call.name, type(exc).__name__)
            return _record_of(call, f"{type(exc).__name__}: {exc}", True)
        finally:
            pop_frame(token)
        return _record_of(call, format_tool_result(value), False)

    def _finish(self, turn: _Turn) -> ExecResult:
        if paused_loops.journaling():  # kept in case the turn around it pauses later
            paused_loops.finished(turn.state([]))
        usage = Usage()
        for response in turn.responses:
            usage.input_tokens += response.usage.input_tokens
            usage.output_tokens += response.usage.output_tokens
        result = ExecResult(
            text=turn.responses[-1].text,
            responses=turn.responses,
            tool_calls=turn.trace,
            usage=usage,
            messages=turn.messages,
        )
        self.last_result = result
        return result


class _Prompt:
    """The user message of one exec: Context blocks (re-evaluated at every model request),
    the session history (rendered once, at the start), ``content``, then the decision menu."""

    def __init__(self, content: Content, context: Any, menu: str | None, history: str) -> None:
        self.content = content
        self.context = context
        self.menu = menu
        self.history = history

    @classmethod
    def build(cls, content: Content, context: Any, choices: Any, menu_context: Any) -> _Prompt:
        menu: str | None = None
        if choices is not None:
            from openprogram.decision import DECISION_FINISH_INSTRUCTION, render_options

            menu = (
                f"{DECISION_FINISH_INSTRUCTION}\n\n{render_options(choices, context=menu_context)}"
            )
        history = ""
        if context is not None:
            from openprogram.agentic_programming.calls import render_history_for_request

            history = render_history_for_request(context)
        return cls(content, context, menu, history)

    def first(self) -> Content:
        return self._compose()

    def refresh(self) -> Content | None:
        """The prompt again with current blocks and fresh provider values (``None`` when
        there is no Context, so it cannot change)."""
        if self.context is None:
            return None
        return self._compose()

    def _compose(self) -> Content:
        from openprogram.agentic_programming.calls import compose_prompt

        return compose_prompt(self.content, self.context, self.history, self.menu)


@dataclasses.dataclass
class _Turn:
    """State of one exec: conversation so far, replies, tool trace."""

    provider: Provider
    template: ModelRequest
    tools: dict[str, Tool]
    messages: list[Message]
    max_iterations: int
    prompt: _Prompt
    prompt_index: int
    menu_context: Any = None
    # a decision request where no tool may run (``decision.make``, the decision retry):
    # every tool call of a reply is read as the choice it names
    choose_only: bool = False
    responses: list[ModelResponse] = dataclasses.field(default_factory=list)
    trace: list[ToolCallRecord] = dataclasses.field(default_factory=list)

    @property
    def model_id(self) -> str:
        return self.template.model_id

    @property
    def effort(self) -> str | None:
        return self.template.effort

    def next_request(self) -> ModelRequest:
        if self.responses:  # context providers run at every model request
            refreshed = self.prompt.refresh()
            if refreshed is not None:
                old = self.messages[self.prompt_index]
                self.messages[self.prompt_index] = dataclasses.replace(old, content=refreshed)
        if len(self.responses) >= self.max_iterations:
            names = ", ".join(c.name for c in self.responses[-1].tool_calls)
            raise MaxIterationsExceeded(
                f"the model still requested tools ({names}) after max_iterations="
                f"{self.max_iterations} model requests; raise max_iterations or check "
                "what the tools return"
            )
        return dataclasses.replace(self.template, messages=list(self.messages))

    def state(
        self, pending: list[ToolCall], done: list[dict[str, Any]] | None = None
    ) -> paused_loops.LoopState:
        """This loop as it stands, before ``pending`` ran (``done``: the loops that
        finished inside the first of them)."""
        return paused_loops.LoopState(
            fingerprint=paused_loops.fingerprint(
                self.template, self.messages[self.prompt_index].content
            ),
            messages=list(self.messages),
            prompt_index=self.prompt_index,
            history=self.prompt.history,
            responses=list(self.responses),
            trace=[dataclasses.asdict(r) for r in self.trace],
            pending=list(pending),
            done=list(done or ()),
        )

    def save(
        self,
        paused: BaseException,
        pending: list[ToolCall],
        done: list[dict[str, Any]] | None = None,
    ) -> None:
        """Attach this loop's state to a pause that stops it before ``pending`` ran."""
        paused_loops.save(paused, self.state(pending, done))

    def resume(self) -> list[ToolCall] | None:
        """Put back the state saved when this loop's turn paused (resuming that turn);
        returns the tool calls to run before the next model request (none otherwise),
        or ``None`` when this loop had finished before the pause (its result is back)."""
        prompt = self.messages[self.prompt_index].content
        state = paused_loops.take_done(self.template, prompt)
        finished = state is not None
        if state is None:
            state = paused_loops.take(self.template, prompt)
        if state is None:
            return []
        self.messages = state.messages
        self.prompt_index = state.prompt_index
        self.prompt.history = state.history  # the conversation as it was, not re-rendered
        self.responses = state.responses
        self.trace = [ToolCallRecord(**r) for r in state.trace]
        return None if finished else state.pending

    def accept(self, response: ModelResponse) -> bool:
        """Add the reply; True when the turn is over (no tool calls).

        In a decision turn a reply whose tool calls all name decision options (and no
        offered tool) is the decision written as tool calls: it ends the turn as the
        ``{"call": ...}`` JSON it stands for (several different ones are a
        ``multiple_calls`` error of the parser, retried as any other). In a turn where no
        tool may run (:attr:`choose_only`) every tool call is read so -- one naming no
        option is the parser's ``unknown_call`` -- and never run."""
        if response.tool_calls and self.template.choices is not None:
            response = _decision_from_tool_calls(
                response, self.option_names(), self.tools, everyone=self.choose_only
            )
        self.responses.append(response)
        if not response.tool_calls:
            return True
        self.messages.append(
            Message(role="assistant", content=response.text, tool_calls=list(response.tool_calls))
        )
        return False

    def option_names(self) -> list[str]:
        """The names of this turn's decision options (none outside a decision turn)."""
        if self.template.choices is None:
            return []
        from openprogram.decision import normalize_options

        return normalize_options(self.template.choices, context=self.menu_context).names()

    def lookup(self, call: ToolCall) -> tuple[Tool | None, str]:
        tool = self.tools.get(call.name)
        if tool is None:
            if call.name in self.option_names():
                return None, _option_is_not_a_tool(call.name)
            offered = ", ".join(self.tools) or "(none)"
            return None, f"unknown tool {call.name!r}; available tools: {offered}"
        if call.arguments_error is not None:
            raw = str(call.raw_arguments)
            shown = raw if len(raw) <= 200 else raw[:197] + "..."
            return None, (
                f"the arguments for tool {call.name!r} are {call.arguments_error}: {shown}; "
                "send one JSON object of named arguments"
            )
        return tool, ""

    def add_tool_result(self, call: ToolCall, record: ToolCallRecord) -> None:
        self.trace.append(record)
        self.messages.append(
            Message(
                role="tool",
                content=record.result,
                tool_call_id=call.id,
                name=call.name,
                is_error=record.is_error,
            )
        )


def _decision_from_tool_calls(
    response: ModelResponse, options: list[str], tools: dict[str, Any], *, everyone: bool = False
) -> ModelResponse:
    """``response`` with its tool calls written as decision JSON when every one of them
    names a decision option that is not also an offered tool (``everyone``: whatever they
    name, for a turn where no tool may run); else ``response``."""
    calls = response.tool_calls
    if not everyone and not all(c.name in options and c.name not in tools for c in calls):
        return response
    from openprogram.schema_grammar import CALL_KEYS

    blocks = []
    for call in calls:
        args = dict(call.arguments)
        action = (
            {"call": call.name, "arguments": args}
            if any(k in args for k in CALL_KEYS)
            else {"call": call.name, **args}
        )
        blocks.append("```json\n" + json.dumps(action, ensure_ascii=False) + "\n```")
    text = "\n\n".join([response.text, *blocks] if response.text.strip() else blocks)
    return dataclasses.replace(response, text=text, tool_calls=[])


def _option_is_not_a_tool(name: str) -> str:
    """The tool result for a call of decision option ``name`` beside real tool calls."""
    example = json.dumps({"call": name})
    return (
        f"{name!r} is a decision option, not a tool: when you are done, finish with your "
        f"decision as your final reply, one JSON object in a ```json block, e.g. {example} "
        "with the option's fields"
    )


# -- turn safe points (openprogram.safepoints; a ContextVar lookup when no turn runs) --


def _before_request(turn: _Turn, request: ModelRequest) -> ModelRequest:
    """Safe point before a model request (may raise ``TurnCancelled``/``TurnPaused``);
    input appended to the running turn meanwhile joins the request as user messages."""
    control = safepoints.current_control()
    if control is None:
        return request
    safepoints.checkpoint(
        "llm.request",
        model=f"{turn.provider.name}:{request.model_id}",
        iteration=len(turn.responses) + 1,
    )
    arrived = control.take_input()
    if not arrived:
        return request
    for content in arrived:
        turn.messages.append(Message(role="user", content=content))
    safepoints.emit("input.delivered", count=len(arrived), iteration=len(turn.responses) + 1)
    return turn.next_request()


def _after_response(turn: _Turn, response: ModelResponse) -> None:
    if safepoints.current_control() is not None:
        safepoints.emit(
            "llm.response",
            iteration=len(turn.responses) + 1,
            usage=response.usage.to_json(),
            tool_calls=[c.name for c in response.tool_calls],
            finish_reason=response.finish_reason,
        )


def _before_tool(turn: _Turn, call: ToolCall) -> None:
    """Safe point before a tool dispatch (may raise ``TurnCancelled``)."""
    if safepoints.current_control() is not None:
        safepoints.checkpoint(
            "tool.started", name=call.name, call_id=call.id, iteration=len(turn.responses)
        )


def _after_tool(record: ToolCallRecord) -> None:
    if safepoints.current_control() is not None:
        info: dict[str, Any] = {
            "name": record.name,
            "call_id": record.id,
            "ok": not record.is_error,
        }
        if record.is_error:
            info["error"] = record.result[:300]  # the text the model is shown, no more
        safepoints.emit("tool.finished", **info)


def _log_reply(provider: Provider, response: ModelResponse) -> None:
    log.debug(
        "%s: reply (%d tool calls, %d in / %d out tokens, request id %s)",
        provider.name,
        len(response.tool_calls),
        response.usage.input_tokens,
        response.usage.output_tokens,
        response.request_id,
    )


def _record_of(call: ToolCall, result: str, is_error: bool) -> ToolCallRecord:
    return ToolCallRecord(
        id=call.id, name=call.name, arguments=dict(call.arguments), result=result, is_error=is_error
    )


def _split_model(model: str, provider_name: str) -> ModelString:
    prefix = model.partition(":")[0].lower()
    if ":" in model and prefix in PROVIDER_PREFIXES:
        parsed = parse_model_string(model)
        if parsed.provider != provider_name:
            raise ConfigError(
                f"model {model!r} does not match provider {provider_name!r}; "
                f"use '{provider_name}:<model id>'"
            )
        return parsed
    return ModelString(provider_name, model.strip())


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )


def _run_sync(awaitable: Any) -> Any:
    """Run a tool's coroutine from sync code (in a worker thread if a loop is running)."""

    async def wrap() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrap())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wrap()).result()


_SHARED_REPLAYS: dict[tuple[Any, ...], Provider] = {}
_SHARED_LOCK = threading.Lock()


def implicit_runtime(model: str | None = None, *, wanted: str | None = None) -> Runtime:
    """The runtime ``create_runtime()`` gives a call or run that was given none (for
    ``model``, else for the autodetected model, else for ``wanted``: the model the call
    itself names; with none of them, the ConfigError that says how to configure one).

    A ``replay:`` model shares one provider per recording across the whole process, so
    the cassette is consumed in order even over several top-level calls (running past
    its end raises ``ReplayMismatch``); the recording is re-read when the file changes.
    """
    from openprogram.runtime import create_runtime

    if not model:
        found = model_setting()
        model = found[0] if found is not None else wanted or detect_model()
    parsed = parse_model_string(model)
    if parsed.provider != "replay":
        return create_runtime(model)
    key: tuple[Any, ...] = (parsed.model_id,)
    if not parsed.model_id.startswith("session:"):
        try:
            st = Path(parsed.model_id).resolve().stat()
            key = (str(Path(parsed.model_id).resolve()), st.st_mtime_ns, st.st_size)
        except OSError:
            pass  # the provider reports the missing file
    with _SHARED_LOCK:
        provider = _SHARED_REPLAYS.get(key)
        if provider is None:
            from openprogram.runtime.providers.replay import ReplayProvider

            provider = ReplayProvider.from_target(parsed.model_id)
            _SHARED_REPLAYS[key] = provider
    return create_runtime(provider=provider)


def format_tool_result(value: Any) -> str:
    """The text fed back to the model for a tool's return value."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def normalize_response_format(value: Any) -> dict[str, Any] | None:
    """An OpenAI-style ``response_format`` from a dict, a bare JSON schema or a pydantic model."""
    if value is None:
        return None
    if isinstance(value, dict):
        problems = check_response_format(value)
        if problems:
            first = problems[0]
            raise ResponseFormatViolation(
                first.code, first.message, response_format_path_text(first.path)
            )
        if value.get("type") in ("json_schema", "json_object", "text") and (
            value.get("type") != "json_schema" or isinstance(value.get("json_schema"), dict)
        ):
            return value
        return {"type": "json_schema", "json_schema": {"name": "response", "schema": value}}
    schema_fn = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema_fn):
        return {
            "type": "json_schema",
            "json_schema": {"name": value.__name__, "schema": schema_fn()},
        }
    raise ConfigError(
        "response_format must be a JSON schema dict, an OpenAI response_format dict "
        f"or a pydantic model class, got {type(value).__name__}"
    )
