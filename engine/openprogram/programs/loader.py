"""Loading Program entries: ``FILE.py:ENTRY`` or ``MODULE:ENTRY``.

A Program module lists its public entries in ``PROGRAM_ENTRIES`` — a list/tuple of
module-level names, or of the functions / bound ``Agent`` methods themselves (an
``Agent``'s staticmethod or classmethod too: ``entry = Bot.method``).
``__agent_options__`` on an entry (a dict) gives its metadata; for a bound method the
class's ``method_options`` (merged along the MRO) apply too. An entry is *resumable* when
``resumable`` is true in those options.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import threading
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.contract import entries
from openprogram.contract.packages import package_of
from openprogram.errors import OpenProgramError, RuleViolation, raised_at

__all__ = [
    "EntryError",
    "ProgramEntry",
    "entry_for",
    "list_entries",
    "load_entry",
    "load_program",
    "parse_entry_ref",
    "scan_entries",
]


class EntryError(OpenProgramError, ValueError):
    """A bad entry reference: file/module not found, or the name is not an entry."""


@dataclass(frozen=True)
class ProgramEntry:
    """One runnable entry of a Program module."""

    name: str  # the module-level name (as listed in PROGRAM_ENTRIES)
    target: Callable[..., Any]  # the function or bound method to call
    module: types.ModuleType
    path: str | None  # absolute source file
    qualname: str  # function qualname: "report" or "Reporter.report"
    instance: Any | None = None  # the Agent instance of a bound method
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def resumable(self) -> bool:
        return bool(self.options.get("resumable"))

    @property
    def function(self) -> Callable[..., Any]:
        """The underlying function (unbound)."""
        return getattr(self.target, "__func__", self.target)

    @property
    def source_module(self) -> types.ModuleType:
        """The module whose source defines the entry's function: the Program's own, or a
        module it imports (``class MyBot(BaseBot)`` inheriting a resumable ``BaseBot.go``
        from ``basebot.py``). What the pre-run check reads and ``keep_original`` saves."""
        inner = inspect.unwrap(self.function)
        found = sys.modules.get(getattr(inner, "__module__", None) or "")
        return found if found is not None and getattr(found, "__file__", None) else self.module

    @property
    def source_path(self) -> str | None:
        """The absolute file of :attr:`source_module` (the Program's :attr:`path` when the
        function is its own)."""
        module = self.source_module
        if module is self.module:
            return self.path
        return str(Path(module.__file__).resolve()) if module.__file__ else self.path

    @property
    def receiver_class(self) -> type | None:
        """The class a classmethod entry is bound to (``go = Child.go`` binds ``Child``,
        also where ``Base`` defines ``go``), else ``None``."""
        receiver = getattr(self.target, "__self__", None)
        return receiver if inspect.isclass(receiver) else None


def parse_entry_ref(ref: str) -> tuple[str, str, str]:
    """Split ``FILE.py:ENTRY`` / ``MODULE:ENTRY`` into ``(kind, location, entry)``."""
    location, sep, entry = ref.rpartition(":")
    if not sep or not location or not entry:
        raise EntryError(
            f"bad entry {ref!r}: expected FILE.py:ENTRY or MODULE:ENTRY (e.g. "
            "examples/report_pipeline.py:build_report)"
        )
    if location.endswith(".py") or os.sep in location or "/" in location:
        return "file", location, entry
    return "module", location, entry


def _where(exc: BaseException) -> str:
    """`` (at prog.py:3)``: the line of the user's code that raised ``exc``, if any."""
    line = raised_at(exc)
    return f" (at {line})" if line is not None else ""


def load_program(kind: str, location: str) -> types.ModuleType:
    """Import a Program from a file path (its folder joins ``sys.path``) or a module name."""
    if kind == "module":
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # like `python -m`: the project folder imports
        try:
            return importlib.import_module(location)
        except ImportError as exc:
            raise EntryError(
                f"cannot import Program module {location!r}: {exc}{_where(exc)}"
            ) from None
        except SyntaxError as exc:
            raise EntryError(_syntax_error(exc, None, location)) from None
        except (Exception, SystemExit) as exc:  # the module's own top-level code raised (or exited)
            raise EntryError(
                f"cannot import Program module {location!r}: importing it raised {exc!r}"
                + _where(exc)
            ) from None
    path = Path(location).resolve()
    if not path.is_file():
        raise EntryError(f"{location}: Program file not found")
    with _file_lock(path):  # one thread imports it; the others then see the whole module
        return _load_file(path, location)


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles the file's current text on every load. A cached ``.pyc`` is checked only
    against the source's size and its modification time in whole seconds, so an edit of
    the same size within the same second would run the old code, although the signature
    ``_load_file`` compares (nanoseconds) saw the change."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


_FILE_LOCKS: dict[Path, threading.RLock] = {}
_FILE_LOCKS_GUARD = threading.Lock()


def _file_lock(path: Path) -> threading.RLock:
    with _FILE_LOCKS_GUARD:
        return _FILE_LOCKS.setdefault(path, threading.RLock())


#: The start of the module name a Program file is loaded under (its stem and a digest of
#: its path follow; a file in a package is a submodule of it: ``pkg._openprogram_program_mod_…``).
PROGRAM_MODULE_PREFIX = "_openprogram_program_"


def is_program_module(name: str) -> bool:
    """Whether ``name`` is the generated name of a Program file loaded by path."""
    return name.rpartition(".")[2].startswith(PROGRAM_MODULE_PREFIX)


def _syntax_error(exc: SyntaxError, path: Path | None, location: str) -> str:
    """``FILE:LINE: syntax error: ...`` naming the file that has the error: the Program as
    given (``location``), or a module it imports (a helper next to it)."""
    if path is not None and (not exc.filename or Path(exc.filename).resolve() == path):
        return f"{location}{_at_line(exc, path)}: syntax error: {exc.msg}"
    if not exc.filename:
        return f"{location}: syntax error: {exc.msg}"
    imported = f" (imported by {location})" if path is not None else ""
    where = _at_line(exc, Path(exc.filename))
    return f"{exc.filename}{where}: syntax error: {exc.msg}{imported}"


def _at_line(exc: SyntaxError, path: Path) -> str:
    """``:LINE`` of a syntax error in ``path``; Python gives none for a NUL byte (``source
    code string cannot contain null bytes``): the line of the file's first one, and for
    an error it gives no line of (a bad coding cookie: line 0) nothing."""
    if exc.lineno:
        return f":{exc.lineno}"
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    nul = data.find(b"\0")
    return "" if nul < 0 else ":" + str(data.count(b"\n", 0, nul) + 1)


def _load_file(path: Path, location: str) -> types.ModuleType:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    name = f"{PROGRAM_MODULE_PREFIX}{path.stem}_{digest}"
    package = package_of(str(path))
    if package is not None:
        # a module of its package, as under ``python -m pkg.mod``: its relative imports
        # resolve (``from .helpers import x``), against the package found on ``sys.path``
        # from the folder holding it; the generated name keeps two files of one stem apart
        name = f"{package[0]}.{name}"
        if package[1] not in sys.path:
            sys.path.insert(0, package[1])
    st = path.stat()
    signature = (st.st_mtime_ns, st.st_size)
    cached = sys.modules.get(name)
    if cached is not None and getattr(cached, "__openprogram_signature__", None) == signature:
        return cached  # unchanged on disk since it was loaded
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path, loader=_SourceLoader(name, str(path)))
    if spec is None or spec.loader is None:  # pragma: no cover - not a Python file
        raise EntryError(f"{location}: cannot load as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[name]
        raise EntryError(_syntax_error(exc, path, location)) from None
    except (Exception, SystemExit) as exc:  # SystemExit: not the Program's exit code for the CLI
        del sys.modules[name]
        # a rule's rejection (an Agent's method_options) reads as lint prints it
        said = str(exc) if isinstance(exc, RuleViolation) else repr(exc)
        raise EntryError(f"{location}: importing the Program failed: {said}{_where(exc)}") from None
    module.__openprogram_signature__ = signature  # type: ignore[attr-defined]  # complete now
    return module


def _merged_method_options(cls: type) -> dict[str, dict[str, Any]]:
    from openprogram.options import merge_method_options

    return merge_method_options(
        klass.__dict__.get("method_options") for klass in reversed(cls.__mro__)
    )


def _entry(name: str, obj: Any, module: types.ModuleType) -> ProgramEntry:
    path = getattr(module, "__file__", None)
    abspath = str(Path(path).resolve()) if path else None
    options: dict[str, Any] = {}
    instance = None
    receiver = getattr(obj, "__self__", None)
    if (
        receiver is not None
        and hasattr(obj, "__func__")
        and not inspect.isclass(receiver)
        and not isinstance(receiver, types.ModuleType)
    ):  # a bound method (plain or an Agent's scoped method)
        instance = receiver
        func = obj.__func__
        method_name = func.__name__
        options.update(_merged_method_options(type(instance)).get(method_name, {}))
        qualname = getattr(func, "__qualname__", f"{type(instance).__name__}.{method_name}")
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        func = getattr(obj, "__func__", obj)
        qualname = func.__qualname__
    elif _is_scoped(obj):  # an Agent's staticmethod or classmethod (no instance)
        func = obj.__func__
        qualname = func.__qualname__
        options.update(obj.method_options)
    else:
        raise _refused(module, entries.not_a_function(name, type(obj).__name__))
    inner = inspect.unwrap(func)
    if inner.__name__ == "<lambda>":
        raise _refused(module, entries.lambda_entry(name))
    if inspect.isgeneratorfunction(inner) or inspect.isasyncgenfunction(inner):
        raise _refused(module, entries.generator(name))
    if inspect.iscoroutinefunction(inner):
        raise _refused(module, entries.async_function(name))
    for holder in (obj, func, inner):
        extra = getattr(holder, "__agent_options__", None)
        if extra is None:
            continue
        # the check lint reports as OP405, so a run refuses what lint flags
        problems = entries.agent_options_problems(name, extra, inspect.signature(func))
        if problems:
            code, message, _path = problems[0]
            raise _refused(module, (code, message))
        options.update(extra)
    return ProgramEntry(
        name=name,
        target=obj,
        module=module,
        path=abspath,
        qualname=qualname,
        instance=instance,
        options=options,
    )


def _is_scoped(obj: Any) -> bool:
    from openprogram.agents import BoundScoped  # agents imports the tool registry

    return isinstance(obj, BoundScoped)


def entry_for(name: str, obj: Any, module: types.ModuleType) -> ProgramEntry:
    """``obj`` (a function or bound method of ``module``) as an entry named ``name``,
    whether or not ``PROGRAM_ENTRIES`` lists it (direct durable calls use this)."""
    return _entry(name, obj, module)


def scan_entries(
    module: types.ModuleType,
) -> tuple[dict[str, ProgramEntry], dict[str, EntryError]]:
    """The entries listed by ``PROGRAM_ENTRIES`` that can run, and the refusal of each
    listed name that ``openprogram-lint`` refuses (OP402-OP405, same code and message:
    :mod:`openprogram.contract.entries`), in list order. A problem of the list itself
    (OP401: it is not a list) concerns every entry: it raises :class:`EntryError`."""
    listed = getattr(module, "PROGRAM_ENTRIES", None)
    if listed is None:
        return {}, {}
    if not isinstance(listed, (list, tuple)):
        raise _refused(module, entries.not_a_list())
    by_identity = {id(v): k for k, v in vars(module).items() if not k.startswith("__")}
    out: dict[str, ProgramEntry] = {}
    refused: dict[str, EntryError] = {}
    for item in listed:
        if isinstance(item, str):
            name = item
            if item not in vars(module):
                refused.setdefault(name, _refused(module, entries.undefined(item)))
                continue
            obj = getattr(module, item)
        else:
            found = by_identity.get(id(item))
            name = str(found or getattr(item, "__name__", repr(item)))
            obj = item
            if found is None and name == "<lambda>":
                refused.setdefault(name, _refused(module, entries.anonymous_lambda()))
                continue
        if name in out or name in refused:
            out.pop(name, None)
            refused.setdefault(name, _refused(module, entries.duplicate(name)))
            continue
        if name.startswith("_"):
            refused[name] = _refused(module, entries.private(name))
            continue
        try:
            out[name] = _entry(name, obj, module)
        except EntryError as exc:
            refused[name] = exc
    return out, refused


def list_entries(module: types.ModuleType) -> dict[str, ProgramEntry]:
    """The entries listed by ``PROGRAM_ENTRIES`` (empty when the module lists none). A list
    that ``openprogram-lint`` refuses (OP401-OP405) is refused here with the same code and
    message: the first refusal of :func:`scan_entries` raises."""
    out, refused = scan_entries(module)
    if refused:
        raise next(iter(refused.values()))
    return out


def _refused(module: types.ModuleType, problem: entries.Problem) -> EntryError:
    """The error of an entry rule ``problem`` (code, message), located as lint locates it:
    ``prog.py: OP402 entry 'mian' names nothing defined in this module``."""
    from openprogram.durable.checks import display_path

    path = getattr(module, "__file__", None)
    code, message = problem
    return EntryError(f"{display_path(path) if path else module.__name__}: {code} {message}")


def load_entry(ref: str) -> ProgramEntry:
    """Load the entry named by ``ref``; :class:`EntryError` lists the entries on a miss."""
    kind, location, name = parse_entry_ref(ref)
    module = load_program(kind, location)
    # only a problem of this entry (or of the list as a whole) refuses it: another
    # entry's is openprogram-lint's to report
    entries, refused = scan_entries(module)
    if name in entries:
        return entries[name]
    if name in refused:
        raise refused[name]
    listed = ", ".join(sorted(entries)) or "none (the module has no PROGRAM_ENTRIES)"
    raise EntryError(f"{location}: {name!r} is not in PROGRAM_ENTRIES; entries: {listed}")
