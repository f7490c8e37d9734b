"""Agentic programming building blocks: ``llm``, ``agent``, ``goal``, ``decision``,
``control_flow``.

``llm``, ``agent`` and ``agent_async`` are the functions of
:mod:`openprogram.agentic_programming.calls`, ``goal`` that of
:mod:`openprogram.agentic_programming.goals`; ``decision`` and ``control_flow`` are
modules. Everything loads lazily so importing the package stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_FUNCTIONS = {"llm", "agent", "agent_async"}
_MODULES = {"decision", "control_flow", "calls"}
__all__ = sorted(_FUNCTIONS | _MODULES | {"goal"})


def __getattr__(name: str) -> Any:
    if name == "goal":
        value = importlib.import_module(f"{__name__}.goals").goal
    elif name in _FUNCTIONS:
        value = getattr(importlib.import_module(f"{__name__}.calls"), name)
    elif name in _MODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
