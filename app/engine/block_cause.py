"""Size or content? A gateway's refusal judged from what the endpoint has shown, not from its status alone.

    failure = judge(failure, request_bytes=N, accepted_max=A, floor_bytes=F)
    failure.cause          # "size" | "content" | "unknown" ("" for failures that are no gateway refusal)
    failure.incident_id    # the block page's reference, for the network team (or None)
    hop_label(failure, headers, body, where="gw:443")   # who refused, in words (every message says it so)

The classifier (app/engine/failures.py) decides the *kind* — `waf_block` stays `waf_block`. This module
decides the *cause* of a `waf_block`, and so whether the recovery ladder and a learned cap make sense:

- size: the gateway said so (413, 431, a size rule on its page, a reset judged by size);
- content: the endpoint accepted a body at least this large since this route started (so a cap of ¾ × N
  would be wrong), or ¾ × N is at or below the request floor (system prompt + tools: no request could pass
  such a cap, so no size limit explains the refusal);
- unknown: nothing tells — treated as before (a cap is learned and the ladder runs), since the cases a
  ladder cures are size caps.

A content block is not payload-related and not recoverable: nothing is learned and nothing is cut; the
message says the gateway refused the content (app.engine.content_words) and `/blocked` finds the part.
`bulkhead proxy` judges its upstream's refusals here too: a size cause is translated into the client's
overflow error, a content block never is.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from app.engine.caps import learned_cap_for
from app.engine.failure_hops import HopKind
from app.engine.failures import (
    CONNECTION_DROP,
    GATEWAY_NAMES,
    HEADERS_TOO_LARGE,
    PAYLOAD_TOO_LARGE,
    WAF_BLOCK,
    Failure,
)
from app.sizes import format_size

_GATEWAY_LINE = "refused by "


class BlockCause(StrEnum):
    SIZE = "size"
    CONTENT = "content"
    UNKNOWN = "unknown"


_SIZE_WORDS = re.compile(
    r"(?i)size ?restriction|too large|too long|body (?:size|limit)|size limit|content-length|request entity"
)
# References a block page gives for the network team: (pattern over the page text, label).
_PAGE_IDS = (
    (re.compile(r"Reference\s*#\s*([0-9a-f][0-9a-f.]{6,60})", re.I), "reference"),  # Akamai
    (re.compile(r"Ray ID:?\s*(?:<[^>]*>\s*)*([0-9a-f]{16})", re.I), "Cloudflare Ray ID"),
    (re.compile(r"support ID is:?\s*(?:<[^>]*>\s*)*([0-9]{6,30})", re.I), "support ID"),  # F5 ASM
    (re.compile(r"incident ID:?\s*(?:<[^>]*>\s*)*([\w-]{6,60})", re.I), "incident ID"),  # Imperva, others
    (re.compile(r"(?:event|transaction|request) ID:?\s*(?:<[^>]*>\s*)*([\w-]{8,60})", re.I), "request ID"),
)
_HEADER_IDS = (
    ("cf-ray", "Cloudflare Ray ID"),
    ("x-amzn-requestid", "AWS request ID"),
    ("x-amz-cf-id", "CloudFront ID"),
    ("x-azure-ref", "Azure Front Door reference"),
    ("x-iinfo", "Imperva incident"),
    ("x-request-id", "request ID"),
    ("x-unique-id", "request ID"),
)
PAGE_SCAN_CHARS = 200_000  # a block page is a few KB; a huge error body is read no further for its ID


def incident_id(body: str | None, headers: Mapping[str, Any] | None) -> str | None:
    """The block page's incident/reference ID as `label VALUE` ("Cloudflare Ray ID 8f3a…"), else a
    gateway's request-id header; None when the answer gives none. The one extractor: the engine's
    failures and `bulkhead proxy` both use it."""
    text = html.unescape((body or "")[:PAGE_SCAN_CHARS])
    for pattern, label in _PAGE_IDS:
        found = pattern.search(text)
        if found:
            return f"{label} {found.group(1)}"
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    for name, label in _HEADER_IDS:
        if lowered.get(name):
            return f"{label} {lowered[name][:80]}"
    return None


APACHE_FILTER = "Apache (ModSecurity or a similar filter)"


def hop_label(
    failure: Failure,
    headers: Mapping[str, Any] | None = None,
    body: str | None = None,
    *,
    where: str | None = None,
) -> str:
    """Who refused, in words — the one way messages name the refusing hop (the turn's error, the proxy's
    translated errors, the Requests panel). The classifier's hop (`Failure.hop`) first, then its gateway;
    Apache's stock page (what ModSecurity sends by default) as Apache with its filter; else the Server
    header; else "a gateway". `where` (host:port) is added when the hop's name does not carry an address."""
    hop = failure.hop
    vendor = hop.vendor if hop is not None else failure.gateway
    server = next((str(v) for k, v in (headers or {}).items() if str(k).lower() == "server"), "")
    if vendor == "apache" or (
        not vendor and (server.lower().startswith("apache") or "<address>Apache" in (body or ""))
    ):
        name = APACHE_FILTER
    elif hop is not None and hop.kind is HopKind.ENDPOINT:  # no answer but a reset: what sits at the URL
        name = f"the gateway at {hop.address or hop.name}"
    elif hop is not None and hop.name:
        name = hop.name
    elif failure.gateway:
        name = GATEWAY_NAMES.get(failure.gateway, failure.gateway)
    elif server:
        name = server.split("/")[0][:40]
    else:
        name = "a gateway"
    if where and not (hop is not None and hop.address):
        name += f" at {where}"
    return name


def judge_cause(
    failure: Failure,
    *,
    request_bytes: int | None,
    accepted_max: int | None,
    floor_bytes: int | None,
) -> tuple[BlockCause | None, str]:
    """(cause, why) for a gateway refusal; (None, "") for a failure that is not one."""
    if failure.kind in (PAYLOAD_TOO_LARGE, HEADERS_TOO_LARGE) or (
        failure.kind == CONNECTION_DROP and failure.payload_related
    ):
        return BlockCause.SIZE, f"a {failure.kind.replace('_', ' ')} answer is about size"
    if failure.kind != WAF_BLOCK:
        return None, ""
    said = " ".join((failure.reason, *failure.evidence))
    if _SIZE_WORDS.search(said):
        return BlockCause.SIZE, "the gateway's answer names a size limit"
    if request_bytes and accepted_max and request_bytes <= accepted_max:
        return BlockCause.CONTENT, (
            f"this endpoint accepted {format_size(accepted_max)} before and refused "
            f"{format_size(request_bytes)} now, so the refusal is not about size"
        )
    if request_bytes and floor_bytes and learned_cap_for(request_bytes) <= floor_bytes:
        return BlockCause.CONTENT, (
            f"the size limit bulkhead would learn from this refusal (3/4 of {format_size(request_bytes)}) is "
            f"no larger than the smallest request it can send ({format_size(floor_bytes)}: system prompt and tools), "
            "so no request could pass it: the refusal is taken as about content"
        )
    return BlockCause.UNKNOWN, "no evidence tells size from content (bulkhead treats it as size)"


def judge(
    failure: Failure,
    *,
    request_bytes: int | None,
    accepted_max: int | None,
    floor_bytes: int | None,
    body: str | None = None,
    headers: Mapping[str, Any] | None = None,
) -> Failure:
    """`failure` with its judged cause, the evidence for it and the page's incident ID. A content block
    is neither payload-related nor recoverable: no cap is learned from it and the ladder does not run."""
    cause, why = judge_cause(
        failure, request_bytes=request_bytes, accepted_max=accepted_max, floor_bytes=floor_bytes
    )
    if cause is None:
        return failure
    incident = incident_id(body, headers)
    label = hop_label(failure, headers, body)
    evidence = (*failure.evidence, f"cause {cause}: {why}")
    if not failure.gateway and label != "a gateway":
        evidence += (f"{_GATEWAY_LINE}{label}",)
    if incident:
        evidence += (incident,)
    changes: dict[str, Any] = {"cause": str(cause), "incident_id": incident, "evidence": evidence}
    if cause is BlockCause.CONTENT:
        changes.update(_content_changes(label))
    return dataclasses.replace(failure, **changes)


def _content_changes(gateway: str) -> dict[str, Any]:
    return {
        "cause": str(BlockCause.CONTENT),
        "payload_related": False,
        "recoverable": False,
        "transient": False,
        "reason": f"Content blocked by {gateway}: it refused what the request contains, not its size",
    }


def judged_content(failure: Failure, why: str) -> Failure:
    """An undecided block judged content after the fact (the recovery's smaller resends were refused too)."""
    gateway = refused_by(failure)
    changes = _content_changes(gateway)
    changes["evidence"] = (
        *(e for e in failure.evidence if not e.startswith("cause ")),
        f"cause content: {why}",
    )
    return dataclasses.replace(failure, **changes)


def refused_by(failure: Failure) -> str:
    """Who refused a judged failure, as its judgement named it ("refused by …"), else from its hop."""
    said = next((e for e in failure.evidence if e.startswith(_GATEWAY_LINE)), "")
    return said.removeprefix(_GATEWAY_LINE) or hop_label(failure)
