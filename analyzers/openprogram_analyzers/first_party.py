"""First-party helper modules of a Program, followed across files by the pre-run check.

A resumable function that calls ``helpers.fetch_time()`` (``import helpers``, ``from
helpers import fetch_time``, ``from .helpers import fetch_time``) runs that code in its
orchestration body, so the helper is checked like a same-module helper rather than
trusted. A name a helper module only re-exports (``from time import time as now`` in
``helpers.py``) resolves to what it really is. First-party means: a module file found
next to the Program (``helpers.py``, ``pkg/util.py``, ``pkg/__init__.py``), or, for a
Program in a package, in the folder holding its top package (where ``openprogram run``
imports the package from: ``from .helpers import x`` in ``pkg/mod.py`` is
``pkg/helpers.py``, ``from .. import util`` in ``pkg/sub/mod.py`` is ``pkg/util.py``);
the standard library and installed packages are never read.

The pre-run check (``analysis.check_entry``) and ``openprogram-lint`` (``analysis._run``)
follow helpers through this one loader, so both report the same findings. What a result
depends on — every file probed, found or not — is :meth:`HelperLoader.dependencies`, which
the caches (the pre-run check's, lint's result cache and run memo) check before replaying.
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from openprogram.contract.packages import package_of
from openprogram_analyzers.digest import blake2b_hex, file_digest, stat_key
from openprogram_analyzers.index import (
    STDLIB_MODULES,
    ClassInfo,
    FunctionInfo,
    ImportInfo,
    ModuleIndex,
    build_index,
    resolve_again,
)


@dataclass
class HelperModule:
    path: str
    source: str
    module: cst.Module
    index: ModuleIndex
    #: :func:`link_first_party` ran on ``index`` (once per module and analysis: the index
    #: is this analysis's own, see :meth:`HelperLoader.load`)
    linked: bool = False


@dataclass
class FollowedCall:
    """A call from the entry module into a first-party module's function."""

    helper: HelperModule
    function: FunctionInfo
    call: cst.Call  # the call site, in the calling module
    caller: str  # qualname of the calling function
    orchestration: bool  # reached from the orchestration body (else: a step dependency)
    body: str = ""  # the caller is a workflow body / durable parallel branch (which)


Dependency = tuple[str, str] | None
"""A probed file: ``(stat_key, content digest)``, or None when there is no such file."""

_PARSED: OrderedDict[tuple[str, str], tuple[tuple[str, cst.Module] | None, str]] = OrderedDict()
"""Helper modules parsed in this process, by (path, stat key): the language server
analyses a document many times with the same helpers next to it."""
_PARSED_MAX = 64


class HelperLoader:
    """Parses each first-party module once; remembers which files it probed and read.

    ``base`` is the Program's directory, spelt as its path is (relative to the working
    directory for ``openprogram-lint prog.py``): helper paths are spelt the same way, so
    findings in them read like the Program's own."""

    def __init__(self, base: str) -> None:
        self.base = Path(base)
        self.roots = [self.base]  # where first-party modules are found (see ``absolute``)
        self.loaded: dict[str, HelperModule | None] = {}
        self.probed: dict[str, str | None] = {}  # candidate file -> stat key (None: missing)
        self._digests: dict[str, str] = {}

    def _exists(self, candidate: Path) -> bool:
        key = str(candidate)
        if key not in self.probed:
            try:
                st = os.stat(candidate)
            except (OSError, ValueError):
                self.probed[key] = None
            else:
                self.probed[key] = stat_key(st) if stat.S_ISREG(st.st_mode) else None
        return self.probed[key] is not None

    def module_file(self, dotted: str) -> Path | None:
        if not dotted:
            return None
        root = dotted.split(".")[0]
        if root in STDLIB_MODULES or root == "openprogram":
            return None
        rel = Path(*dotted.split("."))
        for folder in self.roots:
            for candidate in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
                if self._exists(candidate):
                    return candidate
        return None

    def absolute(self, index: ModuleIndex, path: str) -> None:
        """Resolve the relative imports of the module file ``path`` as Python does against
        its package (``from .helpers import now`` in ``pkg/mod.py`` imports
        ``pkg.helpers.now``), and find modules in the folder holding its top package too.
        Left as they are when the file is in no package (Python refuses them then) or
        they reach above its top package."""
        relative = [(local, imp) for local, imp in index.imports.items() if imp.relative]
        if not relative:
            return
        found = package_of(path, lambda candidate: self._exists(Path(candidate)))
        if found is None:
            return
        package = found[0].split(".")
        # the folder holding the top package, spelt as ``path`` is
        holder = Path(os.path.normpath(Path(path).parent.joinpath(*[".."] * len(package))))
        if holder not in self.roots:
            self.roots.append(holder)
        anchored: set[str] = set()
        for local, imp in relative:
            if imp.level > len(package):
                continue
            parent = ".".join(package[: len(package) - imp.level + 1])
            module = f"{parent}.{imp.module}" if imp.module else parent
            index.imports[local] = ImportInfo(module, imp.name, imp.node, imp.level, anchored=True)
            anchored.add(local)
        resolve_again(index, anchored)

    def load(self, dotted: str) -> HelperModule | None:
        """The parsed module, or None: not first-party, unreadable, not UTF-8, or not
        valid Python (not followed, as the Program could not import it either)."""
        found = self.module_file(dotted)
        if found is None:
            return None
        key = str(found)
        if key not in self.loaded:
            cache_key = (key, self.probed[key] or "")
            hit = _PARSED.get(cache_key)
            if hit is None:
                hit = _parse(found)
                _PARSED[cache_key] = hit
                while len(_PARSED) > _PARSED_MAX:
                    _PARSED.popitem(last=False)
            else:
                _PARSED.move_to_end(cache_key)
            parsed, digest = hit
            self._digests[key] = digest
            helper: HelperModule | None = None
            if parsed is not None:
                try:  # the index is this Program's own (``resolve_reexports`` edits it)
                    helper = HelperModule(key, parsed[0], parsed[1], build_index(parsed[1]))
                except RecursionError:
                    helper = None
                else:
                    self.absolute(helper.index, key)
            self.loaded[key] = helper
        return self.loaded[key]

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.loaded)

    def dependencies(self) -> dict[str, Dependency]:
        """Every file probed (``helpers.py``, ``helpers/__init__.py``, ...) with its stat
        key and content digest when it exists: the result holds while none of them
        changes, appears or disappears."""
        out: dict[str, Dependency] = {}
        for path, key in self.probed.items():
            if key is None:
                out[path] = None
                continue
            digest = self._digests.get(path)
            if digest is None:
                digest = file_digest(path) or ""
            out[path] = (key, digest)
        return out


def _parse(path: Path) -> tuple[tuple[str, cst.Module] | None, str]:
    try:
        data = path.read_bytes()
    except OSError:
        return None, ""
    digest = blake2b_hex(data, 16)
    from openprogram_analyzers.fixes import read_source

    try:  # the encoding Python imports it with: UTF-8 unless a coding cookie says otherwise
        text, _ = read_source(data)
    except (UnicodeDecodeError, SyntaxError, LookupError):
        # stray bytes (Python 3.11 still imports them in comments and strings), or a bad
        # cookie (then the import fails anyway): read as UTF-8 with replacements
        text = data.decode("utf-8", errors="replace")
    try:
        # universal newlines, as ``read_text`` reads them
        source = text.replace("\r\n", "\n").replace("\r", "\n")
        from openprogram_analyzers.analysis import parse_checked

        module = parse_checked(source, str(path))
    except RecursionError:
        return None, digest
    if not isinstance(module, cst.Module):
        return None, digest
    return (source, module), digest


def mark_first_party(index: ModuleIndex, loader: HelperLoader) -> None:
    """Record which imports are project code (followed, not trusted as a third-party
    object): first-party modules and names imported from one. A file check per non-stdlib
    import, no parsing."""
    for local in index.imports:
        _mark(index, local, loader)


def _mark(index: ModuleIndex, local: str, loader: HelperLoader) -> None:
    """Whether the import ``local`` is project code, as the import table has it now: a
    first-party module (``import helpers``, ``from pkg import helpers``: also in
    :attr:`ModuleIndex.first_party_modules`), or a name imported from one (``from agents
    import Critic``)."""
    imp = index.imports[local]
    index.first_party.discard(local)
    index.first_party_modules.discard(local)
    if not imp.absolute:
        return
    if loader.module_file(imp.dotted) is not None:
        index.first_party.add(local)
        index.first_party_modules.add(local)
    elif imp.name is not None and loader.module_file(imp.module) is not None:
        index.first_party.add(local)


def resolve_reexports(index: ModuleIndex, loader: HelperLoader) -> None:
    """Rebind ``from helpers import now`` to ``time.time`` when ``helpers`` only imports
    ``now`` (``from time import time as now``), and resolve ``helpers.now`` (``import
    helpers``, ``from pkg import helpers``) the same way: the one import table, across
    files, through every hop (``pkg/__init__.py``'s ``from .clock import now``, then
    ``pkg/clock.py``'s ``from time import time as now``)."""
    rebound: set[str] = set()
    for local, imp in list(index.imports.items()):
        as_module = loader.load(imp.dotted) if local in index.first_party_modules else None
        if as_module is not None:  # ``helpers`` itself: its attributes may be re-exports
            for name, exported in as_module.index.imports.items():
                if exported.absolute:
                    index.reexports[f"{imp.dotted}.{name}"] = _reexported(exported, loader)
                    rebound.add(local)
        if imp.name is None:
            continue
        target = _reexported(imp, loader)
        if target is not imp:
            index.imports[local] = ImportInfo(target.module, target.name, imp.node)
            _mark(index, local, loader)  # what it is now: ``time.time`` is no project code
            rebound.add(local)
    resolve_again(index, rebound)


#: How many classes (and imports of one) a class is followed through across first-party
#: modules: its bases, and the modules only re-importing it
_CLASS_HOPS = 16


def _class_chain(
    loader: HelperLoader, module: str, name: str
) -> Iterator[tuple[str, HelperModule, ClassInfo]]:
    """The class ``name`` of the first-party module ``module`` where it is defined (also
    when ``module`` only imports it from another first-party module), then its bases,
    breadth first, in their own modules: ``(module, its file, class)``. The one walk
    through project classes: bounded (:data:`_CLASS_HOPS`), safe against import and
    inheritance cycles; the standard library and installed packages are never read."""
    seen: set[str] = set()
    todo = [(module, name)]
    while todo and len(seen) < _CLASS_HOPS:
        module, name = todo.pop(0)
        if f"{module}.{name}" in seen:
            continue
        seen.add(f"{module}.{name}")
        helper = loader.load(module)
        if helper is None:
            continue
        idx = helper.index
        cls = idx.classes.get(name)
        if cls is None:  # re-imported there: ``from agents import Critic``
            imp = idx.imports.get(name)
            if imp is not None and imp.absolute and imp.name is not None:
                todo.insert(0, (imp.module, imp.name))
            continue
        yield module, helper, cls
        for base in cls.bases:
            if base is None:
                continue
            if base in idx.classes:
                todo.append((module, base))
            elif "." in base:
                owner, _, base_name = base.rpartition(".")
                todo.append((owner, base_name))


def _agent_class_in(loader: HelperLoader, module: str, name: str) -> str | None:
    """Where ``name`` of the first-party module ``module`` is defined (``module.name``,
    dotted) when it is an Agent class: deriving from ``Agent`` through classes of its
    module or of other first-party modules (:func:`_class_chain`)."""
    defined: str | None = None
    for where, helper, cls in _class_chain(loader, module, name):
        defined = defined or f"{where}.{cls.qualname}"
        if helper.index.is_agent_class(cls.qualname):
            return defined
    return None


def method_of_class(
    loader: HelperLoader, dotted: str, method: str
) -> tuple[HelperModule, FunctionInfo] | None:
    """The method ``method`` of the class ``dotted`` (``agents.Critic``) of a first-party
    module, defined there or inherited from a base class of another first-party module
    (``Bot.ask`` of ``base.py`` for ``class Critic(Bot)``), with the file defining it."""
    module, _, name = dotted.rpartition(".")
    for _, helper, cls in _class_chain(loader, module, name) if module else ():
        if method in cls.methods:
            return helper, cls.methods[method]
    return None


def resolve_imported_agent_classes(index: ModuleIndex, loader: HelperLoader) -> None:
    """Record the Agent classes ``index`` imports from first-party modules (``from agents
    import Critic``, ``import agents`` then ``agents.Critic``), also where the module
    only re-imports the class from another first-party module: ``Critic()`` makes an
    Agent instance there as it does for a class of the module itself. The standard
    library and installed packages are never read."""
    found: str | None
    for local, imp in index.imports.items():
        if not imp.absolute:
            continue
        if local in index.first_party_modules:  # the module itself: ``agents.Critic``
            helper = loader.load(imp.dotted)
            for name in helper.index.classes if helper is not None else ():
                found = _agent_class_in(loader, imp.dotted, name) if "." not in name else None
                if found is not None:
                    index.imported_agent_classes[f"{imp.dotted}.{name}"] = found
        elif imp.name is not None:
            found = _agent_class_in(loader, imp.module, imp.name)
            if found is not None:
                index.imported_agent_classes[imp.dotted] = found


def resolve_imported_agents(index: ModuleIndex, loader: HelperLoader) -> None:
    """Record the Agent instances ``index`` imports from first-party modules (``from bots
    import critic``, ``from .bots import critic``, ``import bots`` then ``bots.critic``),
    where ``bots.py`` binds ``critic = Critic()`` (``Critic`` an Agent class): calling one
    in an orchestration body is a model call, as calling a local instance is. Read after
    :func:`resolve_reexports` (an instance ``bots`` only re-exports is found where it is
    made); the standard library and installed packages are never read."""
    from openprogram_analyzers.determinism import agent_instance_at

    linked: set[str] = set()

    def agent_of(module: str, name: str) -> str | None:
        helper = loader.load(module)
        if helper is None or name in helper.index.imports:
            return None
        if name not in helper.index.module_assigns:
            return None
        if helper.path not in linked:  # ``critic = Critic()``, ``Critic`` imported there
            linked.add(helper.path)
            mark_first_party(helper.index, loader)
            resolve_imported_agent_classes(helper.index, loader)
        cls = agent_instance_at(helper.index, None, cst.Name(name))
        return f"{module}.{cls}" if cls in helper.index.classes else cls

    for local, imp in index.imports.items():
        if not imp.absolute:
            continue
        if local in index.first_party_modules:  # the module itself: ``bots.critic``
            helper = loader.load(imp.dotted)
            for name in helper.index.module_assigns if helper is not None else ():
                found = agent_of(imp.dotted, name)
                if found is not None:
                    index.imported_agents[f"{imp.dotted}.{name}"] = found
        elif imp.name is not None:
            found = agent_of(imp.module, imp.name)
            if found is not None:
                index.imported_agents[imp.dotted] = found


def resolve_project_globals(index: ModuleIndex, loader: HelperLoader) -> None:
    """Record the module-level data of first-party modules ``index`` imports (``CACHE =
    []`` in ``store_mod.py``): ``from store_mod import CACHE`` or ``import store_mod``
    then ``store_mod.CACHE``. Not its functions, classes or imports (a name it imports
    is recorded where it is bound, through :func:`resolve_reexports`); the standard
    library and installed packages are never read, so ``os.environ`` is none."""

    def data(helper: HelperModule, name: str) -> bool:
        idx = helper.index
        return (
            name in idx.module_assigns
            and name not in idx.imports
            and name not in idx.functions
            and name not in idx.classes
        )

    for local, imp in index.imports.items():
        if not imp.absolute:
            continue
        if local in index.first_party_modules:  # the module itself: ``store_mod.CACHE``
            helper = loader.load(imp.dotted)
            for name in helper.index.module_assigns if helper is not None else ():
                if helper is not None and data(helper, name):
                    index.project_globals[f"{local}.{name}"] = f"{imp.dotted}.{name}"
        elif imp.name is not None:
            helper = loader.load(imp.module)
            if helper is not None and data(helper, imp.name):
                index.project_globals[local] = imp.dotted


def link_first_party(index: ModuleIndex, loader: HelperLoader) -> None:
    """What ``index`` imports from first-party modules, as the checks read it: which
    imports are such modules, what they re-export, the Agent classes they define, the
    Agent instances and the data they bind."""
    mark_first_party(index, loader)
    resolve_reexports(index, loader)
    resolve_imported_agent_classes(index, loader)
    resolve_imported_agents(index, loader)
    resolve_project_globals(index, loader)


def _reexported(imp: ImportInfo, loader: HelperLoader) -> ImportInfo:
    """What ``from M import name`` really binds: followed while ``M`` is a first-party
    module that itself only imports ``name`` (a cycle stops where it closes)."""
    seen = {imp.dotted}
    while imp.name is not None:
        helper = loader.load(imp.module)
        target = helper.index.imports.get(imp.name) if helper is not None else None
        if target is None or not target.absolute or target.dotted in seen:
            break
        seen.add(target.dotted)
        imp = target
    return imp


def followed_calls(
    index: ModuleIndex,
    functions: dict[str, bool],
    loader: HelperLoader,
    bodies: dict[str, str] | None = None,
) -> list[FollowedCall]:
    """Calls from ``functions`` (qualname -> orchestration?) into first-party modules,
    also through a control-flow primitive (``repeat_until(helpers.ask, ...)`` calls
    ``helpers.ask`` at once), and of a method of an Agent instance whose class a
    first-party module defines (``critic.ask(q)`` runs ``Critic.ask`` of ``agents.py``,
    as ``bot.ask(q)`` runs the method of a class of the module). ``bodies``: which of
    ``functions`` are workflow bodies or durable parallel branches (run again on resume)."""
    from openprogram_analyzers.determinism import (
        agent_instance_at,
        run_now_callables,
        run_now_sites,
    )

    out: list[FollowedCall] = []
    for qual, orch in functions.items():
        fn = index.functions.get(qual)
        if fn is None:
            continue
        body = (bodies or {}).get(qual, "") if not orch else ""
        shadowed = fn.locals()
        for site in run_now_sites(index, fn, shadowed):
            called = [site.node.func]
            called += [e for _, e in run_now_callables(index, site.node, shadowed)]
            for expr in called:
                dotted = index.resolve_imported(expr, shadowed)
                if dotted is None or "." not in dotted:
                    continue
                module_name, _, name = dotted.rpartition(".")
                helper = loader.load(module_name)
                if helper is None:
                    continue
                target = helper.index.function_at_module(name)
                if target is not None:
                    out.append(FollowedCall(helper, target, site.node, qual, orch, body))
            func = site.node.func
            if isinstance(func, cst.Attribute):
                cls = agent_instance_at(index, qual, func.value) or ""
                found = method_of_class(loader, cls, func.attr.value)
                if found is not None:
                    out.append(FollowedCall(found[0], found[1], site.node, qual, orch, body))
    return out
