"""A classified failure as a record (`Failure`), the headline of each kind, and the id of the fallback
rule. A leaf of the classifier: `failures.py` makes a Failure, `failure_words.py` puts it in words, and
the rest of the engine passes it around (`from app.engine.failures import Failure` re-exports it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from app.engine.failure_hops import Hop
from app.model.failure_kinds import (
    AUTH,
    CONNECTION_DROP,
    CONTEXT_OVERFLOW,
    HEADERS_TOO_LARGE,
    OTHER,
    OVERLOADED,
    PAYLOAD_TOO_LARGE,
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
    WAF_BLOCK,
)

FALLBACK_RULE_ID = "fallback"

HEADLINES: dict[str, str] = {  # by failure kind
    CONTEXT_OVERFLOW: "Context window exceeded",
    PAYLOAD_TOO_LARGE: "Request body too large",
    WAF_BLOCK: "Rejected by a WAF",
    CONNECTION_DROP: "Connection dropped during a large request",
    HEADERS_TOO_LARGE: "Request headers too large",
    AUTH: "Authentication or permission refused",
    RATE_LIMIT: "Rate limited",
    OVERLOADED: "Provider overloaded",
    SERVER_ERROR: "Server error",
    TIMEOUT: "Timed out",
    OTHER: "Not a recoverable rejection",
}


@dataclass(frozen=True)
class Failure:
    """A classified provider failure: what kind, may the recovery ladder act, and why we think so."""

    kind: str
    payload_related: bool = False
    recoverable: bool = False  # the recovery ladder may act (payload-related or context overflow)
    transient: bool = False  # retry with backoff, never compact
    rejected_bytes: int | None = None
    reason: str = ""
    evidence: tuple[str, ...] = ()
    status: int | None = None
    gateway: str | None = None
    retry_after: float | None = None
    rule_id: str = FALLBACK_RULE_ID  # the rule that decided ("waf.403", "config:corp-block", …)
    rule_origin: str = "built-in"  # or where a user rule is written ("config.toml:12")
    stated_window_tokens: int | None = None  # the largest request (tokens) the error says the provider takes
    request_header_bytes: int | None = None  # how big the request's headers were (for headers_too_large)
    cause: str = ""  # a gateway refusal's judged cause: size | content | unknown (app.engine.block_cause)
    incident_id: str | None = None  # the block page's reference for the network team (app.engine.block_cause)
    hop: Hop | None = None  # which hop answered (a forward proxy, a gateway, the endpoint itself), when known
    decided_by: str = ""  # the generalising signal behind the winning rule ("size noun × limit", …)
    ladder_limit: int | None = None  # at most this many recovery attempts (None: max_recovery_attempts)
    ladder_start: int = 1  # the recovery ladder's first level for this failure

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (evidence as a list, the hop as an object)."""
        data = asdict(self)
        data["evidence"] = list(self.evidence)
        data["hop"] = self.hop.to_dict() if self.hop is not None else None
        return data

    @property
    def user_rule(self) -> bool:
        return self.rule_origin != "built-in"
