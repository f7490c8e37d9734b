"""JSON-over-HTTP transport shared by the HTTP providers: retries, error mapping, redaction.

Every failure becomes one :class:`~openprogram.errors.ProviderError` whose message names
the provider, the HTTP status, the request id and a short excerpt of the body; the API
key is never part of it (bodies that echo the key are redacted before they are cut short,
so a key cut in half at the cut is never half shown).

Limits: each attempt must deliver its whole response within ``timeout_s`` (a deadline,
not a per-read timeout); the whole call ends within :meth:`RetryPolicy.call_budget`
(attempts x ``timeout_s`` + the backoff ceilings), so a ``Retry-After`` beyond what is
left, or beyond ``retry_after_cap_s``, fails at once (a retry is never made earlier than
the server asked). Bodies are read as a stream and refused past ``max_response_bytes``
(:data:`MAX_RESPONSE_BYTES`, 32 MiB, by default). A ``user:password@`` in the base URL
is sent as HTTP Basic auth; the password (as written, percent-decoded or inside the Basic
credentials) is shown as ``***`` in every URL, log line and error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import httpx

from openprogram.errors import ConfigError, ProviderError
from openprogram.runtime.deadline import DeadlineTransport, attempt_deadline
from openprogram.runtime.retry import RetryPolicy, is_retryable_status, parse_retry_after
from openprogram.runtime.secret import Secret, redact
from openprogram.terminal_text import inert
from openprogram.url_secrets import redact_url, scrub_url_password

log = logging.getLogger("openprogram.runtime")

MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""Default cap on one response body; a larger reply is a :class:`ProviderError`."""

_ERROR_BODY_BYTES = 64 * 1024  # enough of an error body for its excerpt
_EXCERPT_CHARS = 200
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def validate_base_url(url: str, env_name: str) -> str:
    """``url`` without a trailing slash, or ConfigError when it is not an http(s) URL."""
    text = url.strip()
    shown = redact_url(text)  # never echo a password
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise ConfigError(
            f"invalid {env_name} {shown!r}: {scrub_url_password(str(exc), text)}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"invalid {env_name} {shown!r}: expected an http(s) URL such as "
            "'http://127.0.0.1:8000/v1'"
        )
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ConfigError(f"invalid {env_name} {shown!r}: bad port") from None
    return text.rstrip("/")


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (local servers need no API key)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOOPBACK_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def split_endpoint(url: str, path: str, operation: str) -> tuple[str, str]:
    """``(root, path)`` to POST to for the endpoint ``path`` (``/chat/completions``,
    ``/v1/messages``) under the base URL ``url``: ``url + path``, except that no part is
    given twice. A base URL that is already the endpoint (it ends in ``operation``, the
    endpoint's last part: ``/chat/completions``, ``/messages``) is used as it is; one that
    ends in the start of ``path`` (``.../v1`` for ``/v1/messages``) gets only the rest. A
    query (Azure's ``?api-version=...``) stays the query, after the endpoint's path."""
    parts = urlsplit(url)
    query = "?" + parts.query if parts.query else ""
    parts = parts._replace(query="", fragment="")
    for tail in (path, operation):  # the longest first
        if parts.path.endswith(tail):
            return parts._replace(path=parts.path[: -len(tail)]).geturl(), tail + query
    steps = path.strip("/").split("/")
    for n in range(len(steps) - 1, 0, -1):
        lead = "/" + "/".join(steps[:n])
        if parts.path.endswith(lead):
            return parts._replace(path=parts.path[: -len(lead)]).geturl(), path + query
    return parts.geturl(), path + query


def _without_userinfo(url: str) -> str:
    """``url`` without any ``user:password@`` part (the URL requests are sent to)."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _basic_auth(url: str) -> tuple[httpx.BasicAuth | None, Secret | None]:
    """HTTP Basic auth from the ``user:password@`` of ``url``, and its credentials (the
    header value a server could echo) to redact."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return None, None
    auth = httpx.BasicAuth(httpx.URL(url).username, httpx.URL(url).password)
    request = next(auth.auth_flow(httpx.Request("GET", "http://localhost/")))
    credentials = request.headers["authorization"].removeprefix("Basic ")
    return auth, Secret(credentials)


@dataclass
class JsonReply:
    """A successful JSON response."""

    body: dict[str, Any]
    status: int
    request_id: str | None


class _Retry(Exception):
    """Internal: this attempt failed in a retryable way."""

    def __init__(
        self, reason: str, status: int | None, request_id: str | None, asked: float | None = None
    ):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.request_id = request_id
        self.asked = asked  # the server's Retry-After; None: use the policy's backoff


class JsonTransport:
    """POSTs JSON to one provider endpoint with retries (sync and async clients)."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        headers: Mapping[str, str],
        secret: Secret | None,
        key_env: str,
        base_url_env: str,
        request_id_header: str,
        timeout_s: float,
        retry: RetryPolicy,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.provider = provider
        self.base_url = base_url
        # userinfo travels as a Basic auth header, so httpx never logs it in a URL
        self._auth, self._basic_secret = _basic_auth(base_url)
        self._send_base = _without_userinfo(base_url)
        self._headers = dict(headers)
        self._secret = secret
        self._key_env = key_env
        self._base_url_env = base_url_env
        self._request_id_header = request_id_header
        self.timeout_s = timeout_s
        self.retry = retry
        self.max_response_bytes = max_response_bytes
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonTransport(provider={self.provider!r}, base_url={redact_url(self.base_url)!r})"

    # -- public -------------------------------------------------------------------

    def post(self, path: str, payload: Mapping[str, Any], *, timeout_s: float | None) -> JsonReply:
        """POST ``payload`` to ``base_url + path``; retries; returns the parsed JSON body."""
        url = self._send_base + path
        timeout = timeout_s or self.timeout_s
        client = self._sync_client()
        call_deadline = time.monotonic() + self.retry.call_budget(timeout)
        last: _Retry | None = None
        for attempt in range(1, self.retry.attempts + 1):
            self._log_attempt(url, attempt)
            try:
                with attempt_deadline(time.monotonic() + timeout):
                    return self._send(client, url, payload, timeout, attempt)
            except _Retry as retry:
                last = retry
            except httpx.HTTPError as exc:
                last = self._transport_retry(exc, url, timeout)
            if attempt < self.retry.attempts:
                self.retry.sleep(self._next_delay(last, attempt, call_deadline, timeout))
        assert last is not None
        raise self._final_error(last, self.retry.attempts)

    async def apost(
        self, path: str, payload: Mapping[str, Any], *, timeout_s: float | None
    ) -> JsonReply:
        """Async form of :meth:`post`."""
        url = self._send_base + path
        timeout = timeout_s or self.timeout_s
        client = self._async_client()
        call_deadline = time.monotonic() + self.retry.call_budget(timeout)
        last: _Retry | None = None
        for attempt in range(1, self.retry.attempts + 1):
            self._log_attempt(url, attempt)
            try:
                return await asyncio.wait_for(
                    self._asend(client, url, payload, timeout, attempt), timeout
                )
            except _Retry as retry:
                last = retry
            except asyncio.TimeoutError:
                reason = _timed_out(timeout, self._shown_url(url))
                last = _Retry(reason, None, None)
            except httpx.HTTPError as exc:
                last = self._transport_retry(exc, url, timeout)
            if attempt < self.retry.attempts:
                await self.retry.asleep(self._next_delay(last, attempt, call_deadline, timeout))
        assert last is not None
        raise self._final_error(last, self.retry.attempts)

    def close(self) -> None:
        """Close the sync client; drop the async one (use :meth:`aclose` to close it)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        # An async client cannot be closed from sync code safely; its pool is released
        # when it is garbage collected.
        self._aclient = self._aloop = None

    async def aclose(self) -> None:
        """Close both clients."""
        if self._aclient is not None and self._aloop is asyncio.get_running_loop():
            await self._aclient.aclose()
        self._aclient = self._aloop = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def shape_error(self, reply: JsonReply, what: str) -> ProviderError:
        """A ProviderError for a 2xx JSON body that lacks the fields the wire format needs."""
        excerpt = self._short(json.dumps(reply.body))
        return ProviderError(
            self._message(f"unexpected response shape ({what})", reply.request_id, excerpt),
            provider=self.provider,
            status=reply.status,
            request_id=reply.request_id,
        )

    def reply_error(self, reply: JsonReply, what: str, excerpt: str) -> ProviderError:
        """A ProviderError about a reply's content (e.g. invalid JSON under response_format)."""
        return ProviderError(
            self._message(what, reply.request_id, self._short(excerpt)),
            provider=self.provider,
            status=reply.status,
            request_id=reply.request_id,
        )

    # -- internals ----------------------------------------------------------------

    def _sync_client(self) -> httpx.Client:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = httpx.Client(transport=DeadlineTransport(), auth=self._auth)
        return self._client

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            # An AsyncClient's pool is bound to the loop it was first used on.
            self._aclient = httpx.AsyncClient(auth=self._auth)
            self._aloop = loop
        return self._aclient

    def _send(
        self,
        client: httpx.Client,
        url: str,
        payload: Mapping[str, Any],
        timeout: float,
        attempt: int,
    ) -> JsonReply:
        headers = self._request_headers()
        with client.stream("POST", url, json=payload, headers=headers, timeout=timeout) as response:
            cap = self._cap(response)
            parts: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if size > cap:
                    break
        return self._handle(response, self._body(response, parts, size, cap), attempt)

    async def _asend(
        self,
        client: httpx.AsyncClient,
        url: str,
        payload: Mapping[str, Any],
        timeout: float,
        attempt: int,
    ) -> JsonReply:
        headers = self._request_headers()
        request = client.stream("POST", url, json=payload, headers=headers, timeout=timeout)
        async with request as response:
            cap = self._cap(response)
            parts: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                parts.append(chunk)
                size += len(chunk)
                if size > cap:
                    break
        return self._handle(response, self._body(response, parts, size, cap), attempt)

    def _cap(self, response: httpx.Response) -> int:
        """How much of this body to read; a declared oversize 2xx body fails at once."""
        if not 200 <= response.status_code < 300:
            return _ERROR_BODY_BYTES  # only its excerpt is shown
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise self._too_large(response, f"Content-Length is {int(declared):,} bytes")
        return self.max_response_bytes

    def _body(self, response: httpx.Response, parts: list[bytes], size: int, cap: int) -> bytes:
        if size > cap and 200 <= response.status_code < 300:
            raise self._too_large(response, f"more than {size:,} bytes were sent")
        return b"".join(parts)[:cap]

    def _too_large(self, response: httpx.Response, what: str) -> ProviderError:
        request_id = response.headers.get(self._request_id_header)
        return ProviderError(
            self._message(
                f"response body too large: {what}, the limit is {self.max_response_bytes:,} bytes",
                request_id,
                None,
                hint="pass max_response_bytes= to the provider to allow more",
            ),
            provider=self.provider,
            status=response.status_code,
            request_id=request_id,
        )

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._secret:
            if self.provider == "anthropic":
                headers["x-api-key"] = self._secret.reveal()
            else:
                headers["authorization"] = f"Bearer {self._secret.reveal()}"
        return headers

    def _handle(self, response: httpx.Response, body: bytes, attempt: int) -> JsonReply:
        status = response.status_code
        request_id = response.headers.get(self._request_id_header)
        if 200 <= status < 300:
            return JsonReply(self._parse_body(response, body, request_id), status, request_id)
        if is_retryable_status(status):
            asked = parse_retry_after(response.headers.get("retry-after"))
            raise _Retry(self._status_text(status, body), status, request_id, asked)
        raise ProviderError(
            self._message(
                f"HTTP {status} {_reason(status)}",
                request_id,
                self._excerpt(body),
                hint=self._hint(status),
            ),
            provider=self.provider,
            status=status,
            request_id=request_id,
        )

    def _parse_body(
        self, response: httpx.Response, content: bytes, request_id: str | None
    ) -> dict[str, Any]:
        try:
            body = json.loads(content)
        except (ValueError, UnicodeDecodeError, RecursionError):
            kind = response.headers.get("content-type", "no content-type")
            raise ProviderError(
                self._message(
                    f"response is not valid JSON (HTTP {response.status_code}, {kind})",
                    request_id,
                    self._excerpt(content),
                    hint=f"check that {self._base_url_env} points at the API",
                ),
                provider=self.provider,
                status=response.status_code,
                request_id=request_id,
            ) from None
        if not isinstance(body, dict):
            raise ProviderError(
                self._message(
                    f"response JSON is a {type(body).__name__}, expected an object",
                    request_id,
                    self._excerpt(content),
                ),
                provider=self.provider,
                status=response.status_code,
                request_id=request_id,
            )
        return body

    def _next_delay(
        self, last: _Retry, attempt: int, call_deadline: float, timeout: float
    ) -> float:
        """The wait before the next attempt. A wait the server asked for (``Retry-After``)
        is waited in full or the call fails at once: see
        :meth:`RetryPolicy.retry_after_refusal` (its limits are ``retry_after_cap_s`` and
        what the call's deadline leaves once the remaining attempts keep their full
        ``timeout``). Our own backoff is part of the deadline's budget: when an attempt
        overran its timeout a little, it is shortened, not refused."""
        attempts_left = self.retry.attempts - attempt
        left = call_deadline - time.monotonic() - attempts_left * timeout
        if last.asked is not None:
            refused = self.retry.retry_after_refusal(last.asked, left)
            if refused:
                raise self._final_error(last, attempt, f"not retried: {refused}")
            delay = last.asked
        elif left < 0:  # the attempts so far overran the whole backoff budget
            why = (
                f"the call's deadline leaves no time for {attempts_left} more "
                f"attempt{'s' if attempts_left != 1 else ''} of up to {timeout:g} s"
            )
            raise self._final_error(last, attempt, f"not retried: {why}")
        else:
            delay = min(self.retry.backoff(attempt), left)
        self._log_retry(last, delay, attempt)
        return delay

    def _transport_retry(self, exc: httpx.HTTPError, url: str, timeout: float) -> _Retry:
        if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
            raise ConfigError(
                f"invalid {self._base_url_env} {self._shown_url()!r}: {self._redact(str(exc))}"
            ) from None
        if isinstance(exc, httpx.TimeoutException):
            reason = _timed_out(timeout, self._shown_url(url))
        elif isinstance(exc, httpx.ConnectError):
            reason = (
                f"cannot connect to {self._shown_url(url)} ({self._short(str(exc))}); "
                f"check {self._base_url_env} and that the server is running"
            )
        else:
            reason = (
                f"connection error talking to {self._shown_url(url)} "
                f"({type(exc).__name__}: {self._short(str(exc))})"
            )
        return _Retry(self._redact(reason), None, None)

    def _final_error(self, last: _Retry, attempts: int, note: str | None = None) -> ProviderError:
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        what = f"{last.reason} (gave up after {tries}{'; ' + note if note else ''})"
        return ProviderError(
            self._message(what, last.request_id, None),
            provider=self.provider,
            status=last.status,
            request_id=last.request_id,
        )

    def _status_text(self, status: int, body: bytes) -> str:
        return f"HTTP {status} {_reason(status)}: {self._excerpt(body)}"

    def _message(
        self, what: str, request_id: str | None, excerpt: str | None, *, hint: str | None = None
    ) -> str:
        text = f"{self.provider}: {what}"
        text += f" [request id {request_id}]" if request_id else " [no request id]"
        if excerpt:
            text += f": {excerpt}"
        if hint:
            text += f" -- {hint}"
        return self._redact(text)

    def _redact(self, text: str) -> str:
        """``text`` without the API key or the base URL's password (in any form)."""
        return redact(scrub_url_password(text, self.base_url), self._secret, self._basic_secret)

    def _short(self, text: str) -> str:
        """An excerpt of ``text``, redacted first: a secret the cut would split is still
        recognised (a key cut in half would otherwise show its first half)."""
        return _short(self._redact(text))

    def _shown_url(self, url: str | None = None) -> str:
        """A request URL (the base URL by default) as messages show it: with the base URL's
        ``user:***@`` (who was sent, not the password)."""
        if url is None:
            return redact_url(self.base_url)
        if self._send_base != self.base_url and url.startswith(self._send_base):
            url = self.base_url + url[len(self._send_base) :]
        return self._redact(redact_url(url))

    def _hint(self, status: int) -> str | None:
        if status in (401, 403):
            return f"check {self._key_env}"
        if status == 404:
            return f"check the model name and {self._base_url_env}"
        return None

    def _excerpt(self, content: bytes) -> str:
        text = content.decode("utf-8", errors="replace")
        try:
            body = json.loads(text)
        except (ValueError, RecursionError):
            body = None
        if isinstance(body, dict):
            err = body.get("error")
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                text = err["message"]
            elif isinstance(err, str):
                text = err
        elif "<" in text and ">" in text:
            text = re.sub(r"<[^>]*>", " ", text)
        return self._short(text) or "(empty body)"

    def _log_attempt(self, url: str, attempt: int) -> None:
        log.debug("%s: POST %s (attempt %d)", self.provider, self._shown_url(url), attempt)

    def _log_retry(self, last: _Retry, delay: float, attempt: int) -> None:
        log.warning(
            "%s: %s; retrying in %.2f s (attempt %d of %d)",
            self.provider,
            self._redact(last.reason),
            delay,
            attempt + 1,
            self.retry.attempts,
        )


def _timed_out(timeout: float, shown_url: str) -> str:
    return (
        f"request to {shown_url} timed out after {timeout:g} s "
        "(no complete response by the deadline)"
    )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "" if status != 529 else "Overloaded"


def _short(text: str) -> str:
    """One line of at most ``_EXCERPT_CHARS`` of a reply body, inert for a terminal (a
    server's error body reaches log lines and error messages)."""
    text = inert(" ".join(text.split()))
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."
