"""OpenProgram: Programs that call language models, run as resumable workflows.

Public names are imported lazily so that ``import openprogram`` stays cheap and pure
contract modules (option table, schema grammar) can be used without the runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openprogram._version import __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Agent": "openprogram.agents",
    "ChatAgent": "openprogram.turns",
    "TextAgent": "openprogram.programs.text_agent",
    "agent": "openprogram.agentic_programming.calls",
    "agentic_function": "openprogram.scoped_function",
    "RunPaused": "openprogram.durable",
    "resumable": "openprogram.durable",
    "agent_async": "openprogram.agentic_programming.calls",
    "llm": "openprogram.agentic_programming.calls",
    "goal": "openprogram.agentic_programming.goals",
    "Context": "openprogram.context",
    "DecisionError": "openprogram.decision",
    "Runtime": "openprogram.runtime",
    "create_runtime": "openprogram.runtime",
    "step": "openprogram.durable",
    "workflow": "openprogram.durable",
    "parallel": "openprogram.durable",
    "TurnRequest": "openprogram.turns",
    "TurnResult": "openprogram.turns",
    "TurnCancelled": "openprogram.turns",
    "validate_and_retry": "openprogram.agentic_programming.control_flow",
    "route": "openprogram.agentic_programming.control_flow",
    "conditional": "openprogram.agentic_programming.control_flow",
    "repeat_until": "openprogram.agentic_programming.control_flow",
}
_SUBMODULES = {"decision", "store", "programs", "agentic_programming"}

__all__ = ["__version__", *sorted(_EXPORTS), *sorted(_SUBMODULES)]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        module = importlib.import_module(f"openprogram.{name}")
        globals()[name] = module
        return module
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'openprogram' has no attribute {name!r}")
    value = getattr(importlib.import_module(target), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover - what type checkers and IDEs see
    from openprogram import agentic_programming as agentic_programming
    from openprogram import decision as decision
    from openprogram import programs as programs
    from openprogram import store as store
    from openprogram.agentic_programming.calls import agent as agent
    from openprogram.agentic_programming.calls import agent_async as agent_async
    from openprogram.agentic_programming.calls import llm as llm
    from openprogram.agentic_programming.control_flow import conditional as conditional
    from openprogram.agentic_programming.control_flow import repeat_until as repeat_until
    from openprogram.agentic_programming.control_flow import route as route
    from openprogram.agentic_programming.control_flow import (
        validate_and_retry as validate_and_retry,
    )
    from openprogram.agentic_programming.goals import goal as goal
    from openprogram.agents import Agent as Agent
    from openprogram.context import Context as Context
    from openprogram.decision import DecisionError as DecisionError
    from openprogram.durable import RunPaused as RunPaused
    from openprogram.durable import parallel as parallel
    from openprogram.durable import resumable as resumable
    from openprogram.durable import step as step
    from openprogram.durable import workflow as workflow
    from openprogram.programs.text_agent import TextAgent as TextAgent
    from openprogram.runtime import Runtime as Runtime
    from openprogram.runtime import create_runtime as create_runtime
    from openprogram.scoped_function import agentic_function as agentic_function
    from openprogram.turns import ChatAgent as ChatAgent
    from openprogram.turns import TurnCancelled as TurnCancelled
    from openprogram.turns import TurnRequest as TurnRequest
    from openprogram.turns import TurnResult as TurnResult
