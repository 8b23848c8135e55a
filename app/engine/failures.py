"""Why did a provider call fail? `classify()` turns an error into a `Failure` with its evidence.

    failure = classify(provider_error)                 # a ProviderError (or a raw SDK exception)
    failure = classify_fields(status=413, body=html, request_bytes=844_000)
    failure.kind, failure.reason, failure.evidence     # "payload_too_large", one line, the signals

Both entry points share one rule set (`_RULES`, first match wins). The rules only read
status, message, body, headers, request size and the transport's own flag; they never
import httpx or the SDKs, and the classifier never raises: anything it cannot read is
kind `other` with the reason in its evidence. DESIGN.md §5 is the specification.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from app.engine.failure_input import (
    Case,
    api_message,
    clip,
    header_matches,
    make_case,
    parts_from_exception,
    qualified_name,
    safe_str,
)
from app.engine.failure_phrases import (
    APIGW_FORBIDDEN,
    AUTH_CLASSES,
    AUTH_CODES,
    AUTH_STATUSES,
    BEDROCK_TOO_LONG,
    BEDROCK_VALIDATION_CODE,
    BYTE_LIMIT,
    CONNECT_FAILURE_CLASSES,
    CONNECT_RE,
    CONNECTION_DROP_CLASSES,
    CONTEXT_OVERFLOW_CODES,
    CONTEXT_OVERFLOW_RE,
    DEFAULT_DROP_THRESHOLD,
    DROP_RE,
    EXCESS_WORDS,
    GENERIC_OVERFLOW_STATUSES,
    INPUT_PLUS_OUTPUT,
    LENGTH_WORDS,
    MUST_BE_REDUCED,
    NON_STREAM_200,
    OUTPUT_ONLY_WORDS,
    OVERLOADED_CODES,
    OVERLOADED_RE,
    OVERLOADED_STATUSES,
    PAYLOAD_CODES,
    PAYLOAD_RE,
    PAYLOAD_STATUSES,
    RATE_LIMIT_CODES,
    RATE_RE,
    SERVER_ERROR_CODES,
    TIMEOUT_CLASSES,
    TIMEOUT_CODES,
    TIMEOUT_RE,
    TIMEOUT_STATUSES,
    TLS_FAILURE,
    TLS_FAILURE_CLASSES,
    TOKEN_COUNTS,
    WAF_HEADERS_ALWAYS,
    WAF_HEADERS_WITHOUT_JSON,
    WAF_HTML_RE,
    WAF_RE,
    WAF_STATUSES,
)
from app.sizes import format_size

# -- kinds and what each allows ----------------------------------------------------------------
CONTEXT_OVERFLOW = "context_overflow"
PAYLOAD_TOO_LARGE = "payload_too_large"
WAF_BLOCK = "waf_block"
CONNECTION_DROP = "connection_drop"
AUTH = "auth"
RATE_LIMIT = "rate_limit"
OVERLOADED = "overloaded"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
OTHER = "other"
KINDS = (CONTEXT_OVERFLOW, PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP, AUTH, RATE_LIMIT,
         OVERLOADED, SERVER_ERROR, TIMEOUT, OTHER)

PAYLOAD_KINDS = frozenset({PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP})
TRANSIENT_KINDS = frozenset({RATE_LIMIT, OVERLOADED, SERVER_ERROR, TIMEOUT})

LEARNED_CAP_RATIO = 0.75  # DESIGN.md §4: a payload rejection of N bytes teaches a cap of ¾ × N
FALLBACK_CAP_BYTES = 4 * 1024 * 1024  # assumed cap when the rejected size is unknown

HEADLINES = {
    CONTEXT_OVERFLOW: "Context window exceeded",
    PAYLOAD_TOO_LARGE: "Request body too large",
    WAF_BLOCK: "Rejected by a WAF",
    CONNECTION_DROP: "Connection dropped during a large request",
    AUTH: "Authentication or permission refused",
    RATE_LIMIT: "Rate limited",
    OVERLOADED: "Provider overloaded",
    SERVER_ERROR: "Server error",
    TIMEOUT: "Timed out",
    OTHER: "Not a recoverable rejection",
}

GATEWAY_NAMES = {
    "nginx": "nginx", "cloudflare": "Cloudflare", "akamai": "Akamai", "modsecurity": "ModSecurity",
    "aws-waf": "AWS WAF", "cloudfront": "CloudFront", "awselb": "AWS load balancer",
    "apigw": "API Gateway", "envoy": "Envoy", "zscaler": "Zscaler", "imperva": "Imperva",
    "f5": "F5 BIG-IP", "sucuri": "Sucuri",
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

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields (evidence as a list)."""
        data = asdict(self)
        data["evidence"] = list(self.evidence)
        return data


@dataclass
class _Verdict:
    kind: str
    detail: str
    evidence: list[str] = field(default_factory=list)
    transient: bool | None = None  # overrides the kind's default (small drops are transient "other")
    headline: str | None = None


# -- public API -------------------------------------------------------------------------------------
def classify_fields(status: Any = None, message: Any = "", body: Any = None, headers: Any = None,
                    request_bytes: Any = None, *, transport: Any = None, error_type: Any = None,
                    drop_threshold: Any = DEFAULT_DROP_THRESHOLD) -> Failure:
    """Classify a failure from its raw parts (status, message, body text, headers, request size).

    Never raises: unreadable input is classified as kind `other` with the problem in `evidence`.
    """
    try:
        case = make_case(status=status, message=message, body=body, headers=headers,
                          request_bytes=request_bytes, transport=transport, error_type=error_type,
                          drop_threshold=drop_threshold)
        return _decide(case)
    except Exception as exc:  # the classifier must never raise
        return _unclassifiable(exc)


def classify(error: BaseException, *, drop_threshold: int = DEFAULT_DROP_THRESHOLD) -> Failure:
    """Classify an exception: a `ProviderError`, or defensively a raw anthropic/openai/botocore error.

    Fields are read by attribute and class name (no SDK is imported); the rules are the same as
    `classify_fields`. Never raises.
    """
    try:
        parts = parts_from_exception(error)
        if parts is None:
            name = qualified_name(error)
            return _finish(make_case(drop_threshold=drop_threshold), _Verdict(
                OTHER, f"{name} did not come from a provider call, so it is never recovered",
                [f"exception {name} (not a provider error)"]))
        case = make_case(drop_threshold=drop_threshold, **parts)
        return _decide(case)
    except Exception as exc:  # the classifier must never raise
        return _unclassifiable(exc)


def describe_action(failure: Failure) -> str:
    """What bulkhead does about `failure`, in words (for the inspector and `bulkhead classify`)."""
    kind = failure.kind
    if kind in PAYLOAD_KINDS:
        if failure.rejected_bytes:
            cap = math.floor(LEARNED_CAP_RATIO * failure.rejected_bytes)
            return (f"learn a cap of ¾ × {format_size(failure.rejected_bytes)} = {format_size(cap)} "
                    f"and walk the recovery ladder")
        return (f"assume a {format_size(FALLBACK_CAP_BYTES)} cap (rejected size unknown) "
                f"and walk the recovery ladder")
    if kind == CONTEXT_OVERFLOW:
        return "compact the conversation and walk the recovery ladder (L1 → L3); no cap is learned"
    if kind == AUTH:
        if failure.status == 407:
            return "fail: the proxy wants credentials (put them in HTTPS_PROXY as user:password@host)"
        return ("fail: check your API key (`bulkhead auth set anthropic|openai`, or the AWS credential "
                "chain) and that it may use this model")
    if failure.transient:
        if failure.retry_after is not None:
            return (f"retry with backoff (honouring retry-after {_format_seconds(failure.retry_after)}), "
                    f"a bounded number of times; never compact")
        return "retry with backoff and jitter, a bounded number of times; never compact"
    return "fail: retrying or compacting would not help"


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
    return f"check that {where} is reachable (network, VPN, HTTPS_PROXY), then /retry"


def explain(failure: Failure, *, learned_cap: int | None = None, level: int | None = None) -> str:
    """One copyable plain-text sentence: what rejected the request, the signals, and the outcome."""
    sentence = failure.reason or HEADLINES.get(failure.kind, failure.kind)
    if failure.rejected_bytes is not None and format_size(failure.rejected_bytes) not in sentence:
        sentence += f", request {format_size(failure.rejected_bytes)}"
    if learned_cap is not None and level is not None:
        sentence += f"; bulkhead learned a {format_size(learned_cap)} cap and recovered at ladder level {level}"
    elif learned_cap is not None:
        sentence += f"; bulkhead learned a {format_size(learned_cap)} cap"
    elif level is not None:
        sentence += f"; bulkhead recovered at ladder level {level}"
    else:
        action = describe_action(failure)
        sentence += (f"; bulkhead stops here: {action.removeprefix('fail: ')}" if action.startswith("fail: ")
                     else f"; bulkhead will {action}")
    return sentence


# -- the rules (first match wins) -------------------------------------------------------------------
def _timeout_rule(case: Case) -> _Verdict | None:
    evidence: list[str] = []
    if case.transport == "timeout":
        evidence.append("transport: timeout")
    named = [n for n in case.class_names[:1] if n.lower() in TIMEOUT_CLASSES]
    evidence += [f"exception {n}" for n in named]
    if case.status in TIMEOUT_STATUSES:
        evidence.append(case.status_evidence())
        detail = TIMEOUT_STATUSES[case.status]
    elif case.status in (None, 200) and (case.codes & TIMEOUT_CODES):
        evidence.append(f'error code "{sorted(case.codes & TIMEOUT_CODES)[0]}"')
        detail = "the provider gave up waiting"
    else:
        detail = "no answer in time"
        if not evidence and case.status is None:
            phrase = TIMEOUT_RE.search(case.text)
            if phrase:
                evidence.append(f'phrase "{phrase.group(0)}"')
    if not evidence:
        return None
    if case.request_bytes is not None:
        evidence.append(f"request {format_size(case.request_bytes)}")
    return _Verdict(TIMEOUT, f"{detail}; a timeout says nothing about size, so it is retried", evidence)


def _html_200_rule(case: Case) -> _Verdict | None:
    """A 200 the adapter flagged: an HTML page (html-200), or another non-stream body with block wording."""
    if case.transport == NON_STREAM_200:
        phrase = WAF_RE.search(case.text)
        if not phrase:
            return None  # a JSON error event or an odd body: the other rules read it
        evidence = [case.status_evidence(), f"transport: {NON_STREAM_200}", f'phrase "{phrase.group(0)}"']
        return _Verdict(WAF_BLOCK, f'200 with a block message instead of the API\'s stream ("{phrase.group(0)}")',
                        evidence)
    if case.transport != "html-200":
        return None
    evidence = ["transport: html-200 (the SDK got a page, not the API's JSON)"]
    if case.status is not None:
        evidence.insert(0, case.status_evidence())
    if case.html:
        evidence.append("HTML body where the API speaks JSON")
    phrase = WAF_RE.search(case.text)
    if phrase:
        evidence.append(f'phrase "{phrase.group(0)}"')
    return _Verdict(WAF_BLOCK, "200 with an HTML page instead of the API's JSON (captive portal or block page)",
                    evidence)


def _connection_rule(case: Case) -> _Verdict | None:
    if case.status not in (None, 200) or (case.status == 200 and case.transport not in ("connection",
                                                                                         "stream-error")):
        return None
    if case.codes & (RATE_LIMIT_CODES | OVERLOADED_CODES | SERVER_ERROR_CODES | AUTH_CODES
                     | CONTEXT_OVERFLOW_CODES):
        return None  # an API error event that arrived in a stream, not a dropped connection
    tls = TLS_FAILURE.search(case.text) or _first_in(case.class_names + case.cause_names, TLS_FAILURE_CLASSES)
    if tls:
        evidence = [_signal_text(tls, "TLS")]
        return _Verdict(OTHER, "TLS verification failed (a proxy re-signing traffic? set SSL_CERT_FILE "
                        "or REQUESTS_CA_BUNDLE to its CA)", evidence, transient=False,
                        headline="Could not connect")
    connect = CONNECT_RE.search(case.text) or _first_in(case.class_names + case.cause_names,
                                                          CONNECT_FAILURE_CLASSES)
    if connect:
        return _Verdict(OTHER, "the request never left (no connection); treated as a transient network "
                        "failure and retried", [_signal_text(connect, "connect")], transient=True,
                        headline="Could not connect")
    evidence: list[str] = []
    if case.transport == "connection":
        evidence.append("transport: connection dropped (no HTTP response)" if case.status is None
                        else f"transport: connection cut after status {case.status}")
    name = _first_in(case.class_names, CONNECTION_DROP_CLASSES)
    if name:
        evidence.append(f"exception {name}")
    phrase = DROP_RE.search(case.text)
    if phrase:
        evidence.append(f'phrase "{phrase.group(0)}"')
    if not evidence and not _first_in(case.cause_names, CONNECTION_DROP_CLASSES):
        return None
    evidence += list(case.cause_notes[:2])
    threshold = case.drop_threshold
    size = case.request_bytes
    if case.status == 200:
        evidence.append("the gateway had accepted the body (status 200 came first)")
        return _Verdict(OTHER, "the stream was cut after a 200, so the request size is not the cause: treated "
                        "as a transient network failure and retried", evidence, transient=True,
                        headline="Connection dropped")
    if size is not None and size >= threshold:
        evidence.append(f"request {format_size(size)} ≥ {format_size(threshold)} drop threshold")
        return _Verdict(CONNECTION_DROP, f"no response to a {format_size(size)} request; a gateway body cap "
                        "cuts large uploads like this", evidence)
    if size is None:
        evidence.append(f"request size unknown (drop threshold {format_size(threshold)})")
        detail = "no response and the request size is unknown"
    else:
        evidence.append(f"request {format_size(size)} < {format_size(threshold)} drop threshold")
        detail = f"no response to a small {format_size(size)} request"
    return _Verdict(OTHER, f"{detail}: treated as a transient network failure and retried", evidence,
                    transient=True, headline="Connection dropped")


def _auth_status_rule(case: Case) -> _Verdict | None:
    if case.status not in AUTH_STATUSES:
        return None
    evidence = [case.status_evidence()] + _code_evidence(case, AUTH_CODES)
    return _Verdict(AUTH, AUTH_STATUSES[case.status], evidence)


def _forbidden_rule(case: Case) -> _Verdict | None:
    if case.status not in WAF_STATUSES:
        return None
    evidence = [case.status_evidence()]
    signals: list[str] = []
    if case.html:
        evidence.append("HTML body where the API speaks JSON")
        signals.append("an HTML block page")
    for name, value_part in WAF_HEADERS_ALWAYS + (() if case.json_envelope else WAF_HEADERS_WITHOUT_JSON):
        key = header_matches(case.headers, name, value_part)
        if key:
            evidence.append(f"header {key}: {clip(case.headers[key], 40)}")
            signals.append(f"{key} header" if not value_part else f"{key}: {clip(case.headers[key], 20)}")
    if APIGW_FORBIDDEN in case.codes:
        evidence.append("x-amzn-ErrorType ForbiddenException (API Gateway; Bedrock itself says AccessDenied)")
        signals.append("an API Gateway ForbiddenException")
    phrase = WAF_RE.search(case.text) or (WAF_HTML_RE.search(case.text) if case.html else None)
    if phrase:
        evidence.append(f'phrase "{clip(phrase.group(0), 60)}"')
        signals.append(f'"{clip(phrase.group(0), 40)}"')
    if len(evidence) > 1:
        if case.request_bytes is not None:
            evidence.append(f"request {format_size(case.request_bytes)}")
        return _Verdict(WAF_BLOCK, f"{case.status} with {' and '.join(_dedupe(signals)[:2])}", evidence)
    if case.status == 406:
        return None  # a JSON 406 is an ordinary bad request
    if case.json_envelope and header_matches(case.headers, "cf-ray", ""):
        evidence.append("header cf-ray ignored: the body is the API's own JSON error")
    evidence += _code_evidence(case, AUTH_CODES)
    return _Verdict(AUTH, "403 with no firewall signal: the API refused the key or the model", evidence)


def _too_many_requests_rule(case: Case) -> _Verdict | None:
    if case.status != 429:
        return None
    evidence = [case.status_evidence()]
    reduced = MUST_BE_REDUCED.search(case.text)
    if reduced:
        evidence.append(f'phrase "{reduced.group(0)}"')
        evidence += _token_evidence(case.text)
        return _Verdict(CONTEXT_OVERFLOW, "429 for one request larger than the tokens-per-minute limit; "
                        "waiting will not help, a smaller request will", evidence)
    if "insufficient_quota" in case.codes or "exceeded your current quota" in case.text:
        evidence.append("code insufficient_quota")
        return _Verdict(OTHER, "429 because the account's quota or credit is used up; waiting will not help — "
                        "check billing for this key", evidence, transient=False)
    evidence += _code_evidence(case, RATE_LIMIT_CODES)
    phrase = RATE_RE.search(case.text)
    if phrase:
        evidence.append(f'phrase "{phrase.group(0)}"')
    if case.retry_after is not None:
        evidence.append(f"retry-after {_format_seconds(case.retry_after)}")
    return _Verdict(RATE_LIMIT, "429 Too Many Requests", evidence)


def _overflow_phrase_rule(case: Case) -> _Verdict | None:
    evidence: list[str] = []
    if case.status is not None:
        evidence.append(case.status_evidence())
    phrase = CONTEXT_OVERFLOW_RE.search(case.text)
    code = _code_evidence(case, CONTEXT_OVERFLOW_CODES)
    bedrock = (BEDROCK_VALIDATION_CODE in case.codes and BEDROCK_TOO_LONG.search(case.text))
    if not (phrase or code or bedrock) or case.codes & RATE_LIMIT_CODES:
        return None  # "Too many tokens, please wait" is Bedrock throttling, not a long prompt
    if phrase:
        evidence.append(f'phrase "{clip(phrase.group(0), 60)}"')
    evidence += code
    if bedrock:
        evidence.append(f'ValidationException with "{bedrock.group(0)}"')
    tokens = _token_evidence(case.text)
    evidence += tokens
    said = f'"{clip(phrase.group(0), 60)}"' if phrase else "a context-length error"
    detail = f"{case.status or 'error'} {said}" + (f" ({_short_tokens(tokens[0])})" if tokens else "")
    return _Verdict(CONTEXT_OVERFLOW, f"{detail}: the conversation is longer than the model's window",
                    evidence)


def _server_status_rule(case: Case) -> _Verdict | None:
    if case.status is None or not 500 <= case.status <= 599:
        return None
    evidence = [case.status_evidence()]
    if case.html:
        evidence.append("HTML error page from a gateway")
    overloaded = _code_evidence(case, OVERLOADED_CODES)
    if case.status in OVERLOADED_STATUSES or overloaded:
        evidence += overloaded
        phrase = OVERLOADED_RE.search(case.text)
        if phrase:
            evidence.append(f'phrase "{phrase.group(0)}"')
        return _Verdict(OVERLOADED, OVERLOADED_STATUSES.get(case.status, f"{case.status} overloaded"), evidence)
    evidence += _code_evidence(case, SERVER_ERROR_CODES)
    return _Verdict(SERVER_ERROR, f"{case.status} from the {'gateway' if case.html else 'server'}", evidence)


def _payload_rule(case: Case) -> _Verdict | None:
    evidence: list[str] = []
    detail = ""
    if case.status in PAYLOAD_STATUSES:
        evidence.append(case.status_evidence())
        detail = PAYLOAD_STATUSES[case.status]
    if "requestentitytoolargeexception" in (case.header("x-amzn-errortype") or "").lower():
        evidence.append("header x-amzn-ErrorType: RequestEntityTooLargeException")
        detail = detail or "RequestEntityTooLargeException"
    phrase = None
    if case.status is None or 400 <= case.status <= 499:
        phrase = PAYLOAD_RE.search(case.text)
        code = _code_evidence(case, PAYLOAD_CODES)
        if phrase:
            evidence.append(f'phrase "{phrase.group(0)}"')
            detail = detail or f'{case.status or "error"} "{phrase.group(0)}"'
        if code:
            evidence += code
            detail = detail or f"{case.status or 'error'} {code[0]}"
    if not evidence:
        return None
    if case.status is not None and case.status_evidence() not in evidence:
        evidence.insert(0, case.status_evidence())
    if case.html:
        evidence.append("HTML body where the API speaks JSON")
        detail += " (HTML page)"
    limit = BYTE_LIMIT.search(case.text)
    if limit:
        evidence.append(f"server limit {format_size(int(limit.group(1)))} ({int(limit.group(1)):,} bytes)")
    if case.request_bytes is not None:
        evidence.append(f"request {format_size(case.request_bytes)}")
    return _Verdict(PAYLOAD_TOO_LARGE, detail, evidence)


def _api_error_code_rule(case: Case) -> _Verdict | None:
    """Errors told by their code or wording: in-stream events, botocore codes, message-only input."""
    if case.status is not None and case.status >= 500:
        return None
    evidence = [case.status_evidence()] if case.status is not None else []
    if case.transport == "stream-error":
        evidence.append("transport: error event inside the stream")
    tables = (
        (OVERLOADED, OVERLOADED_CODES, OVERLOADED_RE, "the provider is overloaded"),
        (RATE_LIMIT, RATE_LIMIT_CODES, RATE_RE, "rate limited or throttled"),
        (SERVER_ERROR, SERVER_ERROR_CODES, None, "the provider failed internally"),
        (AUTH, AUTH_CODES, None, "the credentials or permissions were refused"),
    )
    wording_counts = case.status in (None, 200)  # a 4xx's wording is the API's; only its codes count
    for kind, codes, phrases, detail in tables:
        code = _code_evidence(case, codes)
        phrase = phrases.search(case.text) if phrases is not None and wording_counts else None
        if kind == AUTH and not code:
            name = _first_in(case.class_names, AUTH_CLASSES)
            code = [f"exception {name}"] if name else []
        if code or phrase:
            evidence += code + ([f'phrase "{phrase.group(0)}"'] if phrase else [])
            if kind == RATE_LIMIT and case.retry_after is not None:
                evidence.append(f"retry-after {_format_seconds(case.retry_after)}")
            return _Verdict(kind, detail, evidence)
    return None


def _overflow_pairing_rule(case: Case) -> _Verdict | None:
    """A 400/413 (or status-less) error pairing a token/length word with an excess word."""
    if case.html or not (case.status is None or case.status in GENERIC_OVERFLOW_STATUSES):
        return None
    for sentence in re.split(r"[.;!?\n]\s", case.text):
        length = LENGTH_WORDS.search(sentence)
        excess = EXCESS_WORDS.search(sentence)
        if not (length and excess) or abs(length.start() - excess.start()) > 80:
            continue
        if OUTPUT_ONLY_WORDS.search(sentence) and not re.search(r"\b(?:input|prompt|context)\b", sentence):
            continue  # "max_tokens > the model's maximum output": a setting, not a long conversation
        evidence = ([case.status_evidence()] if case.status is not None else [])
        evidence += [f'words "{length.group(0)}" + "{excess.group(0)}"'] + _token_evidence(case.text)
        said = f'"{clip(sentence.strip(), 80)}"'
        return _Verdict(CONTEXT_OVERFLOW, f"{case.status or 'error'} {said}: the conversation is longer "
                        "than the model's window", evidence)
    return None


def _fallback_rule(case: Case) -> _Verdict:
    evidence = [case.status_evidence()] if case.status is not None else []
    if case.status is not None and case.status < 400:
        if case.html:
            evidence.append("HTML body")
        if case.transport:
            evidence.append(f"transport: {case.transport}")
            return _Verdict(OTHER, f"{case.status} with a body that is not the API's answer and no known "
                            "signal", evidence)
        evidence.append("no transport flag (an adapter marks an HTML 200 as html-200)")
        return _Verdict(OTHER, f"{case.status} by itself is no rejection", evidence)
    if case.html:
        evidence.append("HTML body")
    if case.gateway:
        evidence.append(f"gateway {case.gateway}")
    if case.status is not None:
        said = "" if case.html else api_message(case)
        if not said:
            return _Verdict(OTHER, f"{case.status} with no sign of size, overflow, WAF or overload", evidence)
        evidence.append(f'message "{clip(said, 80)}"')
        hint = _invalid_request_hint(case.status, said.lower())
        return _Verdict(OTHER, f"{case.status} from the provider: “{clip(said, 200)}”"
                        + (f" — {hint}" if hint else ""), evidence)
    if case.message or case.body:
        evidence.append(f'message "{clip(" ".join((case.message or case.body).split()), 80)}"')
    return _Verdict(OTHER, "no known signal (no status, no recognised wording)", evidence or ["no signal"])


def _invalid_request_hint(status: int, said: str) -> str:
    """What to change when the provider refuses a request as invalid (the usual cases)."""
    if "model" in said and (status == 404 or any(word in said for word in (
            "not found", "does not exist", "invalid", "not supported", "unknown", "no such"))):
        return "check the route's `model` (the provider does not know it, or your key may not use it)"
    if "max_tokens" in said or "max_output_tokens" in said or "maximum allowed number of output" in said:
        return "lower `max_output_tokens` in config.toml (or the route's own)"
    if status in (404, 405):
        return "check the route's `base_url` (its path, e.g. a missing or doubled /v1)"
    return ""


_RULES: tuple[Callable[[Case], _Verdict | None], ...] = (
    _timeout_rule,
    _html_200_rule,
    _connection_rule,
    _auth_status_rule,
    _forbidden_rule,
    _too_many_requests_rule,
    _overflow_phrase_rule,
    _server_status_rule,
    _payload_rule,
    _api_error_code_rule,
    _overflow_pairing_rule,
)


def _decide(case: Case) -> Failure:
    for rule in _RULES:
        verdict = rule(case)
        if verdict is not None:
            return _finish(case, verdict)
    return _finish(case, _fallback_rule(case))


def _finish(case: Case, verdict: _Verdict) -> Failure:
    kind = verdict.kind
    payload_related = kind in PAYLOAD_KINDS
    transient = kind in TRANSIENT_KINDS if verdict.transient is None else verdict.transient
    gateway = case.gateway
    headline = verdict.headline or HEADLINES[kind]
    if gateway and kind in (WAF_BLOCK, PAYLOAD_TOO_LARGE, TIMEOUT, SERVER_ERROR, OVERLOADED, AUTH):
        headline += f" ({GATEWAY_NAMES.get(gateway, gateway)})"
    evidence = list(verdict.evidence)
    if gateway and not any(gateway in item.lower() for item in evidence):
        evidence.append(f"gateway {gateway}")
    return Failure(
        kind=kind, payload_related=payload_related,
        recoverable=payload_related or kind == CONTEXT_OVERFLOW, transient=transient,
        rejected_bytes=case.request_bytes, reason=f"{headline}: {verdict.detail}",
        evidence=tuple(_dedupe(evidence)), status=case.status, gateway=gateway,
        retry_after=case.retry_after if transient else None,
    )


def _unclassifiable(exc: BaseException) -> Failure:
    name = type(exc).__name__
    return Failure(kind=OTHER, reason=f"{HEADLINES[OTHER]}: the error could not be read ({name})",
                   evidence=(f"classifier error {name}: {clip(safe_str(exc), 120)}",))


# -- evidence helpers -------------------------------------------------------------------------------
def _code_evidence(case: Case, table: frozenset[str]) -> list[str]:
    return [f'error code "{code}"' for code in sorted(case.codes & table)]


def _token_evidence(text: str) -> list[str]:
    found = INPUT_PLUS_OUTPUT.search(text)
    if found:
        prompt, output, limit = (_number(found.group(i)) for i in (1, 2, 3))
        return [f"tokens: {prompt:,} input + {output:,} max_tokens > {limit:,} limit"]
    for pattern, used_group, limit_group in TOKEN_COUNTS:
        found = pattern.search(text)
        if found:
            used, limit = _number(found.group(used_group)), _number(found.group(limit_group))
            over = f" ({(used - limit) / limit:+.0%})" if limit else ""
            return [f"tokens: {used:,} > {limit:,} limit{over}"]
    return []


def _short_tokens(evidence: str) -> str:
    """'tokens: 40,100 > 32,768 limit (+22%)' → '40,100 > 32,768 tokens'."""
    core = evidence.removeprefix("tokens: ").split(" (", 1)[0]
    return core.removesuffix(" limit") + " tokens"


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _first_in(names: Iterable[str], table: frozenset[str]) -> str | None:
    return next((name for name in names if name.lower() in table), None)


def _signal_text(signal: re.Match[str] | str, what: str) -> str:
    if isinstance(signal, str):
        return f"exception {signal}"
    return f'phrase "{signal.group(0)}" ({what})'


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))




def _format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if float(seconds).is_integer() else f"{seconds:.1f}s"

