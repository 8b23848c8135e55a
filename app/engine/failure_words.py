"""What bulkhead does about a classified failure, in words: the action, the advice when retries run
out, and one copyable sentence. Policy numbers come from `app/engine/caps.py` and the settings;
the classifier (`failures.py`) only says what happened."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from app.engine.caps import DEFAULT_FALLBACK_CAP, learned_cap_for
from app.engine.failure_record import HEADLINES
from app.engine.failure_rules import (
    AUTH,
    CONTEXT_OVERFLOW,
    HEADERS_TOO_LARGE,
    OVERLOADED,
    PAYLOAD_KINDS,
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
)
from app.engine.failure_signals import format_seconds
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.failure_record import Failure


def describe_action(failure: Failure, *, fallback_cap: int = DEFAULT_FALLBACK_CAP) -> str:
    """What bulkhead does about `failure`, in words (for the inspector and `bulkhead classify`)."""
    if failure.cause == "content":  # judged by app.engine.block_cause: no cap, no ladder
        from app.engine.content_words import content_action

        return content_action(failure)
    kind = failure.kind
    if kind in PAYLOAD_KINDS:
        if failure.rejected_bytes:
            cap = learned_cap_for(failure.rejected_bytes)
            return (
                f"learn a cap of ¾ × {format_size(failure.rejected_bytes)} = {format_size(cap)} "
                f"and walk the recovery ladder"
            )
        return (
            f"assume a {format_size(fallback_cap)} cap (rejected size unknown; fallback_cap) "
            f"and walk the recovery ladder"
        )
    if kind == CONTEXT_OVERFLOW:
        limit = (
            f"; requests stay under the {failure.stated_window_tokens:,} tokens the error states"
            if failure.stated_window_tokens
            else ""
        )
        return f"compact the conversation and walk the recovery ladder (L1 → L3); no cap is learned{limit}"
    if kind == HEADERS_TOO_LARGE:
        return (
            "fail: no cap is learned and compacting cannot help — shorten what the headers carry (the key in "
            "api_key_env, a proxy's cookies) or ask for the gateway's header limit to be raised"
        )
    if failure.recoverable and failure.ladder_limit == 1:
        return (
            f"try once with fewer messages (recovery level L{failure.ladder_start}); no cap is learned — "
            "if that is refused too, the error stands"
        )
    special = RULE_ACTIONS.get(failure.rule_id)
    if special is not None:
        return special(failure)
    if kind == AUTH:
        if failure.status == 407 or failure.rule_id == "auth.proxy-407-in-chain":
            return f"fail: the proxy wants credentials (put them in {proxy_variable(failure)} as user:password@host)"
        return (
            "fail: check your API key (`bulkhead auth set anthropic|openai`, or the AWS credential "
            "chain) and that it may use this model"
        )
    if failure.transient:
        if failure.retry_after is not None:
            return (
                f"retry with backoff (honouring retry-after {format_seconds(failure.retry_after)}), "
                f"a bounded number of times; never compact"
            )
        return "retry with backoff and jitter, a bounded number of times; never compact"
    if failure.rule_id == "quota.exhausted":
        return "fail: the account's quota or credit is used up — check billing for this key, or switch route"
    return "fail: retrying or compacting would not help"


def decision_of(failure: Failure, *, fallback_cap: int = DEFAULT_FALLBACK_CAP) -> dict[str, object]:
    """What the engine decided about a refused request, kept beside its record (the store's `decision`):
    the rule's own action, the judged cause, the incident ID and the hop — so the Requests panel says
    what was decided then instead of rebuilding advice from the kind."""
    hop = failure.hop
    return {
        "action": describe_action(failure, fallback_cap=fallback_cap),
        "rule_id": failure.rule_id,
        "decided_by": failure.decided_by,
        "cause": failure.cause,
        "incident_id": failure.incident_id or "",
        "hop": {"kind": hop.kind.value, "name": hop.name} if hop is not None and hop.name else {},
    }


def proxy_variable(failure: Failure) -> str:
    """The variable that set the proxy in effect (the hop knows it), else which one would."""
    hop = failure.hop
    if hop is not None and hop.kind.value == "forward-proxy" and hop.setting:
        return hop.setting
    return "HTTPS_PROXY (HTTP_PROXY for an http:// base_url, or ALL_PROXY)"


def _refused_action(failure: Failure) -> str:
    hop = failure.hop
    if hop is not None and hop.kind.value == "forward-proxy":
        return (
            f"fail: start the proxy, or correct or unset {hop.setting} (not retried: waiting will not help)"
        )
    setting = hop.setting if hop is not None and hop.setting else "base_url"
    return (
        f"fail: start the server there, or correct {setting.split(' of ')[0]} (not retried: a refused connection "
        "does not start listening by waiting)"
    )


RULE_ACTIONS: dict[str, Callable[[Failure], str]] = {
    "net.refused": _refused_action,
    "proxy.policy": lambda f: (
        "fail: ask the proxy's admins to allow the provider's host (or add the host to NO_PROXY if it may be "
        "reached directly); no cap is learned, nothing is retried"
    ),
    "proxy.unreachable": lambda f: (
        "fail: check the host in the route's base_url, or ask the proxy's admins about its connectivity; "
        "retrying here would not help"
    ),
    "proxy.tunnel-refused": lambda f: (
        f"fail: check the host in the route's base_url, ask the proxy's admins, or correct {proxy_variable(f)}"
    ),
    "auth.network-policy": lambda f: (
        "fail: the provider's resource refuses this network — allow your address in its networking "
        "(firewall / virtual network) settings, or use its private endpoint"
    ),
    "meaning.output-limit": lambda f: "fail: the conversation is fine, so nothing is compacted or retried",
    "meaning.not-the-request": lambda f: (
        "fail: change what the error names (an image, the tool list, a field) — compacting or a smaller body "
        "would not help"
    ),
}


def give_up_advice(failure: Failure, url: str | None = None) -> str:
    """What the user can do once bulkhead's own retries of a transient failure have run out."""
    kind = failure.kind
    if kind == RATE_LIMIT:
        return "the provider is limiting requests: wait a minute, then /retry (or switch route with /model)"
    if kind == OVERLOADED:
        return "the provider is overloaded: /retry in a few minutes, or switch route with /model"
    if kind == SERVER_ERROR:
        return "the provider or gateway keeps failing: /retry later; if it persists, check its status page"
    if kind == TIMEOUT:
        return "no answer in time: /retry; for long answers raise request_timeout in config.toml"
    where = url or "the route's base_url"
    hop = failure.hop
    via = (
        f"the proxy at {hop.address} from {hop.setting}"
        if hop is not None and hop.kind.value == "forward-proxy" and hop.setting
        else "HTTPS_PROXY"
    )
    if failure.rule_id == "net.reset-unproven" and failure.rejected_bytes:
        return (
            f"check that {where} is reachable (network, VPN, {via}), then /retry; if only large "
            "requests are reset, `bulkhead probe` finds the gateway's cap (or lower drop_payload_min_bytes)"
        )
    return f"check that {where} is reachable (network, VPN, {via}), then /retry"


def explain(
    failure: Failure,
    *,
    learned_cap: int | None = None,
    level: int | None = None,
    action: str | None = None,
) -> str:
    """One copyable plain-text sentence: what rejected the request, the signals, and the outcome
    (`action`: what was decided when it happened, else what would be decided now)."""
    sentence = failure.reason or HEADLINES.get(failure.kind, failure.kind)
    if failure.rejected_bytes is not None and format_size(failure.rejected_bytes) not in sentence:
        sentence += f", request {format_size(failure.rejected_bytes)}"
    if learned_cap is not None and level is not None:
        sentence += (
            f"; bulkhead learned a {format_size(learned_cap)} cap and recovered at ladder level {level}"
        )
    elif learned_cap is not None:
        sentence += f"; bulkhead learned a {format_size(learned_cap)} cap"
    elif level is not None:
        sentence += f"; bulkhead recovered at ladder level {level}"
    else:
        action = action or describe_action(failure)
        sentence += (
            f"; bulkhead stops here: {action.removeprefix('fail: ')}"
            if action.startswith("fail: ")
            else f"; bulkhead will {action}"
        )
    return sentence
