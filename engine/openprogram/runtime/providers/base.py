"""The ``Provider`` protocol every model backend implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from openprogram.runtime.types import ModelRequest, ModelResponse


@runtime_checkable
class Provider(Protocol):
    """A model backend: turns one :class:`ModelRequest` into one :class:`ModelResponse`.

    ``name`` is the model-string prefix (``openai``, ``anthropic``, ``scripted``,
    ``replay``); ``model_id`` is the model used when a request does not name one.
    """

    name: str
    model_id: str

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the reply (blocking)."""
        ...

    async def acomplete(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` and return the reply."""
        ...

    def close(self) -> None:
        """Release connections; the provider must not be used afterwards."""
        ...
