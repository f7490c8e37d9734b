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
    """The session store cannot be opened, read or written.

    ``store`` is set when the message starts by naming the store (``store LOCATION:
    reason``, made by :meth:`about`): the store's location as messages show it (a URL
    without its password). A caller that would name the store first (``openprogram-lint
    --store``) then does not name it twice; ``None`` when the message does not start so.
    """

    def __init__(self, message: str, *, store: str | None = None) -> None:
        super().__init__(message)
        self.store = store

    @classmethod
    def about(cls, store: str, reason: str) -> StoreError:
        """``store STORE: reason``: an error that names its store (``store`` already
        redacted, :func:`openprogram.store.postgres.redacted_location`)."""
        return cls(f"store {store}: {reason}", store=store)
