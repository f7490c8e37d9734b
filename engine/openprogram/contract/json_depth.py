"""How deeply nested a JSON value the CLI reads and writes: :data:`MAX_JSON_DEPTH`, one
limit for ``--args`` (refused deeper), the session DAG's record of a value (a deeper part
is ``"<nested deeper than 100 levels>"``) and the commands that print them, so no value
one of them accepts is too deep for another (a ``RecursionError`` in ``json.dumps``)."""

from __future__ import annotations

from typing import Any

#: Levels of arrays/objects (``[[1]]`` is 2) a value may have.
MAX_JSON_DEPTH = 100


def nested_deeper_than(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value``'s lists, tuples, sets and mappings nest more than ``limit`` levels
    (iterative: no recursion whatever the depth; a circular value is not deep)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen: set[int] = set()
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.extend((child, depth + 1) for child in children)
    return False
