"""JSON-over-HTTP transport shared by the HTTP providers: retries, error mapping, redaction.

Every failure becomes one :class:`~openprogram.errors.ProviderError` whose message names
the provider, the HTTP status, the request id and a short excerpt of the body; the API
key is never part of it (bodies that echo the key are redacted).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import httpx

from openprogram.errors import ConfigError, ProviderError
from openprogram.runtime.retry import RetryPolicy, is_retryable_status
from openprogram.runtime.secret import Secret, redact

log = logging.getLogger("openprogram.runtime")

_EXCERPT_CHARS = 200
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def validate_base_url(url: str, env_name: str) -> str:
    """``url`` without a trailing slash, or ConfigError when it is not an http(s) URL."""
    text = url.strip()
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise ConfigError(f"invalid {env_name} {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"invalid {env_name} {url!r}: expected an http(s) URL such as "
            "'http://127.0.0.1:8000/v1'"
        )
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ConfigError(f"invalid {env_name} {url!r}: bad port") from None
    return text.rstrip("/")


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (local servers need no API key)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOOPBACK_HOSTS or host.startswith("127.") or host.endswith(".localhost")


def display_url(url: str) -> str:
    """``url`` without any ``user:password@`` part."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl()


@dataclass
class JsonReply:
    """A successful JSON response."""

    body: dict[str, Any]
    status: int
    request_id: str | None


class _Retry(Exception):
    """Internal: this attempt failed in a retryable way."""

    def __init__(self, reason: str, status: int | None, request_id: str | None, delay: float):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.request_id = request_id
        self.delay = delay


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
    ) -> None:
        self.provider = provider
        self.base_url = base_url
        self._headers = dict(headers)
        self._secret = secret
        self._key_env = key_env
        self._base_url_env = base_url_env
        self._request_id_header = request_id_header
        self.timeout_s = timeout_s
        self.retry = retry
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonTransport(provider={self.provider!r}, base_url={display_url(self.base_url)!r})"

    # -- public -------------------------------------------------------------------

    def post(self, path: str, payload: Mapping[str, Any], *, timeout_s: float | None) -> JsonReply:
        """POST ``payload`` to ``base_url + path``; retries; returns the parsed JSON body."""
        url = self.base_url + path
        timeout = timeout_s or self.timeout_s
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = httpx.Client()
        last: _Retry | None = None
        for attempt in range(1, self.retry.attempts + 1):
            self._log_attempt(url, attempt)
            try:
                response = self._client.post(
                    url, json=payload, headers=self._request_headers(), timeout=timeout
                )
                return self._handle(response, attempt)
            except _Retry as retry:
                last = retry
            except httpx.HTTPError as exc:
                last = self._transport_retry(exc, url, timeout)
            if attempt < self.retry.attempts:
                delay = last.delay if last.delay >= 0 else self.retry.backoff(attempt)
                self._log_retry(last, delay, attempt)
                self.retry.sleep(delay)
        assert last is not None
        raise self._final_error(last)

    async def apost(
        self, path: str, payload: Mapping[str, Any], *, timeout_s: float | None
    ) -> JsonReply:
        """Async form of :meth:`post`."""
        url = self.base_url + path
        timeout = timeout_s or self.timeout_s
        client = self._async_client()
        last: _Retry | None = None
        for attempt in range(1, self.retry.attempts + 1):
            self._log_attempt(url, attempt)
            try:
                response = await client.post(
                    url, json=payload, headers=self._request_headers(), timeout=timeout
                )
                return self._handle(response, attempt)
            except _Retry as retry:
                last = retry
            except httpx.HTTPError as exc:
                last = self._transport_retry(exc, url, timeout)
            if attempt < self.retry.attempts:
                delay = last.delay if last.delay >= 0 else self.retry.backoff(attempt)
                self._log_retry(last, delay, attempt)
                await self.retry.asleep(delay)
        assert last is not None
        raise self._final_error(last)

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
        excerpt = _short(json.dumps(reply.body))
        return ProviderError(
            self._message(f"unexpected response shape ({what})", reply.request_id, excerpt),
            provider=self.provider,
            status=reply.status,
            request_id=reply.request_id,
        )

    def reply_error(self, reply: JsonReply, what: str, excerpt: str) -> ProviderError:
        """A ProviderError about a reply's content (e.g. invalid JSON under response_format)."""
        return ProviderError(
            self._message(what, reply.request_id, redact(_short(excerpt), self._secret)),
            provider=self.provider,
            status=reply.status,
            request_id=reply.request_id,
        )

    # -- internals ----------------------------------------------------------------

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            # An AsyncClient's pool is bound to the loop it was first used on.
            self._aclient = httpx.AsyncClient()
            self._aloop = loop
        return self._aclient

    def _request_headers(self) -> dict[str, str]:
        headers = dict(self._headers)
        if self._secret:
            if self.provider == "anthropic":
                headers["x-api-key"] = self._secret.reveal()
            else:
                headers["authorization"] = f"Bearer {self._secret.reveal()}"
        return headers

    def _handle(self, response: httpx.Response, attempt: int) -> JsonReply:
        status = response.status_code
        request_id = response.headers.get(self._request_id_header)
        if 200 <= status < 300:
            return JsonReply(self._parse_body(response, request_id), status, request_id)
        if is_retryable_status(status):
            delay = self.retry.delay(attempt, response.headers)
            raise _Retry(self._status_text(response), status, request_id, delay)
        raise ProviderError(
            self._message(
                f"HTTP {status} {_reason(status)}",
                request_id,
                self._excerpt(response),
                hint=self._hint(status),
            ),
            provider=self.provider,
            status=status,
            request_id=request_id,
        )

    def _parse_body(self, response: httpx.Response, request_id: str | None) -> dict[str, Any]:
        try:
            body = json.loads(response.content)
        except (ValueError, UnicodeDecodeError):
            kind = response.headers.get("content-type", "no content-type")
            raise ProviderError(
                self._message(
                    f"response is not valid JSON (HTTP {response.status_code}, {kind})",
                    request_id,
                    self._excerpt(response),
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
                    self._excerpt(response),
                ),
                provider=self.provider,
                status=response.status_code,
                request_id=request_id,
            )
        return body

    def _transport_retry(self, exc: httpx.HTTPError, url: str, timeout: float) -> _Retry:
        if isinstance(exc, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
            raise ConfigError(
                f"invalid {self._base_url_env} {display_url(self.base_url)!r}: "
                f"{redact(str(exc), self._secret)}"
            ) from None
        if isinstance(exc, httpx.TimeoutException):
            reason = f"request timed out after {timeout:g} s"
        elif isinstance(exc, httpx.ConnectError):
            reason = (
                f"cannot connect to {display_url(url)} ({_short(str(exc))}); "
                f"check {self._base_url_env} and that the server is running"
            )
        else:
            reason = f"connection error talking to {display_url(url)} ({type(exc).__name__}: {_short(str(exc))})"
        return _Retry(redact(reason, self._secret), None, None, -1.0)

    def _final_error(self, last: _Retry) -> ProviderError:
        attempts = self.retry.attempts
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        return ProviderError(
            self._message(f"{last.reason} (gave up after {tries})", last.request_id, None),
            provider=self.provider,
            status=last.status,
            request_id=last.request_id,
        )

    def _status_text(self, response: httpx.Response) -> str:
        status = response.status_code
        return f"HTTP {status} {_reason(status)}: {self._excerpt(response)}"

    def _message(
        self, what: str, request_id: str | None, excerpt: str | None, *, hint: str | None = None
    ) -> str:
        text = f"{self.provider}: {what}"
        text += f" [request id {request_id}]" if request_id else " [no request id]"
        if excerpt:
            text += f": {excerpt}"
        if hint:
            text += f" -- {hint}"
        return redact(text, self._secret)

    def _hint(self, status: int) -> str | None:
        if status in (401, 403):
            return f"check {self._key_env}"
        if status == 404:
            return f"check the model name and {self._base_url_env}"
        return None

    def _excerpt(self, response: httpx.Response) -> str:
        text = response.content.decode("utf-8", errors="replace")
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if isinstance(body, dict):
            err = body.get("error")
            if isinstance(err, dict) and isinstance(err.get("message"), str):
                text = err["message"]
            elif isinstance(err, str):
                text = err
        elif "<" in text and ">" in text:
            text = re.sub(r"<[^>]*>", " ", text)
        return redact(_short(text), self._secret) or "(empty body)"

    def _log_attempt(self, url: str, attempt: int) -> None:
        log.debug("%s: POST %s (attempt %d)", self.provider, display_url(url), attempt)

    def _log_retry(self, last: _Retry, delay: float, attempt: int) -> None:
        log.warning(
            "%s: %s; retrying in %.2f s (attempt %d of %d)",
            self.provider,
            redact(last.reason, self._secret),
            delay,
            attempt + 1,
            self.retry.attempts,
        )


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "" if status != 529 else "Overloaded"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."
