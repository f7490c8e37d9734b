"""Parsing ``provider:model_id`` model strings."""

from __future__ import annotations

from dataclasses import dataclass

from openprogram.errors import ConfigError

PROVIDER_PREFIXES = ("anthropic", "openai", "replay", "scripted")
_EXAMPLE = "'openai:gpt-4.1-mini'"


@dataclass(frozen=True)
class ModelString:
    """A parsed model string: ``provider`` prefix and the provider's ``model_id``."""

    provider: str
    model_id: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model_id}"


def _valid() -> str:
    return ", ".join(f"{p}:" for p in PROVIDER_PREFIXES)


def parse_model_string(text: str) -> ModelString:
    """Split ``"openai:gpt-4.1-mini"`` into provider and model id; ConfigError if malformed."""
    if not isinstance(text, str):
        raise ConfigError(f"model must be a string such as {_EXAMPLE}, got {type(text).__name__}")
    value = text.strip()
    provider, sep, model_id = value.partition(":")
    if not sep or not provider:
        raise ConfigError(
            f"malformed model string {text!r}: expected 'provider:model_id' such as "
            f"{_EXAMPLE}; valid prefixes: {_valid()}"
        )
    provider = provider.lower()
    if provider not in PROVIDER_PREFIXES:
        raise ConfigError(
            f"unknown provider {provider!r} in model string {text!r}; valid prefixes: {_valid()}"
        )
    if not model_id.strip() or any(ord(c) < 32 for c in model_id):
        raise ConfigError(
            f"malformed model string {text!r}: the model id after '{provider}:' is "
            f"{'empty' if not model_id.strip() else 'not printable'} (e.g. {_EXAMPLE})"
        )
    return ModelString(provider, model_id.strip())
