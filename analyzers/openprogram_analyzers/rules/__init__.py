"""Every rule, one per module (``opNNN_<name>.py``); ``RULES`` maps code -> rule class.

Adding a rule is adding its module here: modules are discovered by name, in code order.
"""

from __future__ import annotations

import importlib
import pkgutil

from openprogram_analyzers.rule import Rule

_MODULES = tuple(
    importlib.import_module(f"{__name__}.{info.name}")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
    if info.name.startswith("op") and info.name[2:5].isdigit()
)

RULES: dict[str, type[Rule]] = {
    cls.code: cls
    for mod in _MODULES
    for cls in vars(mod).values()
    if isinstance(cls, type) and issubclass(cls, Rule) and cls.__module__ == mod.__name__
}
"""Rule classes by code."""

WHOLE_MODULE_CODES = frozenset(code for code, rule in RULES.items() if rule.whole_module)
"""Codes whose findings need the whole module (the language server's incremental pass,
which analyses one statement alone, leaves them to the full pass)."""
