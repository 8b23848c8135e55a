"""Where proxied requests go: a configured route (its base URL, the CA bundle it trusts, the proxy the
environment names, as its SDK would) or a bare `--upstream URL`, and the httpx client that sends them.

The client's path is appended to the upstream as the client's own SDK would: an Anthropic client's
`/v1/messages` goes to `<anthropic base>/v1/messages`; an OpenAI client's `/v1/responses` to
`<openai base>/responses` (an OpenAI base URL ends in `/v1`). `--upstream URL` serves both:
`URL/v1/messages` and `URL/v1/responses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.config import ConfigError, Route, Settings
from app.proxy.wire import Wire

ANTHROPIC_DEFAULT = "https://api.anthropic.com"
OPENAI_DEFAULT = "https://api.openai.com/v1"


@dataclass(frozen=True)
class Upstream:
    label: str  # for people: "route work (anthropic)" or the URL
    anthropic_base: str | None  # None: this upstream does not serve the Messages API
    openai_base: str | None  # None: nor OpenAI's; else it ends where `/v1` would (…/v1)
    route: Route  # the route (or a stand-in for --upstream) whose CA settings apply
    headers: tuple[tuple[str, str], ...] = ()  # added to every request (e.g. a gateway's own token)

    def base_for(self, wire: Wire) -> str | None:
        if wire is Wire.ANTHROPIC:
            return self.anthropic_base
        if wire in (Wire.OPENAI_CHAT, Wire.OPENAI_RESPONSES):
            return self.openai_base
        return self.anthropic_base or (self.openai_base and _strip_v1(self.openai_base))

    def url_for(self, wire: Wire, target: str) -> str | None:
        """The upstream URL of the client's `target` (path and query), or None when this upstream does
        not serve `wire`."""
        base = self.base_for(wire)
        if base is None:
            return None
        if wire in (Wire.OPENAI_CHAT, Wire.OPENAI_RESPONSES) and target.startswith("/v1/"):
            return base + target[3:]
        return base + target

    def endpoint_id(self, wire: Wire) -> str:
        """Where a learned cap belongs — the same id a bulkhead route to the same place has
        (`Route.endpoint_id`), so the proxy and bulkhead's own sessions share one state.toml entry."""
        if wire is Wire.OTHER:
            wire = Wire.ANTHROPIC if self.anthropic_base else Wire.OPENAI_CHAT
        base = self.base_for(wire)
        if self.route.name != STANDIN_ROUTE and self.route.provider == wire.provider:
            return self.route.endpoint_id
        stand_in = Route(name=STANDIN_ROUTE, provider=wire.provider, model="", base_url=base)
        return stand_in.endpoint_id

    @property
    def served(self) -> tuple[str, ...]:
        return tuple(
            name for name, base in (("anthropic", self.anthropic_base), ("openai", self.openai_base)) if base
        )


STANDIN_ROUTE = "proxy-upstream"


def _strip_v1(url: str) -> str:
    return url[:-3] if url.endswith("/v1") else url


def from_url(url: str, headers: Sequence[tuple[str, str]] = ()) -> Upstream:
    """`--upstream URL`: both APIs, the client's path appended to URL."""
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"--upstream {url!r} is not an http(s) URL (e.g. https://gateway.example.com)")
    stand_in = Route(name=STANDIN_ROUTE, provider="anthropic", model="", base_url=url)
    return Upstream(url, url, url + "/v1", stand_in, tuple(headers))


def from_route(route: Route, headers: Sequence[tuple[str, str]] = ()) -> Upstream:
    """`--route NAME`: the route's provider only, at its base URL (the provider's default without one)."""
    if route.provider == "anthropic":
        base = (route.base_url or ANTHROPIC_DEFAULT).rstrip("/")
        return Upstream(f"route {route.name} (anthropic, {base})", base, None, route, tuple(headers))
    if route.provider == "openai":
        base = (route.base_url or OPENAI_DEFAULT).rstrip("/")
        return Upstream(f"route {route.name} (openai, {base})", None, base, route, tuple(headers))
    raise ConfigError(
        f"route {route.name!r} is a {route.provider} route: the proxy forwards the Anthropic and OpenAI APIs "
        f"(for the lab, run `bulkhead lab` and give its URL with --upstream)"
    )


def parse_header(text: str) -> tuple[str, str]:
    """`--header 'Name: value'`."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c in name for c in " \t\r\n") or "\n" in value or "\r" in value:
        raise ConfigError(f"--header {text[:60]!r} is not 'Name: value'")
    return name.strip(), value.strip()


def make_client(upstream: Upstream, settings: Settings, idle_timeout: float) -> Any:
    """The httpx client for upstream requests: the route's CA bundle, the environment's proxy (as the
    SDKs take it), `connect_timeout` to connect, `idle_timeout` between bytes; no headers of its own."""
    import httpx2 as httpx  # deferred: `bulkhead --help` stays instant

    from app.ca_bundle import CaBundleMissing, httpx_verify

    try:
        verify = httpx_verify(upstream.route, settings)
    except CaBundleMissing as exc:
        raise ConfigError(str(exc)) from None
    client = httpx.AsyncClient(
        verify=verify,
        trust_env=True,
        follow_redirects=False,
        timeout=httpx.Timeout(idle_timeout, connect=settings.connect_timeout, pool=None),
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
    )
    for name in list(client.headers):  # httpx's defaults (User-Agent, Accept, …): the client's own go up
        del client.headers[name]
    return client


def netloc(url: str) -> str:
    """`host:port` of a URL (the URL itself when it has none), for messages that name a hop."""
    from urllib.parse import urlsplit

    return urlsplit(url).netloc or url
