"""Rebuild literal values from libcst expressions, remembering where each part came from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

Path = tuple[Any, ...]
# path -> (key node or None, value node)
Locations = dict[Path, tuple[cst.CSTNode | None, cst.CSTNode]]


def rebuild(
    node: cst.BaseExpression,
    opaque: Any,
    name_value: Callable[[cst.BaseExpression], Any] | None = None,
) -> tuple[Any, Locations]:
    """Literal value of ``node`` (``opaque`` where not literal) and its locations by path.

    ``name_value`` maps a Name/Attribute/Subscript to a value (e.g. a type reference); by default they
    are opaque (except True/False/None).
    """
    builder = _Rebuild(opaque, name_value)
    return builder.walk(node, (), None), builder.locs


class _Rebuild:
    """The walk of :func:`rebuild` (methods, not nested functions calling each other: those
    would be a reference cycle keeping the tree alive until the cyclic GC runs)."""

    def __init__(self, opaque: Any, name_value: Callable[[cst.BaseExpression], Any] | None) -> None:
        self.opaque = opaque
        self.name_value = name_value
        self.locs: Locations = {}

    def walk(self, n: cst.BaseExpression, path: Path, key: cst.CSTNode | None) -> Any:
        opaque = self.opaque
        self.locs[path] = (key, n)
        if isinstance(n, cst.Dict):
            out: dict[Any, Any] = {}
            for el in n.elements:
                if not isinstance(el, cst.DictElement):
                    out[opaque] = opaque
                    continue
                k = self.walk_key(el.key)
                try:
                    out[k] = self.walk(el.value, (*path, k), el.key)
                except TypeError:
                    out[opaque] = opaque
            return out
        if isinstance(n, (cst.List, cst.Tuple)):
            if any(isinstance(e, cst.StarredElement) for e in n.elements):
                return opaque
            items = [self.walk(e.value, (*path, i), None) for i, e in enumerate(n.elements)]
            return items if isinstance(n, cst.List) else tuple(items)
        return self.scalar(n)

    def walk_key(self, k: cst.BaseExpression) -> Any:
        v = self.scalar(k)
        try:
            hash(v)
        except TypeError:
            return self.opaque
        return v

    def scalar(self, n: cst.BaseExpression) -> Any:
        opaque = self.opaque
        if isinstance(n, cst.SimpleString):
            try:
                return evaluated(n)
            except Exception:
                return opaque
        if isinstance(n, cst.ConcatenatedString):
            try:
                v = n.evaluated_value
            except Exception:
                return opaque
            return v if v is not None else opaque
        if isinstance(n, cst.FormattedString):
            if all(isinstance(p, cst.FormattedStringText) for p in n.parts):
                return "".join(p.value for p in n.parts if isinstance(p, cst.FormattedStringText))
            return opaque
        if isinstance(n, (cst.Integer, cst.Float)):
            try:
                return evaluated(n)
            except Exception:
                return opaque
        if isinstance(n, cst.Name) and n.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[n.value]
        if isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Minus):
            inner = self.scalar(n.expression)
            if isinstance(inner, (int, float)) and not isinstance(inner, bool):
                return -inner
            return opaque
        if isinstance(n, (cst.Name, cst.Attribute, cst.Subscript)) and self.name_value is not None:
            return self.name_value(n)
        return opaque


def is_literal_string(node: cst.BaseExpression) -> bool:
    """A plain string literal (no f-string placeholders)."""
    if isinstance(node, cst.SimpleString):
        return True
    if isinstance(node, cst.ConcatenatedString):
        return is_literal_string(node.left) and is_literal_string(node.right)
    if isinstance(node, cst.FormattedString):
        return all(isinstance(p, cst.FormattedStringText) for p in node.parts)
    return False


def evaluated(node: cst.SimpleString | cst.Integer | cst.Float) -> Any:
    """``node.evaluated_value`` without compiling the common cases: libcst runs
    ``ast.literal_eval`` (a ``compile``) on every literal, a tenth of a file's analysis.
    A string without prefix (or ``u``/``r``), backslash or carriage return is its text
    between the quotes; a decimal integer without underscores is ``int`` of its digits; a
    float literal is ``float`` of its text."""
    v = node.value
    if isinstance(node, cst.SimpleString):
        body = v.lstrip("uUrR")
        if len(v) - len(body) <= 1 and body[:1] in ("'", '"') and "\\" not in v and "\r" not in v:
            q = 3 if body[:3] in ('"""', "'''") and len(body) >= 6 else 1
            return body[q:-q]
    elif isinstance(node, cst.Integer) and v.isascii() and v.isdigit():
        return int(v)
    elif isinstance(node, cst.Float):
        return float(v)  # digits, ".", "e", a sign and "_": read by float() as by Python
    return node.evaluated_value


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            v = evaluated(node)
        except Exception:
            return None
        return v if isinstance(v, str) else None
    if isinstance(node, cst.ConcatenatedString):
        try:
            v = node.evaluated_value
        except Exception:
            return None
        return v if isinstance(v, str) else None
    if isinstance(node, cst.FormattedString) and is_literal_string(node):
        return "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
    return None


def string_literal_like(original: cst.BaseExpression, text: str) -> str:
    """Source for a string literal ``text`` using the quote style of ``original``."""
    quote = '"'
    if isinstance(original, cst.SimpleString):
        q = original.quote
        if q in ("'", '"'):
            quote = q
    escaped = text.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return f"{quote}{escaped}{quote}"
