"""Import libcst and the analyzer without recompiling dataclass methods in every process.

libcst defines about 200 frozen dataclasses, the analyzer a few dozen more.
``dataclasses`` writes each one's generated methods (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` ...) as source text and ``exec``s it: about
1,000 ``compile`` calls, nearly half of ``import libcst`` (0.19 s of 0.42 s CPU on the
2-core test machine), paid by every ``openprogram-lint`` run before it reads a file.

Inside :func:`reuse_dataclass_code`, the ``exec`` that ``dataclasses`` calls looks the
text up in a ``marshal`` file kept in this package's bytecode cache directory (where its
``.pyc`` files go; ``sys.pycache_prefix`` honoured), keyed by the exact source text and
stamped with the interpreter's bytecode magic number, and runs the stored code with the
same globals. A text not found is compiled exactly as ``exec`` compiles it (file name
``<string>``, no inherited ``__future__`` flags), and the file is rewritten with the texts
this import used. The generated functions are the same; only the compiling is skipped.

Nothing is unpickled (``marshal`` holds code and strings, as a ``.pyc`` does); a missing,
foreign or damaged file is ignored; ``PYTHONDONTWRITEBYTECODE`` stops writes. Importing
the same modules outside this context is correct, only slower.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

CACHE_NAME = "dataclass-code.{tag}.marshal"
MAX_ENTRIES = 5_000  # libcst and the analyzer need about 1,100


def cache_file() -> str | None:
    """Where the code objects are kept (None when this interpreter caches no bytecode)."""
    import os
    from importlib.util import cache_from_source

    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    try:
        pyc = cache_from_source(__file__)
    except (NotImplementedError, ValueError):
        return None
    return os.path.join(os.path.dirname(pyc), CACHE_NAME.format(tag=tag))


def _load(path: str) -> dict[str, CodeType]:
    import marshal
    from importlib.util import MAGIC_NUMBER

    try:
        with open(path, "rb") as fh:
            data = marshal.loads(fh.read())  # marshal.load(fh) reads piecemeal: 7x slower
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not (isinstance(data, tuple) and len(data) == 2 and data[0] == MAGIC_NUMBER):
        return {}
    codes = data[1]
    return codes if isinstance(codes, dict) else {}


def _save(path: str, codes: dict[str, CodeType]) -> None:
    import marshal
    import os
    from importlib.util import MAGIC_NUMBER

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(marshal.dumps((MAGIC_NUMBER, codes)))
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


@contextmanager
def reuse_dataclass_code() -> Iterator[None]:
    """Within: dataclasses defined by imports reuse the stored code of their methods."""
    import builtins
    import dataclasses

    path = cache_file()
    # A module global ``exec`` already there, or ``from __future__`` flags in dataclasses
    # (its ``exec`` would compile with them): not the module this was written for.
    if path is None or "exec" in vars(dataclasses) or hasattr(dataclasses, "annotations"):
        yield
        return
    stored = _load(path)
    used: dict[str, CodeType] = {}
    missed = False

    def exec_stored(source: Any, globals: Any = None, locals: Any = None) -> None:
        nonlocal missed
        if type(source) is str:
            code = stored.get(source)
            if code is None:
                missed = True
                code = compile(source, "<string>", "exec", dont_inherit=True)
            used[source] = code
            source = code
        builtins.exec(source, globals, locals)

    # A module global named ``exec`` shadows the builtin for dataclasses' own functions.
    dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
    if missed and not sys.dont_write_bytecode:
        # Other entry points import other modules: keep their texts too (bounded, so the
        # texts of an uninstalled libcst version do not pile up).
        kept = {**stored, **used}
        _save(path, kept if len(kept) <= MAX_ENTRIES else used)
