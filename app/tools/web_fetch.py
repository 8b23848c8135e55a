"""The `web_fetch` tool: one http(s) page as readable text, through the providers' proxy and CA bundle.

    outcome = await run_tool("web_fetch", {"url": "https://docs.example.com/guide"}, ctx)
    # → "URL: https://docs.example.com/guide/\nStatus: 200\nContent-Type: text/html\nCut: no\n\n# Guide\n…"

What it may do, and what it refuses:
- http and https only; the environment's `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` apply (httpx's
  `trust_env`, as the SDKs take them) and the CA bundle the providers trust (`ctx.fetch_verify`, built from
  `ca_bundle` / `SSL_CERT_FILE` … by `app.ca_bundle.fetch_verify`).
- Redirects are followed by hand, at most `ctx.fetch_max_redirects` hops; each hop's URL goes through
  `ctx.fetch_rule` (the user's `WebFetch(domain:…)` rules): a deny or ask rule stops the fetch there, and a
  hop that lands on a private or loopback address when the first URL did not is refused unless an allow
  rule names its host (a public page must not steer a fetch into the user's network).
- The body is read up to a cap and no further (`ctx.fetch_max_bytes` of text returned; HTML, whose markup
  shrinks, is read up to `HTML_READ_FACTOR` times that); HTML becomes text (`app.tools.html_text`),
  text and JSON pass through, anything else is refused before its body is read.

Everything fetched is untrusted: it is only ever the text of a tool result.
"""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any
from urllib.parse import urljoin, urlsplit

from app.model.tools import ToolSpec
from app.tools.base import ToolContext, ToolError, ToolInfo, ToolOutcome, error, ok, schema
from app.tools.html_text import html_to_text

HTML_READ_FACTOR = 4  # HTML is read up to 4x the text cap: its markup falls away in the conversion
USER_AGENT = "bulkhead-web-fetch/1"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_LOCAL_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def is_private_host(host: str) -> bool:
    """Does `host` name this machine or a private network by itself: a loopback, private, link-local or
    otherwise non-global IP literal, `localhost` or a `*.localhost` name. (A name is judged as written:
    bulkhead does not resolve it before asking, and behind a proxy the proxy resolves it.)"""
    host = host.strip("[]").lower().rstrip(".")
    if not host:
        return False
    if host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return not address.is_global


def check_url(url: str) -> str:
    """The URL, trimmed, or ToolError saying why it cannot be fetched."""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ToolError(f"{url[:200]!r} is not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ToolError(f"only http and https URLs are fetched, not {url[:200]!r}")
    if not parts.hostname:
        raise ToolError(f"{url[:200]!r} names no host")
    if parts.username or parts.password:
        raise ToolError("a URL with a user name or password in it is not fetched")
    return url


def content_kind(content_type: str) -> str:
    """ "html", "text", "json", or "" (refused) for a Content-Type header."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _HTML_TYPES:
        return "html"
    if media == "application/json" or media.endswith("+json"):
        return "json"
    if media.startswith("text/") or media in ("application/xml", "application/javascript") or not media:
        return "text"
    if media.endswith("+xml"):
        return "text"
    return ""


def _hop_refusal(ctx: ToolContext, url: str, first_private: bool) -> str:
    """Why bulkhead will not follow a redirect to `url` ("" when it may)."""
    try:
        check_url(url)
    except ToolError as exc:
        return f"the redirect leads to a URL that is not fetched: {exc}"
    host = host_of(url)
    kind, reason = ctx.fetch_rule(url) if ctx.fetch_rule is not None else (None, "")
    if kind == "deny":
        return f"the redirect leads to {host}, which your permission settings deny ({reason})"
    if kind == "ask":
        return (
            f"the redirect leads to {host}, which an ask rule covers ({reason}); fetch {url} itself so "
            f"the user is asked"
        )
    if is_private_host(host) and not first_private and kind != "allow":
        return (
            f"the redirect leads to {host}, a loopback or private address; it is followed only when an "
            f"allow rule names it, WebFetch(domain:{host})"
        )
    return ""


async def _web_fetch(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    import httpx2 as httpx  # deferred: `bulkhead --help` stays instant

    url = check_url(str(args["url"]))
    if ctx.fetch_problem:
        return error(f"web_fetch: not fetched: {ctx.fetch_problem}")
    first_private = is_private_host(host_of(url))
    cap = ctx.fetch_max_bytes
    timeout = httpx.Timeout(ctx.fetch_timeout)
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, text/plain, application/json;q=0.9, */*;q=0.1"}
    hops: list[str] = []
    async with httpx.AsyncClient(
        verify=ctx.fetch_verify, trust_env=True, follow_redirects=False, timeout=timeout, headers=headers
    ) as client:
        while True:
            try:
                async with client.stream("GET", url) as response:
                    if response.status_code in _REDIRECTS and "location" in response.headers:
                        target = urljoin(url, response.headers["location"])
                        if len(hops) >= ctx.fetch_max_redirects:
                            return error(
                                f"web_fetch: {url} redirects more than {ctx.fetch_max_redirects} times "
                                f"(web_fetch_max_redirects in config.toml); last hop to {target}"
                            )
                        refusal = _hop_refusal(ctx, target, first_private)
                        if refusal:
                            return error(f"web_fetch: not followed: {refusal}. Fetched so far: {url}")
                        hops.append(url)
                        url = target
                        continue
                    return await _read(response, url, hops, cap)
            except httpx.TimeoutException:
                return error(
                    f"web_fetch: {url} did not answer within {ctx.fetch_timeout:g} s "
                    f"(web_fetch_timeout in config.toml)"
                )
            except httpx.ProxyError as exc:
                return error(f"web_fetch: the proxy refused or failed the request for {url}: {exc}")
            except httpx.ConnectError as exc:
                hint = " (a TLS error: is the proxy's CA in ca_bundle?)" if "CERTIFICATE" in str(exc) else ""
                return error(f"web_fetch: cannot connect for {url}: {exc}{hint}")
            except httpx.HTTPError as exc:
                return error(f"web_fetch: {url} failed: {type(exc).__name__}: {exc}")


async def _read(response: Any, url: str, hops: list[str], cap: int) -> ToolOutcome:
    content_type = response.headers.get("content-type", "")
    kind = content_kind(content_type)
    shown_type = content_type.split(";", 1)[0].strip() or "(none)"
    if not kind:
        return error(
            f"web_fetch: {url} answered {response.status_code} with content type {shown_type}; only HTML, "
            f"plain text and JSON are fetched (not read: it would not be readable text)"
        )
    limit = cap * HTML_READ_FACTOR if kind == "html" else cap
    body = bytearray()
    cut = False
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            cut = True
            del body[limit:]
            break
    if shown_type == "(none)" and b"\x00" in body:
        return error(
            f"web_fetch: {url} answered {response.status_code} with no content type and binary content; "
            f"only HTML, plain text and JSON are fetched"
        )
    encoding = response.charset_encoding or "utf-8"
    try:
        text = bytes(body).decode(encoding, errors="replace")
    except LookupError:
        text = bytes(body).decode("utf-8", errors="replace")
    if kind == "html":
        text = html_to_text(text, base_url=url)
    encoded = text.encode("utf-8")
    if len(encoded) > cap:
        cut = True
        text = encoded[:cap].decode("utf-8", errors="ignore")
    head = [
        f"URL: {url}",
        *([f"Redirected from: {' -> '.join(hops)}"] if hops else []),
        f"Status: {response.status_code}",
        f"Content-Type: {shown_type}",
        f"Cut: yes, at {cap:,} bytes (web_fetch_max_bytes)" if cut else "Cut: no",
    ]
    status_note = "" if response.status_code < 400 else f"\n(the server answered {response.status_code})"
    body_text = text.strip() or "(empty body)"
    return ok("\n".join(head) + status_note + "\n\n" + body_text)


async def _cancellable(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    """The fetch, stopped when the user presses Esc (`ctx.cancel`)."""
    if ctx.cancel is None:
        return await _web_fetch(args, ctx)
    fetch = asyncio.ensure_future(_web_fetch(args, ctx))
    stop = asyncio.ensure_future(ctx.cancel.wait())
    try:
        done, _ = await asyncio.wait({fetch, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
    if fetch in done:
        return fetch.result()
    fetch.cancel()
    return error("web_fetch: cancelled by the user before the page arrived")


TOOLS = (
    ToolInfo(
        ToolSpec(
            "web_fetch",
            "Fetch one http or https web page and return it as text: HTML becomes plain text, plain text "
            "and JSON pass through, other types are refused. The result names the final address, the "
            "status, the content type and whether the text was cut.",
            schema(
                {"url": {"type": "string", "description": "The full address."}},
                ["url"],
            ),
        ),
        "fetch",
        _cancellable,
    ),
)
