"""Request results that are JSON text already (a 10,000-step run's views): sent as they are.

pygls turns a result into JSON by walking it with its converter and ``json.dumps``; for
answers whose rows SQLite has already written as JSON that is most of the request's time.
A handler returns :class:`RawJSON` and :func:`send_raw_response` splices it into the
JSON-RPC response unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any

log = logging.getLogger(__name__)
_writes: set[asyncio.Future[Any]] = set()  # pending async writes, kept until done


class RawJSON(str):
    """One complete JSON value as text (the caller guarantees it is valid JSON)."""


def send_raw_response(protocol: Any, msg_id: Any, result: RawJSON) -> None:
    """Write ``{"jsonrpc": "2.0", "id": msg_id, "result": <result>}`` to the client."""
    protocol._result_types.pop(msg_id, None)
    writer = protocol.writer
    if writer is None:
        return
    body = f'{{"jsonrpc":"2.0","id":{json.dumps(msg_id)},"result":{result}}}'.encode()
    header = b""
    if protocol._include_headers:
        header = (
            f"Content-Length: {len(body)}\r\n"
            f"Content-Type: {protocol.CONTENT_TYPE}; charset={protocol.CHARSET}\r\n\r\n"
        ).encode("ascii")
    try:
        res = writer.write(header + body)
    except OSError as exc:  # the client is gone
        log.warning("cannot send response %s: %s", msg_id, exc)
        return
    if inspect.isawaitable(res):
        future = asyncio.ensure_future(res)
        _writes.add(future)
        future.add_done_callback(_writes.discard)
