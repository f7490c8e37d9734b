"""Exception types shared across the engine.

Every error raised to users carries a one-line message that says what went wrong and
what to do. Secrets (API keys) never appear in any message.
"""

from __future__ import annotations


class OpenProgramError(Exception):
    """Base class of every error raised by OpenProgram."""


class ConfigError(OpenProgramError, ValueError):
    """Bad or missing configuration (model string, provider, base URL, store path)."""


class ProviderError(OpenProgramError):
    """A model provider request failed after retries.

    ``provider``, ``status`` and ``request_id`` name the failing request.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.request_id = request_id


class ReplayMismatch(OpenProgramError):
    """A request made during replay differs from the recorded one (message holds a diff)."""


class StoreError(OpenProgramError):
    """The session store cannot be opened, read or written."""
