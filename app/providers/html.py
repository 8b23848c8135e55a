"""Telling an HTML page (captive portal, WAF block page, proxy error) from an API's JSON or SSE."""

from __future__ import annotations

_MARKERS = ("<!doctype html", "<html", "<head", "<body", "<title", "<meta ", "<script", "<h1", "<center")


def looks_like_html(body: str | bytes | None, content_type: str | None = None) -> bool:
    """True when `body` is a web page rather than an API response.

    The content type wins when it says HTML; otherwise the first kilobyte decides: a body
    that starts with `<` and holds a typical HTML tag. JSON and SSE never start with `<`.
    """
    if content_type and "html" in content_type.lower():
        return True
    if not body:
        return False
    head = body[:1024]
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    head = head.lstrip("\ufeff \t\r\n").lower()
    if not head.startswith("<"):
        return False
    return any(marker in head for marker in _MARKERS)


def decode_body(body: bytes | str | None, limit: int = 1 << 20) -> str | None:
    """A response body as text for error records: UTF-8 with replacement, at most `limit` bytes."""
    if body is None:
        return None
    if isinstance(body, str):
        return body[:limit]
    return body[:limit].decode("utf-8", errors="replace")


def page_heading(body: str | bytes | None, limit: int = 80) -> str:
    """What an HTML page says it is: its `<title>`, else its first `<h1>`, as one line of text ("" if none)."""
    if not body:
        return ""
    head = body[:8192]
    if isinstance(head, bytes):
        head = head.decode("utf-8", errors="replace")
    import html as html_lib
    import re

    for tag in ("title", "h1"):
        found = re.search(rf"<{tag}\b[^>]*>(.*?)</{tag}\s*>", head, re.IGNORECASE | re.DOTALL)
        if found:
            text = " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())
            if text:
                return text if len(text) <= limit else text[: limit - 1] + "…"
    return ""
