"""A statement run at every step, executed through libpq on a held connection.

A durable step on PostgreSQL is one statement (``postgres_runs``). Executed through a
psycopg cursor, each one pays for the cursor's generic work: adapting every parameter
through the adapters map, the prepared-statement cache's bookkeeping, the wait loop's
generator, a ``Column`` per result column — about 50 µs of client CPU of a step's 200.
:class:`HotStatement` runs it with ``PGconn.exec_prepared`` (psycopg's own libpq binding,
which releases the GIL while it waits) on the connection the run's thread holds
(:meth:`~openprogram.store.postgres.PostgresBackend.execute_hot`), preparing it on that
connection the first time.

Parameters are sent as text, and only the types a step's statement takes are accepted:
``str`` (a NUL character is refused, as psycopg refuses it: libpq would cut the text
there), ``bool`` (``t``/``f``), ``int``, ``float`` (``repr``, which PostgreSQL reads back
to the same value) and ``None``. Anything else is a ``TypeError``: the statement's caller
passes psycopg's path (``PostgresBackend.execute``) what it cannot send here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: psycopg's message for a NUL in a text parameter (the same error on either path).
NUL_IN_TEXT = "PostgreSQL text fields cannot contain NUL (0x00) bytes"
#: SQLSTATE of a prepared statement the server does not have (``invalid_sql_statement_name``:
#: a new connection, or one that ran ``DISCARD ALL`` / ``DEALLOCATE ALL``).
NOT_PREPARED = b"26000"
#: SQLSTATE of an insert that hit a unique key (``unique_violation``).
UNIQUE_VIOLATION = b"23505"

_NAMED = re.compile(r"%\((\w+)\)s")


class HotStatement:
    """``sql`` written with psycopg's named placeholders (``%(key)s``), numbered for the
    server once; ``columns`` converts each result column's text (``None`` stays).
    ``constants``: placeholders this statement always binds to the same value, written
    into its text as literals (``None``, ``bool`` or ``str``): fewer parameters to send,
    and the server binds fewer."""

    __slots__ = ("columns", "keys", "name", "server_sql", "sql")

    def __init__(
        self,
        name: str,
        sql: str,
        columns: Sequence[Callable[[str], Any]],
        constants: Mapping[str, str | bool | None] | None = None,
    ) -> None:
        for key, value in (constants or {}).items():
            sql = sql.replace(f"%({key})s", _literal(value))
        keys: list[str] = []

        def number(match: re.Match[str]) -> str:
            key = match.group(1)
            if key not in keys:
                keys.append(key)
            return f"${keys.index(key) + 1}"

        server_sql = _NAMED.sub(number, sql)
        if "%" in server_sql:
            raise ValueError(f"{name}: only %(key)s placeholders may contain '%'")
        self.name = name.encode()
        self.sql = sql
        self.server_sql = server_sql.encode()
        self.keys = tuple(keys)
        self.columns = tuple(columns)

    def values(self, params: tuple[Any, ...]) -> list[bytes | None]:
        """``params`` (in :attr:`keys` order: a statement run at every step builds no
        mapping) as libpq's text values."""
        if len(params) != len(self.keys):
            raise ValueError(f"{len(params)} parameters for {len(self.keys)}: {self.keys}")
        return [v.encode() if v.__class__ is str and "\x00" not in v else _text(v) for v in params]

    def named(self, params: tuple[Any, ...]) -> dict[str, Any]:
        """``params`` by name (for psycopg's path)."""
        return dict(zip(self.keys, params, strict=True))

    def rows(self, result: Any) -> list[tuple[Any, ...]]:
        """The rows of a ``PGresult`` of this statement, each column converted."""
        columns = self.columns
        out = []
        for r in range(result.ntuples):
            row = []
            for c, convert in enumerate(columns):
                raw = result.get_value(r, c)
                row.append(None if raw is None else convert(raw.decode()))
            out.append(tuple(row))
        return out


def _text(value: Any) -> bytes | None:
    if value is None:
        return None
    kind = value.__class__
    if kind is str:
        if "\x00" in value:
            raise ValueError(NUL_IN_TEXT)
        return value.encode()
    if kind is bool:
        return b"t" if value else b"f"
    if kind is int or kind is float:
        return repr(value).encode()
    raise TypeError(f"a {kind.__name__} parameter is not sent as text here")


def _literal(value: str | bool | None) -> str:
    """``value`` as an SQL literal (a constant of a :class:`HotStatement`)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and "%" not in value and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    raise ValueError(f"{value!r} is not written into a statement's text")
