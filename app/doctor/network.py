"""The network half of `bulkhead doctor`: the proxy in effect, DNS, TCP, the proxy's tunnel and TLS.

Each function is one step and returns a `Step`: ok, fail (with the sentence that says what to do), or skip.
They use the standard library only and the route's own settings (its URL, its CA bundle, the proxy
variables its SDK reads), so what they find is what the SDK meets.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from app.doctor.certs import CertError, CertInfo, inspecting_proxy, parse_certificate
from app.network_env import hide_password

Status = Literal["ok", "fail", "warn", "skip", "info"]


@dataclass(frozen=True)
class Step:
    """One line of the walk: its name, its outcome and the sentence; `details` go to the report."""

    name: str
    status: Status
    text: str
    details: tuple[str, ...] = ()


@dataclass(frozen=True)
class Target:
    """Where a route's requests go: the URL, its host and port, and how to say where that came from."""

    url: str
    host: str
    port: int
    scheme: str
    setting: str  # e.g. "routes.work.base_url", "the Anthropic default endpoint"


@dataclass(frozen=True)
class Proxy:
    url: str
    variable: str  # the environment variable it came from
    host: str
    port: int
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def shown(self) -> str:
        return hide_password(self.url)


def target_of(url: str, setting: str) -> Target:
    parts = urlsplit(url)
    scheme = parts.scheme or "https"
    port = parts.port or (443 if scheme == "https" else 80)
    return Target(url, parts.hostname or "", port, scheme, setting)


def _no_proxy_matches(host: str, port: int, no_proxy: str) -> str | None:
    """The NO_PROXY entry that exempts `host` (as httpx and urllib read it), or None."""
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return entry
        name, _, entry_port = entry.partition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.removeprefix("*").removeprefix(".") if name.startswith(("*.", ".")) else name
        lowered = host.lower()
        try:
            if ipaddress.ip_address(lowered) in ipaddress.ip_network(name, strict=False):
                return entry
        except ValueError:
            pass
        if lowered == name or lowered.endswith("." + name):
            return entry
    return None


def proxy_for(target: Target, env: Mapping[str, str] | None = None) -> tuple[Proxy | None, str]:
    """The proxy the SDKs use for `target` and a sentence saying why (which variable, or why none)."""
    env = os.environ if env is None else env
    names = [f"{target.scheme}_proxy", f"{target.scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"]
    chosen = next(((name, env[name]) for name in names if env.get(name)), None)
    if chosen is None:
        return None, f"no proxy: none of {', '.join(names[1::2])} is set — direct connection"
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    exempt = _no_proxy_matches(target.host, target.port, no_proxy)
    if exempt is not None:
        return None, f"no proxy: {target.host} matches {exempt!r} in NO_PROXY (so {chosen[0]} is not used)"
    name, value = chosen
    parts = urlsplit(value if "://" in value else f"http://{value}")
    proxy = Proxy(
        url=value,
        variable=name,
        host=parts.hostname or "",
        port=parts.port or (443 if parts.scheme == "https" else 80),
        username=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
    )
    return proxy, f"proxy {proxy.shown} from {name}"


def dns_step(host: str, port: int, what: str) -> tuple[Step, list[str]]:
    started = time.monotonic()
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        return (
            Step(
                "dns",
                "fail",
                f"{host} does not resolve ({exc.strerror or exc}) — check the host name in {what}, or ask your "
                f"network team whether it resolves on this network (a VPN, a split-horizon DNS)",
            ),
            [],
        )
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    elapsed = (time.monotonic() - started) * 1000
    return Step("dns", "ok", f"{host} → {', '.join(addresses[:4])} ({elapsed:.0f} ms)"), addresses


def tcp_step(host: str, port: int, what: str, timeout: float) -> tuple[Step, socket.socket | None]:
    started = time.monotonic()
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except ConnectionRefusedError:
        return (
            Step(
                "tcp",
                "fail",
                f"nothing listens at {host}:{port} (connection refused) — the address comes from {what}: start "
                f"the server there, or fix {what}",
            ),
            None,
        )
    except TimeoutError:
        return (
            Step(
                "tcp",
                "fail",
                f"no answer from {host}:{port} within {timeout:g} s — a firewall drops the connection, or the host "
                f"is down; check {what}, or ask your network team to open {host}:{port}",
            ),
            None,
        )
    except OSError as exc:
        return (
            Step(
                "tcp",
                "fail",
                f"cannot connect to {host}:{port}: {exc.strerror or exc} — check {what} and this machine's network",
            ),
            None,
        )
    elapsed = (time.monotonic() - started) * 1000
    return Step("tcp", "ok", f"connected to {host}:{port} ({elapsed:.0f} ms)"), sock


def _read_head(sock: socket.socket, limit: int = 16384) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < limit:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def tunnel_step(sock: socket.socket, proxy: Proxy, target: Target) -> Step:
    """CONNECT through the proxy (what the SDKs do for an https URL)."""
    lines = [f"CONNECT {target.host}:{target.port} HTTP/1.1", f"Host: {target.host}:{target.port}"]
    if proxy.username or proxy.password:
        token = base64.b64encode(f"{proxy.username}:{proxy.password}".encode()).decode()
        lines.append(f"Proxy-Authorization: Basic {token}")
    try:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = _read_head(sock)
    except OSError as exc:
        return Step(
            "tunnel", "fail", f"the proxy {proxy.shown} dropped the CONNECT ({exc}) — ask your network team"
        )
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1", errors="replace")
    parts = status_line.split(" ", 2)
    code = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = head.decode("latin-1", errors="replace").split("\r\n")[1:]
    via = next((h for h in headers if h.lower().startswith(("via:", "server:", "x-squid-error:"))), "")
    if code == 200:
        return Step(
            "tunnel", "ok", f"{proxy.shown} ({proxy.variable}) opened a tunnel to {target.host}:{target.port}"
        )
    if code == 407:
        where = f"put them in {proxy.variable} as http://user:password@{proxy.host}:{proxy.port}"
        what = "refused the credentials in" if proxy.username else "wants credentials:"
        return Step(
            "tunnel",
            "fail",
            f"the proxy {proxy.shown} {what} {proxy.variable} (407) — {where} (the variable in effect)",
            (status_line, via) if via else (status_line,),
        )
    if code is None:
        return Step(
            "tunnel",
            "fail",
            f"{proxy.shown} did not answer the CONNECT like an HTTP proxy — is {proxy.variable} right?",
        )
    return Step(
        "tunnel",
        "fail",
        f"the proxy {proxy.shown} refused the tunnel to {target.host}:{target.port}: {status_line.strip()}"
        + (f" ({via.strip()})" if via else "")
        + " — ask your network team to allow this host",
        (status_line,),
    )


def _leaf(sock: socket.socket, host: str, timeout: float) -> CertInfo | None:
    """The server's certificate, read without verifying it (to name its issuer)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sock.settimeout(timeout)
    try:
        with context.wrap_socket(sock, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None
    try:
        return parse_certificate(der) if der else None
    except CertError:
        return None


def tls_step(
    connect, target: Target, verify: ssl.SSLContext, trust_source: str, ca_hint: str, timeout: float
) -> Step:
    """The TLS handshake as the route's SDK does it (its CA settings), and who issued the certificate.

    `connect()` gives a fresh socket at the TLS start (through the tunnel when there is a proxy)."""
    try:
        sock = connect()
        sock.settimeout(timeout)
        with verify.wrap_socket(sock, server_hostname=target.host) as tls:
            der = tls.getpeercert(binary_form=True)
            version = tls.version() or "TLS"
        cert = parse_certificate(der) if der else None
    except ssl.SSLCertVerificationError as exc:
        reason = exc.verify_message or str(exc)
        cert = _leaf(connect(), target.host, timeout)
        issuer = cert.issuer_text if cert is not None else "an unknown issuer"
        product = inspecting_proxy(cert) if cert is not None else None
        details = (f"verification: {reason}", f"issuer: {issuer}")
        if product:
            return Step(
                "tls",
                "fail",
                f"the certificate for {target.host} is issued by {product} ({issuer}) — a TLS-inspecting proxy "
                f"re-signs your traffic, and {trust_source} does not trust its root: get its CA certificate from "
                f"your network team and set ca_bundle in config.toml to it (every route trusts it; this SDK alone reads {ca_hint})"
                + (
                    " (the \"expired\" error is the proxy's certificate, not the provider's)"
                    if "expired" in reason
                    else ""
                ),
                details,
            )
        if cert is not None and cert.expired():
            return Step(
                "tls",
                "fail",
                f"the certificate for {target.host} expired on {cert.not_after:%Y-%m-%d} (issuer {issuer}) — if "
                f"the provider's own certificate is valid in a browser elsewhere, something on the way re-signs "
                f"TLS: ask your network team",
                details,
            )
        return Step(
            "tls",
            "fail",
            f"{trust_source} does not trust the certificate for {target.host} ({reason}; issuer {issuer}) — if a "
            f"proxy inspects TLS here, set ca_bundle in config.toml to its CA certificate (this SDK alone reads {ca_hint})",
            details,
        )
    except ssl.SSLError as exc:
        return Step(
            "tls",
            "fail",
            f"the TLS handshake with {target.host} failed ({exc.reason or exc}) — something on the way speaks "
            f"another protocol, or closes TLS; ask your network team",
        )
    except OSError as exc:
        return Step(
            "tls", "fail", f"the TLS handshake with {target.host} was cut ({exc}) — ask your network team"
        )
    issuer = cert.issuer_text if cert is not None else "unknown issuer"
    product = inspecting_proxy(cert) if cert is not None else None
    inspected = f" — {product}, a TLS-inspecting proxy, re-signs it" if product else ""
    return Step(
        "tls",
        "ok",
        f"{version}, certificate issued by {issuer}{inspected}; trusted through {trust_source}",
        (f"subject: {', '.join(f'{k}={v}' for k, v in (cert.subject if cert else {}).items())}",),
    )
