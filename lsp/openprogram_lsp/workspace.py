"""Open documents whose lines are the client's lines, and which folder a path belongs to.

pygls splits a document with ``str.splitlines``, which also breaks at a form feed (a PEP 8
page break), a vertical tab, U+2028 and a few more characters that are not line breaks
for an LSP client or for Python. After such a character every incremental edit landed on
the wrong line (the server's copy of the document diverged from the editor's) and every
position the server sent was off by one line. Documents here split as the client does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pygls.workspace import TextDocument, Workspace

from .positions import split_lines


class ClientLinesDocument(TextDocument):
    """A pygls ``TextDocument`` whose ``lines`` break only at ``\\r\\n``, ``\\r``, ``\\n``
    (computed once per text, not on every access)."""

    _lines_of: str | None = None
    _lines: tuple[str, ...] = ()

    @property
    def lines(self) -> Sequence[str]:
        source = self.source
        if source is not self._lines_of:
            self._lines = tuple(split_lines(source))
            self._lines_of = source
        return self._lines


class ClientLinesWorkspace(Workspace):
    """The pygls workspace, creating ``ClientLinesDocument`` documents."""

    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return ClientLinesDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def use_client_lines(workspace: Workspace) -> None:
    """Make ``workspace`` (the one pygls builds at ``initialize``, before any document is
    opened) create ``ClientLinesDocument`` documents. It adds no state, so only the
    class changes."""
    if type(workspace) is Workspace:
        workspace.__class__ = ClientLinesWorkspace


def innermost_folder(path: str | Path | None, folders: list[Path]) -> Path | None:
    """The innermost of ``folders`` holding ``path`` (None if none does), real paths
    compared (a symlink is where it points). The one rule of what belongs to a folder: a
    document (its settings, its lenses) and a run (by its Program file: the Runs view,
    ``showRuns``, the folder Resume runs in)."""
    if not path:
        return None
    real = os.path.realpath(path)
    best: Path | None = None
    for folder in folders:
        base = os.path.realpath(folder)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            if best is None or len(str(folder)) > len(str(best)):
                best = folder
    return best
