"""``llm()``, ``agent()`` and ``agent_async()`` (SPEC §2.2).

Every call assembles one prompt and runs it on a :class:`~openprogram.runtime.Runtime`:

* **runtime**: ``runtime=`` (or the Agent's), else the one bound by the enclosing call,
  else one ``create_runtime()`` for this outermost call, closed again when it returns;
* **system**: ``system=``, else the nearest enclosing method's ``system`` option, else the
  Agent's ``instructions``;
* **content**: the Context's blocks and provider values (providers run at every model
  request, tool-loop iterations included; a failing provider fails that request), then
  the session history rendered by :mod:`openprogram.history` when a session writer is in
  effect, then ``content``.

``choices=`` makes the final reply a next-step decision: this is ``Runtime.exec(choices=)``
(the finish instruction and the menu are appended, the reply is parsed, a bad reply is
retried once as a recorded model call, and the resolved choice is returned).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from openprogram import history as _history
from openprogram.branches import current_forks
from openprogram.context import Context
from openprogram.scope import (
    current_frame,
    current_writer,
    nearest_option,
    runtime_for_call,
    runtime_scope,
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
    return _history.render_history(
        writer.load_branch(),
        frame_node_id=anchor.node_id if anchor is not None else None,
        own_chain=_history.frame_chain_ids(frame),
        render_range=anchor.options.get("render_range") if anchor is not None else None,
        history_filter=history_filter,
        context=context,
        call_id=context.call_id if context is not None else None,
        viewer_forks=current_forks(),
    )


def assemble_prompt(content: Content, context: Context | None) -> Content:
    """Content blocks for one request: context blocks, history, then ``content``.

    ``content`` is returned unchanged when there is no context and no history.
    """
    return compose_prompt(content, context, render_history_for_request(context), None)


def compose_prompt(
    content: Content, context: Context | None, history: str, menu: str | None
) -> Content:
    """The user message of a request: the Context's blocks and provider values (providers
    run now), the rendered ``history``, ``content``, then the decision ``menu``."""
    if not isinstance(content, (str, list)):
        raise TypeError(
            f"content must be a string or a list of content blocks, got {type(content).__name__}"
        )
    blocks: list[dict[str, Any]] = []
    if context is not None:
        for name, value in context.evaluate().items():
            tag = _history.CONTEXT_TAG
            blocks.append(_text_block(f'<{tag} name="{name}">\n{_format_value(value)}\n</{tag}>'))
    if history:
        tag = _history.HISTORY_TAG
        blocks.append(_text_block(f"<{tag}>\n{history}\n</{tag}>"))
    if not blocks:
        if menu is None:
            return content
        if isinstance(content, str):
            return f"{content}\n\n{menu}"
        return [*content, _text_block(menu)]
    out = blocks + _as_blocks(content)
    if menu is not None:
        out.append(_text_block(menu))
    return out


def _system_for(system: str | None, instructions: str | None) -> str | None:
    """The call's ``system``, else the nearest method's ``system`` option, else ``instructions``."""
    if system is not None:
        return system
    return nearest_option("system") or instructions


def _writer_for(context: Context | None) -> Any:
    """Install the Context's explicit session writer for this call (when it has one)."""
    if context is None:
        return nullcontext()
    writer = context.prepare_session()
    if writer is None or writer is current_writer():
        return nullcontext()
    return use_writer(writer)


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
) -> Any:
    """One ``llm``/``agent`` call: resolve the runtime and tools, run ``Runtime.exec``.

    Runtime: ``runtime`` (the call argument, or the Agent's), else the enclosing call's,
    else one created for this outermost call and closed when it returns.
    """
    ctx = context if context is not None else Context.current()
    if ctx is not None and not isinstance(ctx, Context):
        raise TypeError(f"context must be a Context, got {type(ctx).__name__}")
    with _writer_for(ctx), runtime_scope():
        rt = runtime if runtime is not None else runtime_for_call(model)
        assert rt is not None  # runtime_scope() always provides one
        offered: list[Any] = []
        if use_tools:
            from openprogram.programs.registry import resolve_tools

            offered = resolve_tools(tools, toolset=toolset)
        return rt.exec(
            content,
            tools=offered,
            response_format=response_format,
            model=model,
            effort=effort,
            system=_system_for(system, instructions),
            choices=choices,
            max_iterations=max_iterations,
            timeout_s=timeout_s,
            context=ctx if ctx is not None else Context(),
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
