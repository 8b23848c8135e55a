"""What the providers' HTTP stacks take from the environment: proxies and CA bundles.

The Anthropic and OpenAI SDKs (httpx) and boto3 all read `HTTPS_PROXY` / `HTTP_PROXY` /
`NO_PROXY`; the httpx SDKs trust `SSL_CERT_FILE` / `SSL_CERT_DIR`, boto3 `AWS_CA_BUNDLE`, and bulkhead
hands one bundle to all of them (`ca_bundle`, see `app.ca_bundle`).
`bulkhead config check` reports them — proxy passwords hidden — and flags a CA bundle that
does not exist, the usual cause of TLS errors behind a TLS-inspecting proxy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
# Who trusts each bundle variable (bulkhead hands the route's bundle to its SDK: `app.ca_bundle`).
CA_VARIABLES = (
    ("SSL_CERT_FILE", "Anthropic, OpenAI", False),
    ("SSL_CERT_DIR", "Anthropic, OpenAI", True),
    ("AWS_CA_BUNDLE", "Bedrock", False),
    ("REQUESTS_CA_BUNDLE", "every route whose SDK's own variable is unset", False),
)


@dataclass(frozen=True)
class NetworkLine:
    ok: bool
    text: str


def hide_password(url: str) -> str:
    """`http://alice:s3cret@proxy:8080` → `http://alice:***@proxy:8080` (anything else unchanged)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable URL hidden)"
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=f"{parts.username or ''}:***@{host}").geturl()


def register_proxy_passwords(env: Mapping[str, str] | None = None) -> None:
    """The passwords of the proxy URLs join the redaction registry (`app.redact`)."""
    from app.redact import register_url_password

    env = os.environ if env is None else env
    for name in PROXY_VARIABLES[:-1]:
        for variable in (name, name.lower()):
            register_url_password(env.get(variable), f"password in {variable}")


def _get(env: Mapping[str, str], name: str) -> str | None:
    return env.get(name) or env.get(name.lower()) or None


def network_lines(env: Mapping[str, str] | None = None) -> list[NetworkLine]:
    """One line per proxy or CA variable that is set; nothing when none is."""
    env = os.environ if env is None else env
    lines: list[NetworkLine] = []
    for name in PROXY_VARIABLES:
        value = _get(env, name)
        if value:
            shown = value if name == "NO_PROXY" else hide_password(value)
            lines.append(NetworkLine(True, f"{name}={shown}"))
    for name, used_by, is_dir in CA_VARIABLES:
        value = env.get(name)  # read in upper case only
        if not value:
            continue
        exists = os.path.isdir(value) if is_dir else os.path.isfile(value)
        if exists:
            lines.append(NetworkLine(True, f"{name}={value} (trusted by {used_by})"))
        else:
            kind = "folder" if is_dir else "file"
            lines.append(
                NetworkLine(
                    False,
                    f"{name}={value}: no such {kind} — {used_by} requests will fail TLS "
                    f"verification; point it at your proxy's CA bundle or unset it",
                )
            )
    return lines


# -- the proxy in effect for one request -----------------------------------------------------------------
@dataclass(frozen=True)
class ProxyInEffect:
    """The forward proxy an SDK uses for a URL, and the variable (as spelled in the environment) that set it."""

    variable: str  # "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY", …
    url: str  # the proxy URL, password hidden
    address: str  # host:port

    def named(self) -> str:
        return f"the proxy at {self.address} ({self.variable})"


# Which variables each scheme reads, in the order urllib (and so httpx and botocore) prefers them: a
# lower-case variable wins over its upper-case twin. botocore has no ALL_PROXY.
_SCHEME_VARIABLES = {"https": ("https_proxy", "HTTPS_PROXY"), "http": ("http_proxy", "HTTP_PROXY")}
_ALL_VARIABLES = ("all_proxy", "ALL_PROXY")
_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}


def proxy_for(url: str, provider: str = "", env: Mapping[str, str] | None = None) -> ProxyInEffect | None:
    """The proxy the route's SDK takes from the environment for `url` (None: a direct connection).

    httpx (the Anthropic and OpenAI SDKs) reads `{scheme}_proxy` then `all_proxy`; botocore (Bedrock) only
    `{scheme}_proxy`. `NO_PROXY` hosts go direct.
    """
    import urllib.request

    bypass = getattr(urllib.request, "proxy_bypass_environment", None)  # not in typeshed's stubs
    env = os.environ if env is None else env
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    scheme = (parts.scheme or "https").lower()
    names: tuple[str, ...] = _SCHEME_VARIABLES.get(scheme, ())
    if provider != "bedrock":
        names = names + _ALL_VARIABLES
    chosen = next(((name, env[name]) for name in names if env.get(name)), None)
    if chosen is None:
        return None
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    host = parts.hostname or ""
    if no_proxy and host and bypass is not None and _bypassed(host, parts.port, no_proxy, bypass):
        return None
    name, value = chosen
    if name.islower() and env.get(name.upper()) == value:
        name = name.upper()  # both spellings say the same: the usual name
    try:
        proxy = urlsplit(value if "://" in value else f"http://{value}")
        port = proxy.port or _DEFAULT_PORTS.get(proxy.scheme.lower(), 80)
    except ValueError:
        return ProxyInEffect(name, hide_password(value), hide_password(value))
    return ProxyInEffect(name, hide_password(value), f"{proxy.hostname}:{port}")


def _bypassed(host: str, port: int | None, no_proxy: str, bypass: object) -> bool:
    target = f"{host}:{port}" if port else host
    try:
        return bool(bypass(target, {"no": no_proxy}))  # type: ignore[operator]
    except Exception:
        return False
