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

``reuse_dataclass_code(attrs=True)`` does the same for the classes ``attrs`` makes: the
language server's protocol types (``lsprotocol``, about 550 classes) have their methods
written as text by ``attrs`` and compiled one by one, about half of the server's start.
Its ``compile`` calls look up the (file name, mode, flags, text) they are given, and
compile what is not found with the ``__future__`` flags of ``attrs``'s own module, as its
call does. A text with a generated ``__hash__`` is always compiled: it holds the hash of a
string, which differs from process to process.

Nothing is unpickled (``marshal`` holds code and strings, as a ``.pyc`` does); a missing,
foreign or damaged file is ignored; ``PYTHONDONTWRITEBYTECODE`` stops writes. Importing
the same modules outside this context is correct, only slower. :func:`load_modules` is how
the linter, the language server and its analysis worker import what they need.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import CodeType
    from typing import Any

CACHE_NAME = "dataclass-code.{tag}.marshal"
MAX_ENTRIES = 5_000  # libcst and the analyzer need about 1,100, the language server 1,700


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


def _load(path: str) -> dict[Any, CodeType]:
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


def _save(path: str, codes: dict[Any, CodeType]) -> None:
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


def load_modules(*names: str, attrs: bool = False) -> None:
    """Import ``names`` once with the stored generated code (``attrs``: of ``attrs`` classes
    too) and the cyclic GC paused (its passes over libcst's thousands of new classes are a
    tenth of the import), then freeze what was loaded: it lives as long as the process."""
    import gc
    import importlib

    enabled = gc.isenabled()
    gc.disable()
    try:
        with reuse_dataclass_code(attrs=attrs):
            for name in names:
                importlib.import_module(name)
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _future_flags(module: Any) -> int:
    """The ``__future__`` flags a ``compile`` call in ``module`` inherits."""
    import __future__

    flags = 0
    for value in vars(module).values():
        if isinstance(value, __future__._Feature):
            flags |= value.compiler_flag
    return flags


#: Held inside :func:`reuse_dataclass_code`: its patches are the process's, so a thread
#: entering while another is inside (runs started from several threads) waits for it
#: instead of patching over its patch and removing it under it. Reentrant: an import
#: inside may enter again (and finds the patch there: it changes nothing).
_PATCHING = threading.RLock()


@contextmanager
def reuse_dataclass_code(*, attrs: bool = False) -> Iterator[None]:
    """Within: dataclasses defined by imports reuse the stored code of their methods;
    ``attrs``: so do the classes ``attrs`` makes (which imports ``attrs``). One thread at
    a time (:data:`_PATCHING`)."""
    with _PATCHING:
        yield from _reuse_dataclass_code(attrs)


def _reuse_dataclass_code(attrs: bool) -> Iterator[None]:
    import builtins
    import dataclasses

    # A module global ``exec`` already there, or ``from __future__`` flags in dataclasses
    # (its ``exec`` would compile with them): not the module this was written for.
    patch_dataclasses = "exec" not in vars(dataclasses) and not hasattr(dataclasses, "annotations")
    attrs_make: Any = None
    if attrs:
        import attr._make as attrs_make

        # attrs compiles its methods' text with ``compile(script, filename, "exec")`` in
        # this module; a module global ``compile`` there already: not the one known here.
        if "compile" in vars(attrs_make) or not hasattr(attrs_make, "_compile_and_eval"):
            attrs_make = None
    path = cache_file()
    if path is None or not (patch_dataclasses or attrs_make is not None):
        yield
        return
    attrs_flags = 0 if attrs_make is None else _future_flags(attrs_make)
    stored = _load(path)
    used: dict[Any, CodeType] = {}
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

    def compile_stored(
        source: Any,
        filename: Any,
        mode: Any,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
    ) -> Any:
        nonlocal missed
        if not dont_inherit:  # what the call in attrs's module inherits, not this module's
            flags |= attrs_flags
        if (
            type(source) is not str
            or type(filename) is not str
            or optimize != -1
            # a generated ``__hash__`` holds ``hash()`` of a string: another text in every
            # process (hash randomization), never found again
            or "def __hash__" in source
        ):
            return builtins.compile(source, filename, mode, flags, True, optimize)
        key = (filename, mode, flags, source)
        code = stored.get(key)
        if code is None:
            missed = True
            code = builtins.compile(source, filename, mode, flags, True)
        used[key] = code
        return code

    # A module global named ``exec`` (``compile``) shadows the builtin for the module's own
    # functions.
    if patch_dataclasses:
        dataclasses.exec = exec_stored  # type: ignore[attr-defined]
    if attrs_make is not None:
        attrs_make.compile = compile_stored
    try:
        yield
    finally:
        if patch_dataclasses:
            del dataclasses.exec  # type: ignore[attr-defined]
        if attrs_make is not None:
            del attrs_make.compile
    if missed and not sys.dont_write_bytecode:
        # Other entry points import other modules: keep their texts too (bounded, so the
        # texts of an uninstalled libcst version do not pile up).
        kept = {**stored, **used}
        _save(path, kept if len(kept) <= MAX_ENTRIES else used)
