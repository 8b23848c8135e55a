"""A gateway that refuses Anthropic's beta headers, or strips them: drop that beta, retry once, remember.

Two ways it shows (Claude Code met both behind LiteLLM, Bedrock/Vertex proxies and corporate gateways):

- **refused**: a 400 that names the header — `Unexpected value(s) `context-management-2025-06-27` for the
  `anthropic-beta` header` — from the gateway or from a backend that does not know the beta;
- **stripped**: the header never arrives, so the API refuses the body field that only the beta allows —
  `context_management: Extra inputs are not permitted` (or `compaction: …`).

Either way the beta is recorded in the endpoint's profile (`app.gateway_profile`), the route's provider stops
sending it (`Provider.refused_betas`: context management off, the on-demand compaction left to the local
pipeline), and the same request is rebuilt without it and sent once more.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.engine.notice_words import notice
from app.gateway_profile import BetaRefusal, record_refused_beta
from app.model.notice_facts.gateways import BetaRefusedByEndpoint, BetaResent
from app.providers.anthropic import COMPACT_ON_DEMAND_BETA, COMPACT_THRESHOLD_BETA, CONTEXT_MANAGEMENT_BETA
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.host import NativeHost, RequestHost
    from app.engine.sender import RequestFailed, StreamResult
    from app.providers.base import Provider, ProviderError, Request

BETA_HEADER = "anthropic-beta"
# The body fields only a beta allows: a gateway that strips the header gets them refused by the API.
BETA_FIELDS = {
    "context_management": (CONTEXT_MANAGEMENT_BETA, COMPACT_THRESHOLD_BETA),
    "compaction": (COMPACT_ON_DEMAND_BETA,),
}
_REFUSAL_WORDS = ("unexpected value", "invalid", "not supported", "unsupported", "unknown", "not allowed")
_STRIPPED_WORDS = ("extra inputs are not permitted", "unexpected", "unknown", "not permitted", "unrecognized")


@dataclass(frozen=True)
class BetaRefused:
    betas: tuple[str, ...]
    how: BetaRefusal
    evidence: str


def sent_betas(request: Request, provider: Provider) -> tuple[str, ...]:
    """The betas the request carried: from the headers that went out, else what the adapter adds."""
    headers = {k.lower(): v for k, v in request.request_headers.items()}
    value = headers.get(BETA_HEADER)
    if value is None:
        value = provider.chat_headers().get(BETA_HEADER, "")
        if request.purpose == "compact" and request.provider == "anthropic":
            value = COMPACT_ON_DEMAND_BETA
    return tuple(b.strip() for b in value.split(",") if b.strip())


def _api_message(error: ProviderError) -> str:
    """The API's own message from a JSON error body (`{"error": {"message": …}}`), else the body or message."""
    try:
        data = json.loads(error.body or "")
        message = data.get("error", {}).get("message") if isinstance(data, dict) else None
        if isinstance(message, str) and message:
            return message
    except (ValueError, AttributeError):
        pass
    return error.body or error.message or ""


def beta_refusal(error: ProviderError, sent: Sequence[str]) -> BetaRefused | None:
    """The betas a 400 says were refused or stripped, or None when it is about something else."""
    if error.status != 400:
        return None
    text = f"{error.body or ''} {error.message or ''}"
    lower = text.lower()
    evidence = f"{error.status}: " + display_line(" ".join(_api_message(error).split()))[:200]
    if sent and BETA_HEADER in lower and any(word in lower for word in _REFUSAL_WORDS):
        named = tuple(b for b in sent if b.lower() in lower) or tuple(sent)
        return BetaRefused(named, "refused", evidence)
    for name, betas in BETA_FIELDS.items():
        if name in lower and any(word in lower for word in _STRIPPED_WORDS):
            named = tuple(b for b in betas if b in sent) or (
                () if sent else betas[:1]  # the header was meant to carry it: it never arrived
            )
            if named:
                return BetaRefused(named, "stripped", evidence)
    return None


def remember_refusal(engine: NativeHost, provider: Provider, refused: BetaRefused) -> None:
    """Record it for the endpoint, stop sending it, and say so."""
    endpoint = provider.route.endpoint_id
    for beta in refused.betas:
        record_refused_beta(engine.state, endpoint, beta, how=refused.how, evidence=refused.evidence)
    provider.refused_betas = provider.refused_betas | frozenset(refused.betas)
    engine.emit(
        notice(
            BetaRefusedByEndpoint(
                endpoint=endpoint,
                header=BETA_HEADER,
                betas=refused.betas,
                stripped=refused.how != "refused",
                evidence=refused.evidence,
            )
        )
    )


async def retry_without_betas(
    engine: RequestHost, failed: RequestFailed, request: Request, max_tokens: int
) -> tuple[Request, StreamResult] | None:
    """The chat request again, once, without the betas the endpoint refused; None when the failure was
    not a beta refusal (or nothing changed to send differently)."""
    provider = engine.provider
    if provider.kind != "anthropic" or failed.partial_text:
        return None
    refused = beta_refusal(failed.error, sent_betas(failed.request, provider))
    if refused is None or set(refused.betas) <= provider.refused_betas:
        return None
    remember_refusal(engine, provider, refused)
    engine.native.prepare()
    again = provider.build(engine.session.view.messages, engine.system, engine.tools, max_tokens=max_tokens)
    engine.emit(notice(BetaResent(betas=refused.betas)))
    return again, await engine.sender.send(again)
