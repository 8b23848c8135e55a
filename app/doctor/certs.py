"""A server certificate read without any library: who issued it, for whom, until when — and whether the
issuer is a TLS-inspecting proxy (a corporate gateway re-signing every site with its own root).

Python's `ssl` gives a certificate's fields only after verifying it; when verification fails — the case a
doctor must explain — only the DER bytes are left. This reads the few fields it needs from them: the
issuer's and subject's names (CN, O, OU) and the validity.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

# Issuer names that mean "a proxy on the way re-signs TLS" (lower case, matched as substrings).
INSPECTING_ISSUERS = (
    ("zscaler", "Zscaler"),
    ("netskope", "Netskope"),
    ("mitmproxy", "mitmproxy"),
    ("palo alto", "Palo Alto Networks"),
    ("paloalto", "Palo Alto Networks"),
    ("fortinet", "Fortinet FortiGate"),
    ("fortigate", "Fortinet FortiGate"),
    ("blue coat", "Blue Coat / Symantec ProxySG"),
    ("bluecoat", "Blue Coat / Symantec ProxySG"),
    ("proxysg", "Symantec ProxySG"),
    ("cisco umbrella", "Cisco Umbrella"),
    ("opendns", "Cisco Umbrella"),
    ("forcepoint", "Forcepoint"),
    ("websense", "Forcepoint (Websense)"),
    ("mcafee web gateway", "McAfee / Skyhigh Web Gateway"),
    ("skyhigh", "Skyhigh Security"),
    ("sophos", "Sophos"),
    ("check point", "Check Point"),
    ("checkpoint", "Check Point"),
    ("kaspersky", "Kaspersky (local TLS scanning)"),
    ("avast", "Avast (local TLS scanning)"),
    ("avg ", "AVG (local TLS scanning)"),
    ("eset", "ESET (local TLS scanning)"),
    ("bitdefender", "Bitdefender (local TLS scanning)"),
    ("charles proxy", "Charles Proxy"),
    ("fiddler", "Fiddler"),
    ("do_not_trust", "Fiddler"),
    ("portswigger", "Burp Suite"),
    ("barracuda", "Barracuda"),
    ("trend micro", "Trend Micro"),
    ("iboss", "iboss"),
    ("lightspeed", "Lightspeed Systems"),
    ("securly", "Securly"),
    ("cato networks", "Cato Networks"),
    ("menlo security", "Menlo Security"),
    ("cloudflare for teams", "Cloudflare Zero Trust Gateway"),
    ("gateway ca - cloudflare", "Cloudflare Zero Trust Gateway"),
)

_NAME_OIDS = {"2.5.4.3": "CN", "2.5.4.10": "O", "2.5.4.11": "OU"}


class CertError(ValueError):
    pass


def _read(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `at`."""
    if at + 2 > len(data):
        raise CertError("truncated certificate")
    tag = data[at]
    length = data[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or at + count > len(data):
            raise CertError("bad length")
        length = int.from_bytes(data[at : at + count], "big")
        at += count
    if at + length > len(data):
        raise CertError("truncated certificate")
    return tag, at, at + length


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    out = []
    while start < end:
        tag, content, stop = _read(data, start)
        out.append((tag, content, stop))
        start = stop
    return out


def _oid(raw: bytes) -> str:
    if not raw:
        return ""
    parts = [raw[0] // 40, raw[0] % 40]
    value = 0
    for byte in raw[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(str(p) for p in parts)


def _name(data: bytes, start: int, end: int) -> dict[str, str]:
    found: dict[str, str] = {}
    for _tag, set_start, set_end in _children(data, start, end):
        for _t, seq_start, seq_end in _children(data, set_start, set_end):
            items = _children(data, seq_start, seq_end)
            if len(items) < 2:
                continue
            key = _NAME_OIDS.get(_oid(data[items[0][1] : items[0][2]]))
            if key and key not in found:
                raw = data[items[1][1] : items[1][2]]
                found[key] = (
                    raw.decode("utf-8", errors="replace")
                    if items[1][0] != 0x1E
                    else raw.decode("utf-16-be", errors="replace")
                )
    return found


def _time(data: bytes, tag: int, start: int, end: int) -> datetime | None:
    text = data[start:end].decode("ascii", errors="replace").rstrip("Z")
    try:
        if tag == 0x17:  # UTCTime YYMMDDHHMMSS
            year = int(text[:2])
            return datetime.strptime(("19" if year >= 50 else "20") + text[:12], "%Y%m%d%H%M%S").replace(
                tzinfo=UTC
            )
        return datetime.strptime(text[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)  # GeneralizedTime
    except ValueError:
        return None


@dataclass(frozen=True)
class CertInfo:
    issuer: dict[str, str]
    subject: dict[str, str]
    not_after: datetime | None

    @property
    def issuer_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.issuer.items()) or "unknown issuer"

    @property
    def self_signed(self) -> bool:
        return bool(self.issuer) and self.issuer == self.subject

    def expired(self, now: datetime | None = None) -> bool:
        return self.not_after is not None and self.not_after < (now or datetime.now(UTC))


def parse_certificate(der: bytes) -> CertInfo:
    """Issuer, subject and notAfter of a DER certificate (CertError when it is not one)."""
    _tag, cert_start, cert_end = _read(der, 0)
    parts = _children(der, cert_start, cert_end)
    if not parts:
        raise CertError("empty certificate")
    tbs = _children(der, parts[0][1], parts[0][2])
    if tbs and tbs[0][0] == 0xA0:  # [0] version
        tbs = tbs[1:]
    if len(tbs) < 5:
        raise CertError("not a certificate")
    _serial, _algorithm, issuer, validity, subject = tbs[:5]
    times = _children(der, validity[1], validity[2])
    not_after = _time(der, times[1][0], times[1][1], times[1][2]) if len(times) > 1 else None
    return CertInfo(_name(der, issuer[1], issuer[2]), _name(der, subject[1], subject[2]), not_after)


def inspecting_proxy(cert: CertInfo) -> str | None:
    """The name of the TLS-inspecting product whose root issued `cert`, or None."""
    text = " ".join(cert.issuer.values()).lower() + " "
    for needle, name in INSPECTING_ISSUERS:
        if needle in text:
            return name
    return None
