"""Which package a Program file belongs to: Python's rule for ``python -m pkg.mod``.

A file whose folder has an ``__init__.py`` is a module of that package; the package's
parent folders belong to it while they have an ``__init__.py`` too (and a name Python can
import). ``openprogram run pkg/mod.py:main`` imports the file as a module of
``pkg`` — its relative imports (``from .helpers import x``, ``from . import helpers``)
resolve as under ``python -m pkg.mod`` — and ``openprogram-lint`` follows those imports to
the same files.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["package_of"]


def package_of(path: str, exists: Callable[[str], bool] = os.path.isfile) -> tuple[str, str] | None:
    """``("pkg.sub", "/proj")`` for ``/proj/pkg/sub/mod.py``: the dotted package of the
    module file ``path`` and the folder that holds its top package (what ``sys.path``
    needs), or ``None`` when the file's folder is no package. ``exists`` tests whether a
    file exists (the analyzer's records what it probed)."""
    folder = os.path.dirname(os.path.abspath(path))
    parts: list[str] = []
    while True:
        name = os.path.basename(folder)
        if not name.isidentifier() or not exists(os.path.join(folder, "__init__.py")):
            break
        parts.append(name)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    if not parts:
        return None
    return ".".join(reversed(parts)), folder
