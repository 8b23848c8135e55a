"""Why did a provider call fail? `classify()` turns an error into a `Failure` with its evidence.

    failure = classify(provider_error)                 # a ProviderError (or a raw SDK exception)
    failure = classify_fields(status=413, body=html, request_bytes=844_000)
    failure.kind, failure.reason, failure.evidence     # "payload_too_large", one line, the signals
    failure.rule_id                                    # "payload.size": the rule that decided

Both entry points evaluate one rule table (`app/engine/failure_rules.py`: rules as data, every
rule evaluated, the highest priority wins), plus the user's `[[classifier.rules]]`. The rules
only read status, message, body, headers, request size, the transport's own flag and what
the endpoint showed about sizes; they never import httpx or the SDKs, and the classifier
never raises: anything it cannot read is kind `other` with the reason in its evidence.
What bulkhead then does about a failure, in words, is `app/engine/failure_words.py`.
DESIGN.md §5 is the specification.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.engine.failure_case import Case, Target
from app.engine.failure_hops import hop_of
from app.engine.failure_input import (
    api_message,
    clip,
    make_case,
    parts_from_exception,
    qualified_name,
    safe_str,
)
from app.engine.failure_phrases import DEFAULT_DROP_THRESHOLD
from app.engine.failure_record import FALLBACK_RULE_ID, HEADLINES, Failure
from app.engine.failure_rules import (  # the kinds are part of this module's API
    BUILT_IN_RULES,
    Rule,
    Verdict,
    evaluate,
    means_of,
)
from app.engine.failure_vendors import NAMES
from app.engine.failure_words import (  # noqa: F401 - wording and policy live there; re-exported for callers
    describe_action,
    explain,
    give_up_advice,
)
from app.engine.resets import SizeEvidence
from app.model.failure_kinds import (  # noqa: F401 - the kinds are part of this module's API
    AUTH,
    CONNECTION_DROP,
    CONTEXT_OVERFLOW,
    HEADERS_TOO_LARGE,
    KINDS,
    OTHER,
    OVERLOADED,
    PAYLOAD_KINDS,
    PAYLOAD_TOO_LARGE,
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
    TRANSIENT_KINDS,
    WAF_BLOCK,
)

GATEWAY_NAMES = NAMES  # vendor key → its name ("cloudflare" → "Cloudflare"), from failure_vendors.VENDORS
_GATEWAY_KINDS = (WAF_BLOCK, PAYLOAD_TOO_LARGE, HEADERS_TOO_LARGE, TIMEOUT, SERVER_ERROR, OVERLOADED, AUTH)


# -- public API -------------------------------------------------------------------------------------
def classify_fields(
    status: Any = None,
    message: Any = "",
    body: Any = None,
    headers: Any = None,
    request_bytes: Any = None,
    *,
    transport: Any = None,
    error_type: Any = None,
    drop_threshold: Any = DEFAULT_DROP_THRESHOLD,
    size_evidence: SizeEvidence | None = None,
    user_rules: Sequence[Rule] = (),
    request_header_bytes: Any = None,
    provider: Any = None,
    target: Target | None = None,
    request_values: Any = None,
) -> Failure:
    """Classify a failure from its raw parts (status, message, body text, headers, request size).

    Never raises: unreadable input is classified as kind `other` with the problem in `evidence`.
    """
    try:
        case = make_case(
            status=status,
            message=message,
            body=body,
            headers=headers,
            request_bytes=request_bytes,
            transport=transport,
            error_type=error_type,
            drop_threshold=drop_threshold,
            size_evidence=size_evidence,
            request_header_bytes=request_header_bytes,
            provider=provider,
            target=target,
            request_values=request_values,
        )
        return decide(case, user_rules)
    except Exception as exc:  # the classifier must never raise
        return _unclassifiable(exc)


def classify(
    error: BaseException,
    *,
    drop_threshold: int = DEFAULT_DROP_THRESHOLD,
    size_evidence: SizeEvidence | None = None,
    user_rules: Sequence[Rule] = (),
    target: Target | None = None,
    request_values: int | None = None,
) -> Failure:
    """Classify an exception: a `ProviderError`, or defensively a raw anthropic/openai/botocore error.

    Fields are read by attribute and class name (no SDK is imported); the rules are the same as
    `classify_fields`. Never raises.
    """
    try:
        parts = parts_from_exception(error)
        if parts is None:
            name = qualified_name(error)
            return Failure(
                kind=OTHER,
                reason=f"{HEADLINES[OTHER]}: {name} did not come from a provider call, "
                f"so it is never recovered",
                evidence=(f"exception {name} (not a provider error)",),
            )
        case = make_case(
            drop_threshold=drop_threshold,
            size_evidence=size_evidence,
            target=target,
            request_values=request_values,
            **parts,
        )
        return decide(case, user_rules)
    except Exception as exc:  # the classifier must never raise
        return _unclassifiable(exc)


def decide(case: Case, user_rules: Sequence[Rule] = ()) -> Failure:
    """Evaluate the built-in and the user's rules on `case`; the fallback when none matches."""
    verdict = evaluate(case, (*BUILT_IN_RULES, *user_rules))
    if verdict is None:
        kind, detail, evidence = _fallback(case)
        return _failure(case, kind=kind, detail=detail, evidence=evidence, rule_id=FALLBACK_RULE_ID)
    return _from_verdict(case, verdict)


def rule_ids() -> tuple[str, ...]:
    return tuple(rule.id for rule in BUILT_IN_RULES) + (FALLBACK_RULE_ID,)


# -- turning a verdict into a Failure ---------------------------------------------------------------
def _from_verdict(case: Case, verdict: Verdict) -> Failure:
    rule = verdict.rule
    evidence = [line for hit in verdict.hits + verdict.notes for line in hit.lines]
    stated = None
    if rule.states_window:
        stated = next((hit.value for hit in verdict.hits + verdict.notes if isinstance(hit.value, int)), None)
    return _failure(
        case,
        kind=rule.kind,
        detail=rule.describe(case, verdict.hits),
        evidence=evidence,
        rule_id=rule.id,
        origin=rule.origin,
        transient=rule.transient,
        headline=rule.headline,
        stated_window=stated,
        decided_by=means_of(rule),
        recoverable=rule.recoverable,
        ladder=(rule.ladder_limit, rule.ladder_start),
    )


def _failure(
    case: Case,
    *,
    kind: str,
    detail: str,
    evidence: list[str],
    rule_id: str,
    origin: str = "built-in",
    transient: bool | None = None,
    headline: str | None = None,
    stated_window: int | None = None,
    decided_by: str = "",
    recoverable: bool | None = None,
    ladder: tuple[int | None, int] = (None, 1),
) -> Failure:
    payload_related = kind in PAYLOAD_KINDS
    transient = kind in TRANSIENT_KINDS if transient is None else transient
    gateway = case.gateway
    headline = headline or HEADLINES[kind]
    if gateway and (kind in _GATEWAY_KINDS or rule_id.startswith("proxy.")):
        headline += f" ({GATEWAY_NAMES.get(gateway, gateway)})"
    lines = list(evidence)
    if case.status is not None and case.status_evidence() not in lines:
        lines.insert(0, case.status_evidence())
    if gateway and not any(gateway in item.lower() for item in lines):
        lines.append(f"gateway {gateway}")
    hop = hop_of(case)
    if hop is not None and hop.evidence:  # what named the hop, unless a signal already said it
        lines.extend(
            line for line in hop.evidence if line not in lines and line.split(" (", 1)[0] not in lines
        )
    lines.append(f"rule {rule_id}" + ("" if origin == "built-in" else f" (your rule, {origin})"))
    if recoverable is None:
        recoverable = payload_related or kind == CONTEXT_OVERFLOW
    return Failure(
        kind=kind,
        payload_related=payload_related,
        recoverable=recoverable,
        transient=transient,
        rejected_bytes=case.request_bytes,
        reason=f"{headline}: {detail}",
        evidence=tuple(dict.fromkeys(line for line in lines if line)),
        status=case.status,
        gateway=gateway,
        retry_after=case.retry_after if transient else None,
        rule_id=rule_id,
        rule_origin=origin,
        stated_window_tokens=stated_window,
        request_header_bytes=case.request_header_bytes,
        hop=hop,
        decided_by=decided_by or ("no rule: the fallback" if rule_id == FALLBACK_RULE_ID else ""),
        ladder_limit=ladder[0] if recoverable else None,
        ladder_start=ladder[1] if recoverable else 1,
    )


def _fallback(case: Case) -> tuple[str, str, list[str]]:
    evidence: list[str] = []
    if case.status is not None and case.status < 400:
        if case.html:
            evidence.append("HTML body")
        if case.transport:
            evidence.append(f"transport: {case.transport}")
            return (
                OTHER,
                f"{case.status} with a body that is not the API's answer and no known signal",
                evidence,
            )
        evidence.append("no transport flag (an adapter marks an HTML 200 as html-200)")
        return OTHER, f"{case.status} by itself is no rejection", evidence
    if case.html:
        evidence.append("HTML body")
    if case.gateway:
        evidence.append(f"gateway {case.gateway}")
    if case.status is not None:
        if case.html:
            title = page_title(case.body or case.message)
            if title:
                evidence.append(f'page title "{title}"')
                return (
                    OTHER,
                    f"{case.status} page “{title}” with no sign of size, overflow, WAF or overload",
                    evidence,
                )
            return OTHER, f"{case.status} with no sign of size, overflow, WAF or overload", evidence
        said = api_message(case)
        if not said:
            return OTHER, f"{case.status} with no sign of size, overflow, WAF or overload", evidence
        evidence.append(f'message "{clip(said, 80)}"')
        hint = _invalid_request_hint(case.status, said.lower())
        return (
            OTHER,
            (f"{case.status} from the provider: “{clip(said, 200)}”" + (f" — {hint}" if hint else "")),
            evidence,
        )
    if case.message or case.body:
        evidence.append(f'message "{clip(" ".join((case.message or case.body).split()), 80)}"')
    return OTHER, "no known signal (no status, no recognised wording)", evidence or ["no signal"]


def page_title(text: str) -> str:
    """The `<title>` (else the first `<h1>`) of an HTML page, text only, one line; "" when none."""
    from app.providers.html import page_heading

    return page_heading(text)


def _invalid_request_hint(status: int, said: str) -> str:
    """What to change when the provider refuses a request as invalid (the usual cases)."""
    if "model" in said and (
        status == 404
        or any(
            word in said
            for word in ("not found", "does not exist", "invalid", "not supported", "unknown", "no such")
        )
    ):
        return "check the route's `model` (the provider does not know it, or your key may not use it)"
    if "max_tokens" in said or "max_output_tokens" in said or "maximum allowed number of output" in said:
        return "lower `max_output_tokens` in config.toml (or the route's own)"
    if status in (404, 405):
        return "check the route's `base_url` (its path, e.g. a missing or doubled /v1)"
    return ""


def _unclassifiable(exc: BaseException) -> Failure:
    name = type(exc).__name__
    return Failure(
        kind=OTHER,
        reason=f"{HEADLINES[OTHER]}: the error could not be read ({name})",
        evidence=(f"classifier error {name}: {clip(safe_str(exc), 120)}",),
    )
