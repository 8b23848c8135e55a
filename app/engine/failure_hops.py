"""Which hop answered, and what its answer means (issue 38 items 3–5).

A request goes from bulkhead through an optional forward proxy (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY), then
perhaps a CDN, WAF or gateway, to the provider. A refusal means different things at each: Squid's
`ERR_ACCESS_DENIED` is its policy, never a body cap; its `ERR_CONNECT_FAIL` is the proxy failing to reach
the provider, not the provider overloaded; nothing listening at base_url is neither. The hop is read from
what the answer says of itself:

- `X-Squid-Error: ERR_ACCESS_DENIED 0` (Squid names its error template);
- `Proxy-Status` (RFC 9209): the intermediary's name and an error type (`dns_error`, `connection_refused`,
  `http_request_denied`, …) — the last member with an error is the hop that failed;
- `Via` (the last entry is the hop nearest bulkhead) and `Server`, and the vendor marks of
  `failure_vendors.py`;
- with no HTTP answer: the proxy in effect for the URL (the sender says), else the endpoint itself.

`hop_of(case)` gives the `Hop` recorded on the Failure (`Failure.hop`); the checks below are what the
proxy rules of `failure_rules.py` are made of.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from app.engine.failure_case import Case, header_matches
from app.engine.failure_input import clip
from app.engine.failure_signals import Check, Hit, make_hit


class HopKind(StrEnum):
    FORWARD_PROXY = "forward-proxy"  # the client's egress proxy, from HTTPS_PROXY / HTTP_PROXY / ALL_PROXY
    GATEWAY = "gateway"  # a CDN, WAF, load balancer or API gateway in front of the provider
    ENDPOINT = "endpoint"  # the URL itself: nothing listening there, or the server at that address


@dataclass(frozen=True)
class Hop:
    """The hop that answered (or failed to): what it is, who makes it, where it is and what names it."""

    kind: HopKind
    vendor: str | None = None  # "squid", "nginx", "cloudflare", … (failure_vendors.py)
    name: str = ""  # how a sentence names it: "Squid (the proxy at 127.0.0.1:3128, from HTTP_PROXY)"
    address: str | None = None  # host:port, when known
    setting: str | None = None  # what the user changes: "HTTP_PROXY", "base_url of [routes.work]"
    error: str | None = None  # the hop's own error: "ERR_ACCESS_DENIED", Proxy-Status "dns_error"
    evidence: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        data["evidence"] = list(self.evidence)
        return data


# Squid's error templates (errors/templates/ERR_*): its own policy, and its failing to reach the origin.
SQUID_POLICY = frozenset(
    {"ERR_ACCESS_DENIED", "ERR_CACHE_ACCESS_DENIED", "ERR_ACL_TIME_QUOTA_EXCEEDED", "ERR_FORWARDING_DENIED"}
)
SQUID_UNREACHABLE = frozenset(
    {
        "ERR_CONNECT_FAIL",
        "ERR_DNS_FAIL",
        "ERR_CANNOT_FORWARD",
        "ERR_READ_ERROR",
        "ERR_WRITE_ERROR",
        "ERR_ZERO_SIZE_OBJECT",
        "ERR_SOCKET_FAILURE",
        "ERR_SECURE_CONNECT_FAIL",
        "ERR_GATEWAY_FAILURE",
    }
)
SQUID_TIMEOUT = frozenset({"ERR_READ_TIMEOUT", "ERR_LIFETIME_EXP", "ERR_CONNECT_TIMEOUT"})
# RFC 9209 §2.3 error types.
PROXY_STATUS_POLICY = frozenset({"http_request_denied", "destination_ip_prohibited"})
PROXY_STATUS_UNREACHABLE = frozenset(
    {
        "dns_error",
        "dns_timeout",
        "destination_not_found",
        "destination_unavailable",
        "destination_ip_unroutable",
        "connection_refused",
        "connection_terminated",
        "tls_protocol_error",
        "tls_certificate_error",
        "tls_alert_received",
        "proxy_loop_detected",
        "proxy_configuration_error",
    }
)
PROXY_STATUS_TIMEOUT = frozenset({"connection_timeout", "connection_read_timeout", "http_response_timeout"})
_VIA_ENTRY = re.compile(r"^\s*(?:[\w.-]+/)?[\d.]+\s+([^\s(,]+)(?:\s*\(([^)]*)\))?")
_SQUID_POLICY_TEXT = re.compile(r"access control configuration prevents your request")


# -- reading the answer ------------------------------------------------------------------------------------
def squid_error(case: Case) -> str | None:
    """`X-Squid-Error: ERR_CONNECT_FAIL 111` → "ERR_CONNECT_FAIL"."""
    value = case.header("x-squid-error")
    return value.split()[0].upper() if value and value.split() else None


def proxy_status(case: Case) -> tuple[str, str, str] | None:
    """(intermediary, error type, details) of the last Proxy-Status member that reports an error (RFC 9209)."""
    value = case.header("proxy-status")
    if not value:
        return None
    found = None
    for member in _split_members(value):
        fields = [part.strip() for part in _split_params(member)]
        if not fields or not fields[0]:
            continue
        params = dict(_param(part) for part in fields[1:])
        if params.get("error"):
            found = (fields[0].strip('"'), params["error"].lower(), params.get("details", ""))
    return found


def _split_members(value: str) -> list[str]:
    return _split_outside_quotes(value, ",")


def _split_params(member: str) -> list[str]:
    return _split_outside_quotes(member, ";")


def _split_outside_quotes(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == separator and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _param(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.strip().lower(), value.strip().strip('"')


def via_nearest(case: Case) -> str | None:
    """The Via entry nearest bulkhead (the last one): "vm (squid/5.7)"."""
    value = case.header("via")
    if not value:
        return None
    entries = [entry for entry in value.split(",") if entry.strip()]
    found = _VIA_ENTRY.match(entries[-1]) if entries else None
    if not found:
        return None
    return found.group(1) + (f" ({found.group(2)})" if found.group(2) else "")


def _endpoint(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return f"{parts.hostname}:{port}" if parts.hostname else None


def hop_of(case: Case) -> Hop | None:
    """The hop that answered this failure, when the answer (or the missing answer) says."""
    target = case.target
    proxy = target.proxy if target else None
    code = squid_error(case)
    status = proxy_status(case)
    via = via_nearest(case)
    evidence: list[str] = []
    if code:
        evidence.append(f"header X-Squid-Error: {clip(case.header('x-squid-error') or '', 40)}")
    if status:
        evidence.append(f"header Proxy-Status: {clip(case.header('proxy-status') or '', 80)}")
    if via:
        evidence.append(f"header Via: {clip(case.header('via') or '', 60)}")
    if code or (via and "squid" in via.lower()):
        return _proxy_hop("squid", "Squid", proxy, code, evidence)
    if status:
        intermediary, error, _details = status
        if proxy is not None:
            return _proxy_hop(None, intermediary, proxy, error, evidence)
        return Hop(HopKind.GATEWAY, None, intermediary, None, None, error, tuple(evidence))
    if case.status is None:
        return _unanswered_hop(case, proxy)
    if case.status == 407 and proxy is not None:  # only a forward proxy asks for proxy credentials
        return _unanswered_hop(case, proxy)
    if case.json_envelope:
        return None  # the provider's own JSON error: no hop between is to blame
    from app.engine.failure_vendors import Role, find_vendor

    mark = find_vendor(case)
    if mark is not None:
        vendor = mark.vendor
        evidence.append(mark.line)
        if vendor.role is Role.PROXY and proxy is not None:
            return _proxy_hop(vendor.name, vendor.display, proxy, None, evidence)
        return Hop(HopKind.GATEWAY, vendor.name, vendor.display, None, None, None, tuple(evidence))
    if via:
        return Hop(HopKind.GATEWAY, None, via, None, None, None, tuple(evidence))
    return None


def _proxy_hop(vendor: str | None, display: str, proxy: Any, error: str | None, evidence: list[str]) -> Hop:
    if proxy is not None:
        name = f"{display} (the proxy at {proxy.address}, from {proxy.variable})"
        return Hop(HopKind.FORWARD_PROXY, vendor, name, proxy.address, proxy.variable, error, tuple(evidence))
    return Hop(HopKind.GATEWAY, vendor, display, None, None, error, tuple(evidence))


def _unanswered_hop(case: Case, proxy: Any) -> Hop | None:
    target = case.target
    if proxy is not None:
        return Hop(
            HopKind.FORWARD_PROXY,
            None,
            f"the proxy at {proxy.address} (from {proxy.variable})",
            proxy.address,
            proxy.variable,
            None,
            (f"proxy in effect: {proxy.variable}={proxy.url}",),
        )
    if target is None or not target.url:
        return None
    address = _endpoint(target.url)
    return Hop(
        HopKind.ENDPOINT,
        None,
        address or target.url,
        address,
        target.setting or None,
        None,
        (f"no proxy in effect for {clip(target.url, 60)}",),
    )


# -- checks for the proxy rules ----------------------------------------------------------------------------
def _policy_refusal(case: Case) -> Hit | None:
    code = squid_error(case)
    if code in SQUID_POLICY:
        return make_hit(f"header X-Squid-Error: {code} (Squid's access rules refused it)", f"Squid {code}")
    status = proxy_status(case)
    if status and status[1] in PROXY_STATUS_POLICY:
        return make_hit(f"Proxy-Status: {status[0]} error={status[1]}", f"{status[0]} {status[1]}")
    if not code and _SQUID_POLICY_TEXT.search(case.text) and case.html:
        return make_hit(
            'page "Access control configuration prevents your request" (Squid)', "Squid's access rules"
        )
    return None


def _unreachable(case: Case) -> Hit | None:
    code = squid_error(case)
    if code in SQUID_UNREACHABLE:
        return make_hit(
            f"header X-Squid-Error: {case.header('x-squid-error')} (Squid could not reach it)", code
        )
    status = proxy_status(case)
    if status and status[1] in PROXY_STATUS_UNREACHABLE:
        details = f' ("{clip(status[2], 60)}")' if status[2] else ""
        return make_hit(f"Proxy-Status: {status[0]} error={status[1]}{details}", status[1])
    return None


def _hop_timeout(case: Case) -> Hit | None:
    code = squid_error(case)
    if code in SQUID_TIMEOUT:
        return make_hit(f"header X-Squid-Error: {code}", code)
    status = proxy_status(case)
    if status and status[1] in PROXY_STATUS_TIMEOUT:
        return make_hit(f"Proxy-Status: {status[0]} error={status[1]}", status[1])
    return None


_TUNNEL = re.compile(
    r"tunnel connection failed:? (\d{3})|\b(403|502|503|504) (?:forbidden|bad gateway|service unavailable|gateway time-?out)\b"
)


def _tunnel_refused(case: Case) -> Hit | None:
    """The proxy answered the CONNECT with an error (httpx ProxyError "503 Service Unavailable", urllib3's
    "Tunnel connection failed: 403 Forbidden"): the request never reached the provider."""
    target = case.target
    if case.status is not None or target is None or target.proxy is None:
        return None
    found = _TUNNEL.search(case.cause_text) or _TUNNEL.search(case.text)
    if not found:
        return None
    code = found.group(1) or found.group(2)
    return make_hit(
        f"the proxy answered the tunnel (CONNECT) with {code}: {clip(found.group(0), 50)}",
        code,
        value=int(code),
    )


_REFUSED = re.compile(r"connection refused|errno 111\b|econnrefused|actively refused")


def _refused(case: Case) -> Hit | None:
    """Nothing listens at the address: the TCP connection was refused (no HTTP answer, no tunnel status)."""
    if case.status is not None:
        return None
    names = {name.lower() for name in case.class_names + case.cause_names}
    found = _REFUSED.search(case.text) or _REFUSED.search(case.cause_text)
    if not found and "connectionrefusederror" not in names:
        return None
    said = found.group(0) if found else "ConnectionRefusedError"
    return make_hit(f'connection refused ("{said}")', said)


def _size_says_so(case: Case) -> Hit | None:
    """The endpoint took smaller bodies and refused this size before: a refusal by size after all."""
    evidence = case.size_evidence
    size = case.request_bytes
    if evidence is None or size is None or evidence.accepted_max is None or evidence.refused_min is None:
        return None
    if evidence.accepted_max < size and size >= evidence.refused_min:
        return make_hit(
            f"this endpoint accepted {evidence.accepted_max:,} bytes and refused {evidence.refused_min:,} "
            f"before; this body is {size:,}"
        )
    return None


def _squid_header(case: Case) -> Hit | None:
    return make_hit() if header_matches(case.headers, "x-squid-error", "") else None


PROXY_POLICY_REFUSAL = Check("a proxy's policy refusal (X-Squid-Error, Proxy-Status)", _policy_refusal)
PROXY_UNREACHABLE = Check("the proxy could not reach the provider", _unreachable)
PROXY_TIMEOUT = Check("the proxy timed out reaching the provider", _hop_timeout)
TUNNEL_REFUSED = Check("the proxy refused the tunnel", _tunnel_refused)
CONNECTION_REFUSED = Check("connection refused", _refused)
SIZE_EVIDENCE_SAYS_SIZE = Check("size evidence: only larger bodies are refused", _size_says_so)
SQUID_ANSWERED = Check("Squid answered", _squid_header)
