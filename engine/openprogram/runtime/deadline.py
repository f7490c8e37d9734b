"""A wall-clock deadline for one blocking HTTP attempt.

httpx timeouts bound each socket operation, not the request: a server that sends its
headers and then one byte a second never trips a 2-second read timeout. The sync client
therefore talks through :class:`DeadlineTransport`, whose sockets cap every connect, read
and write at the time left before the deadline set with :func:`attempt_deadline` (a
``ContextVar``, so concurrent threads keep their own). Past the deadline an operation
fails at once with a timeout. The async client needs none of this: it wraps the attempt
in ``asyncio.wait_for``.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

_deadline: ContextVar[float | None] = ContextVar("openprogram_http_deadline", default=None)


@contextmanager
def attempt_deadline(deadline: float) -> Iterator[None]:
    """Bound every socket operation of the current thread by ``deadline`` (monotonic s)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to the time left before the deadline; ``error`` when none is."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the attempt deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, remaining(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, remaining(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, remaining(timeout, httpcore.ConnectTimeout)
        )
        return _DeadlineStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host,
            port,
            remaining(timeout, httpcore.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's default transport over sockets that honour :func:`attempt_deadline`."""

    def __init__(self) -> None:  # no super().__init__: it would build a second pool
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_DeadlineBackend(),
        )
