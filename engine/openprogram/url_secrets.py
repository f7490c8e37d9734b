"""The password a URL may carry, masked wherever the URL (or a message echoing it) is shown.

One place for both kinds of URL the project takes credentials in: a store's PostgreSQL URL
(``postgresql://user:PASSWORD@host/db``, ``?password=...``) and a model provider's base URL
(``https://user:PASSWORD@host/v1``). Found by scanning, not by a URL parser, so a malformed
URL (a bad port, an ``@`` left unencoded in the password) still has its password found.
Imports nothing from the project: the store readers and the editor's server use it without
loading the model runtime.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["redact_url", "scrub_url_password", "url_password_spans"]

_QUERY_PASSWORD = re.compile(r"[?&]password=([^&#]*)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:/*")


def url_password_spans(url: str) -> list[tuple[int, int]]:
    """Where ``url`` holds a password: ``user:PASSWORD@`` (up to the last ``@``: one left
    unencoded may belong to it) and every ``password=`` query parameter. A span too many
    only hides more of a message."""
    spans = [match.span(1) for match in _QUERY_PASSWORD.finditer(url) if match.group(1)]
    scheme = _SCHEME.match(url)  # also postgresql:/ (a URL that went through a Path)
    start = scheme.end() if scheme else 0
    at = url.rfind("@", start)
    colon = url.find(":", start, max(at, start))
    if 0 <= colon < at - 1:
        spans.append((colon + 1, at))
    return spans


def redact_url(url: str) -> str:
    """``url`` as messages show it: each password replaced by ``***`` (the user name
    stays), also when the URL is malformed."""
    hidden = [False] * len(url)
    for begin, end in url_password_spans(url):
        hidden[begin:end] = [True] * (end - begin)
    out = []
    for i, char in enumerate(url):
        if not hidden[i]:
            out.append(char)
        elif i == 0 or not hidden[i - 1]:
            out.append("***")
    return "".join(out)


def scrub_url_password(text: str, url: str) -> str:
    """``text`` (a library's or a server's message, which may echo the URL or a piece of
    it) without the password of ``url``, as written or percent-decoded."""
    for begin, end in url_password_spans(url):
        raw = url[begin:end]
        for secret in sorted({raw, unquote(raw)}, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "***")
    return text
