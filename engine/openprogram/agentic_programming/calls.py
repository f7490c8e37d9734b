"""``llm()``, ``agent()`` and ``agent_async()`` (SPEC §2.2).

Every call assembles one prompt and runs it on a :class:`~openprogram.runtime.Runtime`:

* **runtime**: ``runtime=``, else the one bound by the enclosing call, else
  ``create_runtime()`` — closed again when the call returns;
* **system**: ``system=``, else the nearest enclosing method's ``system`` option, else the
  Agent's ``instructions``;
* **content**: the Context's blocks and provider values (providers run now; a failing
  provider fails this request), then the session history rendered by
  :mod:`openprogram.history` when a session writer is in effect, then ``content``.

``choices=`` makes the final reply a next-step decision (``openprogram.decision``): the
finish instruction and the menu are appended, the reply is parsed, bad replies are retried
as recorded model calls, and the resolved choice is returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from openprogram import history as _history
from openprogram.context import Context
from openprogram.scope import (
    current_frame,
    current_runtime,
    current_writer,
    nearest_option,
    use_writer,
)

if TYPE_CHECKING:
    from openprogram.runtime.runtime import Runtime

__all__ = ["agent", "agent_async", "assemble_prompt", "llm"]

Content = str | list[dict[str, Any]]


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _as_blocks(content: Content) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [_text_block(content)]
    if isinstance(content, list):
        return list(content)
    raise TypeError(
        f"content must be a string or a list of content blocks, got {type(content).__name__}"
    )


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    try:
        return json.dumps(value, ensure_ascii=False, indent=2, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def render_history_for_request(context: Context | None) -> str:
    """The rendered DAG history for a request made here ('' without a writer)."""
    writer = current_writer()
    if writer is None:
        return ""
    history_filter = context.history_filter if context is not None else "dag"
    if history_filter is False:
        return ""
    frame = current_frame()
    anchor = frame
    while anchor is not None and anchor.node_id is None:
        anchor = anchor.parent
    nodes = _history.branch_nodes(writer.load_graph(), writer.head_id)
    return _history.render_history(
        nodes,
        frame_node_id=anchor.node_id if anchor is not None else None,
        own_chain=_history.frame_chain_ids(frame),
        render_range=anchor.options.get("render_range") if anchor is not None else None,
        history_filter=history_filter,
        context=context,
        call_id=context.call_id if context is not None else None,
    )


def assemble_prompt(content: Content, context: Context | None) -> Content:
    """Content blocks for one request: context blocks, history, then ``content``.

    ``content`` is returned unchanged when there is no context and no history.
    """
    if not isinstance(content, (str, list)):
        raise TypeError(
            f"content must be a string or a list of content blocks, got {type(content).__name__}"
        )
    blocks: list[dict[str, Any]] = []
    if context is not None:
        for name, value in context.evaluate().items():
            tag = _history.CONTEXT_TAG
            blocks.append(_text_block(f'<{tag} name="{name}">\n{_format_value(value)}\n</{tag}>'))
    past = render_history_for_request(context)
    if past:
        tag = _history.HISTORY_TAG
        blocks.append(_text_block(f"<{tag}>\n{past}\n</{tag}>"))
    if not blocks:
        return content
    return blocks + _as_blocks(content)


def _system_for(system: str | None, instructions: str | None) -> str | None:
    """The call's ``system``, else the nearest method's ``system`` option, else ``instructions``."""
    if system is not None:
        return system
    return nearest_option("system") or instructions


@contextmanager
def _runtime_for(runtime: Runtime | None) -> Iterator[Runtime]:
    if runtime is not None:
        yield runtime
        return
    bound = current_runtime()
    if bound is not None:
        yield bound
        return
    from openprogram.runtime import create_runtime

    created = create_runtime()
    try:
        yield created
    finally:
        created.close()


def _writer_for(context: Context | None) -> Any:
    """Install the Context's explicit session writer for this call (when it has one)."""
    if context is None:
        return nullcontext()
    writer = context.prepare_session()
    if writer is None or writer is current_writer():
        return nullcontext()
    return use_writer(writer)


def _with_menu(content: Content, choices: Any, context: Context | None) -> Content:
    from openprogram.decision import DECISION_FINISH_INSTRUCTION, render_options

    menu = f"{DECISION_FINISH_INSTRUCTION}\n\n{render_options(choices, context=context)}"
    if isinstance(content, str):
        return f"{content}\n\n{menu}"
    return [*content, _text_block(menu)]


def _resolve_toolset(toolset: Any) -> list[Any]:
    """``Runtime.exec(toolset=...)``: registry toolset names, or a list of tool objects."""
    from openprogram.programs.registry import REGISTRY

    if isinstance(toolset, (list, tuple)) and all(not isinstance(t, str) for t in toolset):
        return list(toolset)
    return REGISTRY.resolve(None, toolset=toolset)


def _install_toolset_resolver() -> None:
    from openprogram.runtime.runtime import Runtime

    if Runtime.toolset_resolver is None:
        Runtime.toolset_resolver = staticmethod(_resolve_toolset)


def _run(
    content: Content,
    *,
    model: str | None = None,
    effort: str | None = None,
    tools: Sequence[Any] | None = None,
    toolset: Any = None,
    choices: Any = None,
    response_format: Any = None,
    runtime: Runtime | None = None,
    system: str | None = None,
    instructions: str | None = None,
    context: Context | None = None,
    max_iterations: int = 20,
    timeout_s: float | None = None,
    use_tools: bool = True,
    max_retries: int = 1,
) -> Any:
    from openprogram.runtime.types import Message

    ctx = context if context is not None else Context.current()
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"context must be a Context, got {type(ctx).__name__}")
    with _writer_for(ctx), _runtime_for(runtime) as rt:
        prompt = assemble_prompt(content, ctx)
        if choices is not None:
            prompt = _with_menu(prompt, choices, ctx)
        offered: list[Any] = []
        if use_tools:
            from openprogram.programs.registry import resolve_tools

            _install_toolset_resolver()
            offered = resolve_tools(tools, toolset=toolset)
        sys_prompt = _system_for(system, instructions)
        reply = rt.exec(
            prompt,
            tools=offered,
            response_format=response_format,
            model=model,
            effort=effort,
            system=sys_prompt,
            choices=choices,
            max_iterations=max_iterations,
            timeout_s=timeout_s,
        )
        if choices is None:
            return reply
        from openprogram.decision import decide_from_reply

        asked: list[Any] = [Message(role="user", content=prompt)]

        def retry(message: str) -> str:
            nonlocal reply
            past = [*asked, Message(role="assistant", content=reply)]
            reply = rt.exec(
                message,
                tools=[],
                model=model,
                effort=effort,
                system=sys_prompt,
                choices=choices,
                timeout_s=timeout_s,
                history=past,
            )
            asked[:] = [*past, Message(role="user", content=message)]
            return reply

        return decide_from_reply(
            reply, choices, retry=retry, max_retries=max_retries, context=ctx, runtime=rt
        )


def llm(
    content: Content,
    *,
    model: str | None = None,
    effort: str | None = None,
    response_format: Any = None,
    choices: Any = None,
    runtime: Runtime | None = None,
    system: str | None = None,
    context: Context | None = None,
) -> Any:
    """One model request with no tools (one ``llm`` node); returns the reply text.

    With ``choices`` the reply must be a decision and the resolved choice is returned.
    """
    return _run(
        content,
        model=model,
        effort=effort,
        response_format=response_format,
        choices=choices,
        runtime=runtime,
        system=system,
        context=context,
        max_iterations=1,
        use_tools=False,
    )


def agent(
    content: Content,
    *,
    model: str | None = None,
    effort: str | None = None,
    tools: Sequence[Any] | None = None,
    toolset: Any = None,
    choices: Any = None,
    runtime: Runtime | None = None,
    system: str | None = None,
    context: Context | None = None,
    max_iterations: int = 20,
    timeout_s: float | None = None,
) -> Any:
    """The tool loop: ``tools=None`` offers the available registered tools, ``[]`` none.

    Returns the final reply text, or with ``choices`` the resolved decision.
    """
    return _run(
        content,
        model=model,
        effort=effort,
        tools=tools,
        toolset=toolset,
        choices=choices,
        runtime=runtime,
        system=system,
        context=context,
        max_iterations=max_iterations,
        timeout_s=timeout_s,
    )


async def agent_async(
    content: Content,
    *,
    model: str | None = None,
    effort: str | None = None,
    tools: Sequence[Any] | None = None,
    toolset: Any = None,
    choices: Any = None,
    runtime: Runtime | None = None,
    system: str | None = None,
    context: Context | None = None,
    max_iterations: int = 20,
    timeout_s: float | None = None,
) -> Any:
    """:func:`agent` for async code (runs in a worker thread with this task's context)."""
    return await asyncio.to_thread(
        agent,
        content,
        model=model,
        effort=effort,
        tools=tools,
        toolset=toolset,
        choices=choices,
        runtime=runtime,
        system=system,
        context=context,
        max_iterations=max_iterations,
        timeout_s=timeout_s,
    )
