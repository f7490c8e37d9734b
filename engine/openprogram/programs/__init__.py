"""The shared tool registry (SPEC §2.4).

``@function`` registers a plain function as a model-callable tool; ``Agent`` methods with
``method_options = {"m": {"tool": True}}`` land in the same registry. See
:mod:`openprogram.programs.registry` for the options and dispatch rules.

Names load lazily (this package is imported by the runtime for ``function_tools``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "DEFAULT_CACHE_TTL",
    "DEFAULT_HEAD_RATIO",
    "DEFAULT_MAX_RESULT_CHARS",
    "REGISTRY",
    "Tool",
    "ToolError",
    "ToolOptions",
    "ToolRegistry",
    "approvals",
    "channel",
    "current_channel",
    "function",
    "isolated_registry",
    "register_tool",
    "resolve_tools",
    "truncate_result",
]
_REGISTRY_NAMES = frozenset(__all__)


def __getattr__(name: str) -> Any:
    if name in _REGISTRY_NAMES:
        value = getattr(importlib.import_module("openprogram.programs.registry"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover
    from openprogram.programs.registry import (
        DEFAULT_CACHE_TTL,
        DEFAULT_HEAD_RATIO,
        DEFAULT_MAX_RESULT_CHARS,
        REGISTRY,
        Tool,
        ToolError,
        ToolOptions,
        ToolRegistry,
        approvals,
        channel,
        current_channel,
        function,
        isolated_registry,
        register_tool,
        resolve_tools,
        truncate_result,
    )
