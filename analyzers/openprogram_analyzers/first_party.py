"""First-party helper modules of a Program, followed across files by the pre-run check.

A resumable function that calls ``helpers.fetch_time()`` (``import helpers``, ``from
helpers import fetch_time``, ``from .helpers import fetch_time``) runs that code in its
orchestration body, so the helper is checked like a same-module helper rather than
trusted. A name a helper module only re-exports (``from time import time as now`` in
``helpers.py``) resolves to what it really is. First-party means: a module file found
next to the Program (``helpers.py``, ``pkg/util.py``, ``pkg/__init__.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from openprogram_analyzers.index import (
    STDLIB_MODULES,
    FunctionInfo,
    ImportInfo,
    ModuleIndex,
    build_index,
)


@dataclass
class HelperModule:
    path: str
    source: str
    module: cst.Module
    index: ModuleIndex


@dataclass
class FollowedCall:
    """A call from the entry module into a first-party module's function."""

    helper: HelperModule
    function: FunctionInfo
    call: cst.Call  # the call site, in the calling module
    caller: str  # qualname of the calling function
    orchestration: bool  # reached from the orchestration body (else: a step dependency)


class HelperLoader:
    """Parses each first-party module once; remembers which files were read."""

    def __init__(self, base: str) -> None:
        self.base = Path(base)
        self.loaded: dict[str, HelperModule | None] = {}

    def module_file(self, dotted: str) -> Path | None:
        if not dotted:
            return None
        root = dotted.split(".")[0]
        if root in STDLIB_MODULES or root == "openprogram":
            return None
        rel = Path(*dotted.split("."))
        for candidate in (self.base / rel.with_suffix(".py"), self.base / rel / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def load(self, dotted: str) -> HelperModule | None:
        found = self.module_file(dotted)
        if found is None:
            return None
        key = str(found)
        if key not in self.loaded:
            try:
                source = found.read_text(encoding="utf-8")
                module = cst.parse_module(source)
            except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError):
                self.loaded[key] = None
            else:
                self.loaded[key] = HelperModule(key, source, module, build_index(module))
        return self.loaded[key]

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.loaded)


def mark_first_party(index: ModuleIndex, base: str) -> None:
    """Record which imports are first-party modules (their code is followed, not trusted as
    a third-party object): a file check per non-stdlib import, no parsing."""
    loader = HelperLoader(base)
    for local, imp in index.imports.items():
        if imp.name is None and loader.module_file(imp.module) is not None:
            index.first_party.add(local)
        elif imp.name is not None and loader.module_file(imp.dotted) is not None:
            index.first_party.add(local)  # ``from pkg import helpers``


def resolve_reexports(index: ModuleIndex, loader: HelperLoader) -> None:
    """Rebind ``from helpers import now`` to ``time.time`` when ``helpers`` only imports
    ``now`` (``from time import time as now``), and resolve ``helpers.now`` (``import
    helpers``, ``from pkg import helpers``) the same way: the one import table, across
    files."""
    for local, imp in list(index.imports.items()):
        as_module = loader.load(imp.dotted) if local in index.first_party else None
        if as_module is not None:  # ``helpers`` itself: its attributes may be re-exports
            for name, exported in as_module.index.imports.items():
                if not exported.relative:
                    index.reexports[f"{imp.dotted}.{name}"] = exported
        if imp.name is None:
            continue
        helper = loader.load(imp.module)
        if helper is None:
            continue
        target = helper.index.imports.get(imp.name)
        if target is not None and not target.relative:
            index.imports[local] = ImportInfo(target.module, target.name, imp.node)


def followed_calls(
    index: ModuleIndex,
    functions: dict[str, bool],
    loader: HelperLoader,
) -> list[FollowedCall]:
    """Calls from ``functions`` (qualname -> orchestration?) into first-party modules."""
    out: list[FollowedCall] = []
    for qual, orch in functions.items():
        fn = index.functions.get(qual)
        if fn is None:
            continue
        shadowed = fn.locals()
        for site in fn.calls:
            if site.deferred:
                continue
            dotted = index.resolve_imported(site.node.func, shadowed)
            if dotted is None or "." not in dotted:
                continue
            module_name, _, name = dotted.rpartition(".")
            helper = loader.load(module_name)
            if helper is None:
                continue
            target = helper.index.function_at_module(name)
            if target is not None:
                out.append(FollowedCall(helper, target, site.node, qual, orch))
    return out
