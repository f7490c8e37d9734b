"""Model providers: ``openai:``, ``anthropic:``, ``scripted:`` and ``replay:``."""

from __future__ import annotations

from openprogram.runtime.providers.anthropic import AnthropicProvider
from openprogram.runtime.providers.base import Provider
from openprogram.runtime.providers.openai import OpenAIProvider
from openprogram.runtime.providers.replay import ReplayProvider
from openprogram.runtime.providers.scripted import (
    BlockedRequestError,
    ScriptedProvider,
    ScriptExhausted,
)

__all__ = [
    "AnthropicProvider",
    "BlockedRequestError",
    "OpenAIProvider",
    "Provider",
    "ReplayProvider",
    "ScriptExhausted",
    "ScriptedProvider",
]
