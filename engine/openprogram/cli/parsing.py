"""The argparse parser of every OpenProgram program: ``openprogram``, ``openprogram-lint``
and ``openprogram-lsp`` (the analyzer and the language server depend on the engine).

A usage error echoes what was typed (``unrecognized arguments: --stroe
postgresql://app:PASSWORD@db/...``, an invalid value): the message is shown with the
password of every PostgreSQL URL and libpq ``password=`` keyword in it hidden
(``redact_text``). Cheap to import: the store module loads only when there is an error.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

__all__ = ["RedactingParser"]


class RedactingParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors never show a database password. The hidden
    message goes to :meth:`usage_error`: by default argparse's own report (the usage, then
    ``PROG: error: MESSAGE``, exit 2); a program that reports usage errors its own way
    overrides it. Subcommand parsers are made of the same class."""

    def error(self, message: str) -> NoReturn:
        from openprogram.store.postgres import redact_text

        self.usage_error(redact_text(message))

    def usage_error(self, message: str) -> NoReturn:
        """Report ``message`` (its passwords already hidden) and exit."""
        super().error(message)
