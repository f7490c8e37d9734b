"""Exception types shared across the engine.

Every error raised to users carries a one-line message that says what went wrong and
what to do. Secrets (API keys) never appear in any message.
"""

from __future__ import annotations


class OpenProgramError(Exception):
    """Base class of every error raised by OpenProgram."""


class RuleViolation(ValueError):
    """A lint rule's finding, raised where the Program is defined (an Agent's
    ``method_options``, ``@agentic_function(...)`` options) or where it uses a value lint
    could not see (a decision menu built at run time, :class:`MenuViolation`): ``str`` is
    lint's code and message, then where (``OP106 'cache' is a tool-only option ... (in
    class Helper of prog.py)``)."""

    def __init__(self, code: str, message: str, where: str) -> None:
        super().__init__(f"{code} {message} (in {where})")
        self.code = code
        self.message = message


class MenuViolation(RuleViolation, TypeError):
    """A decision menu (``decision.make``, ``agent(choices=...)``) that breaks the menu
    and schema grammar, found when the call reads it: lint's OP301–OP306 code and
    message, then where in the menu (``OP303 unsupported schema type list[int]: ... (in
    decision option 'a', schema['n'])``). A ``TypeError``, as a bad menu shape always was."""


class ResponseFormatViolation(RuleViolation, TypeError):
    """A ``response_format`` dict that is not a JSON schema (Python types, as in the
    decision schema shorthand ``{"age": int}``), found when the call reads it: lint's
    OP307 code and message, then where (``(in response_format['age'])``)."""


def defined_in(kind: str, obj: object) -> str:
    """``class Helper of prog.py`` for a class or function of a Program file (whose module
    name is generated), ``class pkg.mod.Helper`` for one of an importable module."""
    import sys

    from openprogram.programs.loader import is_program_module

    module_name = str(getattr(obj, "__module__", ""))
    qualname = str(getattr(obj, "__qualname__", obj))
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if is_program_module(module_name) and path:
        from openprogram.durable.checks import display_path

        return f"{kind} {qualname} of {display_path(path)}"
    return f"{kind} {module_name}.{qualname}"


class Terminated(KeyboardInterrupt):
    """SIGTERM reached an ``openprogram`` command (``docker stop``, systemd, a CI timeout,
    ``openprogram cancel --kill``): it stops as for Ctrl-C, and exits 143."""


def stopped_by(exc: BaseException) -> str:
    """``"SIGTERM"`` for a stop that SIGTERM caused (:class:`Terminated`, or a
    ``RunInterrupted`` it caused), else ``"Ctrl-C"``."""
    terminated = isinstance(exc, Terminated) or getattr(exc, "terminated", False)
    return "SIGTERM" if terminated else "Ctrl-C"


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


class IncompleteReply(ProviderError):
    """The model's reply is not a whole answer: it was cut short (the output token limit)
    or refused (a content filter, or the model declined). Raised instead of returning the
    partial text, which would pass as a complete reply (and truncated JSON could parse).

    ``reason`` is the provider's own word (OpenAI ``finish_reason`` ``length`` /
    ``content_filter``, ``refusal`` for a ``message.refusal``; Anthropic ``stop_reason``
    ``max_tokens`` / ``refusal`` ...), ``outcome`` is ``"truncated"`` or ``"refused"``
    (the table is :data:`openprogram.runtime.providers.stop_reasons.INCOMPLETE`).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        reason: str,
        outcome: str,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status, request_id=request_id)
        self.reason = reason
        self.outcome = outcome


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


#: What follows a traceback's file name in the code a run saved when it started
#: (``keep_original``, :mod:`openprogram.durable.snapshot`).
SAVED_SOURCE = " (saved source)"


def raised_at(exc: BaseException) -> str | None:
    """Where ``exc`` was raised in the user's code: ``prog.py:16 in boom`` — the innermost
    frame of its traceback outside OpenProgram, the standard library and installed
    packages (a path under the working directory relative to it), with `` (saved
    source)`` after it in the code a run saved when it started — or ``None``."""
    import os
    import sysconfig

    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    paths = sysconfig.get_paths()
    skip = tuple(
        {
            here,
            *(
                os.path.abspath(paths[k]) + os.sep
                for k in ("stdlib", "platstdlib", "purelib", "platlib")
                if k in paths
            ),
        }
    )
    found = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = code.co_filename
        if not path.startswith("<") and not os.path.abspath(path).startswith(skip):
            found = (path, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    if found is None:
        return None
    path, line, name = found
    saved = SAVED_SOURCE
    kept = path.endswith(saved)
    path = path[: -len(saved)] if kept else path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        rel = path
    shown = rel if not rel.startswith(os.pardir) else path
    where = f"{shown}:{line} in {name}" if name != "<module>" else f"{shown}:{line}"
    return where + saved if kept else where
