"""Is a refusal about the request's size or its content — and who refused it, with which incident ID.

`judge()` is the one place the proxy decides whether a classified failure may become the client's own
overflow error (SIZE), must become a non-retryable "the gateway refused the content" error (CONTENT), or
passes through as it came (OTHER). It reads today's classification (`app.engine.failures`); the
content-block judgement of the WAF work can replace its body without touching any caller.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from app.engine.failures import (
    CONNECTION_DROP,
    GATEWAY_NAMES,
    PAYLOAD_TOO_LARGE,
    WAF_BLOCK,
    Failure,
)


class Cause(StrEnum):
    SIZE = "size"  # the body was too large: translate, learn a cap
    CONTENT = "content"  # the gateway judged what the body says: never an overflow, never a cap
    OTHER = "other"  # anything else (auth, rate limit, the provider's own error): passed through


@dataclass(frozen=True)
class Judgement:
    cause: Cause
    why: str  # one line: what decided it


def judge(failure: Failure, *, request_bytes: int | None, largest_accepted: int | None) -> Judgement:
    """SIZE, CONTENT or OTHER for a classified failure of a request of `request_bytes`, at an endpoint
    that has accepted bodies up to `largest_accepted` bytes (None: none seen yet)."""
    if failure.kind == WAF_BLOCK:
        if largest_accepted and request_bytes and request_bytes <= largest_accepted:
            return Judgement(
                Cause.CONTENT,
                f"a WAF block of {request_bytes:,} bytes where {largest_accepted:,} bytes passed before",
            )
        return Judgement(Cause.SIZE, "a WAF block with nothing showing a smaller body would pass")
    if failure.kind in (PAYLOAD_TOO_LARGE, CONNECTION_DROP) and failure.payload_related:
        return Judgement(Cause.SIZE, f"classified {failure.kind}")
    return Judgement(Cause.OTHER, f"classified {failure.kind}")


_INCIDENT_PATTERNS = (
    re.compile(r"Ray ID:\s*(?:<[^>]+>\s*)*([0-9a-f]{12,20})", re.I),  # Cloudflare
    re.compile(r"Reference\s*#\s*([0-9a-z.]{6,64})", re.I),  # Akamai
    re.compile(r"support ID is:?\s*(?:<[^>]+>\s*)*([0-9a-z-]{6,64})", re.I),  # F5 ASM, Imperva
    re.compile(r"incident ID:?\s*(?:<[^>]+>\s*)*([0-9a-z-]{6,64})", re.I),  # Imperva, others
    re.compile(r"(?:request|transaction) ID:?\s*(?:<[^>]+>\s*)*([0-9a-z-]{8,64})", re.I),
)
_INCIDENT_HEADERS = ("cf-ray", "x-amzn-requestid", "x-amz-cf-id", "x-azure-ref", "x-iinfo", "x-request-id")


def incident_id(headers: Mapping[str, str], body: str) -> str | None:
    """The ID a network team asks for: the block page's own (Ray ID, Reference #, support ID), else a
    gateway's request-id header."""
    text = html.unescape(body or "")[:200_000]
    for pattern in _INCIDENT_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1)
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    for name in _INCIDENT_HEADERS:
        if lowered.get(name):
            return f"{lowered[name][:64]} ({name})"
    return None


def hop_name(failure: Failure, headers: Mapping[str, str], upstream_url: str) -> str:
    """Who refused: `nginx at 127.0.0.1:8080`, `Cloudflare in front of api.example.com`, or the
    `Server` header's product when the classifier named no gateway."""
    where = urlsplit(upstream_url).netloc or upstream_url
    if failure.gateway:
        return f"{GATEWAY_NAMES.get(failure.gateway, failure.gateway)} at {where}"
    server = next((str(v) for k, v in headers.items() if str(k).lower() == "server"), "")
    if server:
        return f"a gateway ({server[:40]}) at {where}"
    return f"a gateway at {where}"
