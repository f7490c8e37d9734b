"""The model runtime: ``Runtime``, ``create_runtime`` and the providers.

rt = create_runtime()                 # OPENPROGRAM_MODEL, pyproject, or API key env vars
rt = Runtime("openai:gpt-4.1-mini")   # or anthropic:..., scripted:echo, replay:run.jsonl
text = rt.exec("Say hi", tools=[my_function])
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from openprogram.errors import ConfigError, IncompleteReply, ProviderError, ReplayMismatch

if TYPE_CHECKING:
    from openprogram.runtime.cassette import (
        CassetteWriter,
        load_cassette,
        load_session,
        write_cassette,
    )
    from openprogram.runtime.config import detect_model
    from openprogram.runtime.model_string import (
        PROVIDER_PREFIXES,
        ModelString,
        parse_model_string,
    )
    from openprogram.runtime.providers import (
        AnthropicProvider,
        BlockedRequestError,
        OpenAIProvider,
        Provider,
        ReplayProvider,
        ScriptedProvider,
        ScriptExhausted,
    )
    from openprogram.runtime.retry import RetryPolicy
    from openprogram.runtime.runtime import (
        ExecResult,
        MaxIterationsExceeded,
        Runtime,
        ToolCallRecord,
        format_tool_result,
        normalize_response_format,
    )
    from openprogram.runtime.types import (
        Message,
        ModelRequest,
        ModelResponse,
        ToolCall,
        ToolSpec,
        Usage,
    )

#: Where each name of the package lives: imported on first use (PEP 562), so a process
#: that only needs a light submodule (``paused_loops``, ``types``, ``cassette``: the run
#: commands, the store readers) never loads the providers and their HTTP client.
_LAZY = {
    "cassette": ("CassetteWriter", "load_cassette", "load_session", "write_cassette"),
    "config": ("detect_model",),
    "model_string": ("PROVIDER_PREFIXES", "ModelString", "parse_model_string"),
    "providers": (
        "AnthropicProvider",
        "BlockedRequestError",
        "OpenAIProvider",
        "Provider",
        "ReplayProvider",
        "ScriptedProvider",
        "ScriptExhausted",
    ),
    "retry": ("RetryPolicy",),
    "runtime": (
        "ExecResult",
        "MaxIterationsExceeded",
        "Runtime",
        "ToolCallRecord",
        "format_tool_result",
        "normalize_response_format",
    ),
    "types": ("Message", "ModelRequest", "ModelResponse", "ToolCall", "ToolSpec", "Usage"),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def create_runtime(model: str | None = None, **kwargs: Any) -> Runtime:
    """A :class:`Runtime` for ``model``, or for the autodetected model when it is None.

    Autodetection: ``OPENPROGRAM_MODEL``; ``[tool.openprogram] model`` in the nearest
    pyproject.toml; ``OPENAI_API_KEY`` -> ``openai:gpt-4.1-mini``; ``ANTHROPIC_API_KEY``
    -> ``anthropic:claude-sonnet-4-5``; otherwise a ConfigError saying how to configure.

    ``OPENPROGRAM_RECORD_TO=run.jsonl`` appends every request of the runtime to that
    cassette (replay it later with ``OPENPROGRAM_MODEL=replay:run.jsonl``).
    """
    from openprogram.runtime.cassette import CassetteWriter
    from openprogram.runtime.config import detect_model
    from openprogram.runtime.runtime import Runtime

    record_to = os.environ.get("OPENPROGRAM_RECORD_TO")
    if record_to and "record_to" not in kwargs:
        kwargs["record_to"] = CassetteWriter(record_to, append=True)
    if model is None and kwargs.get("provider") is None:
        model = detect_model()
    return Runtime(model, **kwargs)


__all__ = [
    "PROVIDER_PREFIXES",
    "AnthropicProvider",
    "BlockedRequestError",
    "CassetteWriter",
    "ConfigError",
    "ExecResult",
    "IncompleteReply",
    "MaxIterationsExceeded",
    "Message",
    "ModelRequest",
    "ModelResponse",
    "ModelString",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "ReplayMismatch",
    "ReplayProvider",
    "RetryPolicy",
    "Runtime",
    "ScriptExhausted",
    "ScriptedProvider",
    "ToolCall",
    "ToolCallRecord",
    "ToolSpec",
    "Usage",
    "create_runtime",
    "detect_model",
    "format_tool_result",
    "load_cassette",
    "load_session",
    "normalize_response_format",
    "parse_model_string",
    "write_cassette",
]
