"""The classifier's rules, as data: `Rule(id, kind, priority, signals, unless)`.

Every rule is evaluated against the normalised `Case`; a rule matches when each of its
`signals` matches and none of its `unless` signals does. The matching rule with the highest
priority wins (built-in priorities are unique; `tests/unit/test_failure_rules.py` pins every
pair of rules that can match the same error). Each signal writes its own evidence line, so a
verdict always says what decided it, and the winning rule's id is part of the evidence.

Signals (`failure_signals.py`) read status, headers, phrases, error codes, body shape, transport
flags, exception classes (also down the cause chain) and the request size. What cannot be said as
a pattern is a named predicate (`Check`): the size judgement of a reset (`app/engine/resets.py`),
the pairing of a length word with an excess word, a tokens-per-minute request over its limit.
User rules from `[[classifier.rules]]` are built from the same signals (`user_rules.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.engine.failure_input import Case
from app.engine.failure_phrases import (
    APIGW_FORBIDDEN,
    AUTH_CLASSES,
    AUTH_CODES,
    AUTH_RE,
    BEDROCK_TOO_LONG,
    BEDROCK_VALIDATION_CODE,
    CONNECT_FAILURE_CLASSES,
    CONNECT_RE,
    CONTEXT_OVERFLOW_CODES,
    CONTEXT_OVERFLOW_RE,
    GENERIC_OVERFLOW_STATUSES,
    HEADERS_TOO_LARGE_RE,
    MODEL_NOT_READY_RE,
    MUST_BE_REDUCED,
    NON_STREAM_200,
    OVERLOADED_CODES,
    OVERLOADED_RE,
    PAYLOAD_CODES,
    PAYLOAD_RE,
    PROXY_AUTH_IN_CHAIN,
    QUOTA_CODES,
    QUOTA_RE,
    QUOTA_RESETS_SOON_RE,
    RATE_LIMIT_CODES,
    RATE_RE,
    SERVER_ERROR_CODES,
    TIMEOUT_CLASSES,
    TIMEOUT_CODES,
    TIMEOUT_RE,
    TLS_FAILURE,
    TLS_FAILURE_CLASSES,
    UPSTREAM_TROUBLE_RE,
    WAF_HEADERS_ALWAYS,
    WAF_HEADERS_WITHOUT_JSON,
    WAF_HTML_RE,
    WAF_RE,
    WAF_STRONG_RE,
)
from app.engine.failure_signals import (
    API_EVENT,
    BELOW_500,
    BYTE_LIMIT_NOTE,
    CF_RAY_ON_JSON,
    DROPPED,
    HTML_NOTE,
    NO_HTTP_ANSWER,
    NO_STATUS_OR_200,
    OVERFLOW_PAIRING,
    REQUEST_SIZE,
    RESET_IS_SIZE,
    RESET_UNPROVEN,
    RETRY_AFTER,
    STREAM_ERROR,
    TOKEN_COUNTS_NOTE,
    TPM_OVER_LIMIT,
    CauseChain,
    Check,
    ExceptionClass,
    Header,
    Hit,
    HtmlBody,
    NotHtml,
    Signal,
    all_of,
    any_of,
    code,
    make_hit,
    phrase,
    status,
    token_counts,
    transport,
)
from app.sizes import format_size

# -- kinds ------------------------------------------------------------------------------------------
CONTEXT_OVERFLOW = "context_overflow"
PAYLOAD_TOO_LARGE = "payload_too_large"
WAF_BLOCK = "waf_block"
CONNECTION_DROP = "connection_drop"
HEADERS_TOO_LARGE = "headers_too_large"
AUTH = "auth"
RATE_LIMIT = "rate_limit"
OVERLOADED = "overloaded"
SERVER_ERROR = "server_error"
TIMEOUT = "timeout"
OTHER = "other"
KINDS = (
    CONTEXT_OVERFLOW,
    PAYLOAD_TOO_LARGE,
    WAF_BLOCK,
    CONNECTION_DROP,
    HEADERS_TOO_LARGE,
    AUTH,
    RATE_LIMIT,
    OVERLOADED,
    SERVER_ERROR,
    TIMEOUT,
    OTHER,
)
PAYLOAD_KINDS = frozenset({PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP})
TRANSIENT_KINDS = frozenset({RATE_LIMIT, OVERLOADED, SERVER_ERROR, TIMEOUT})


# -- rules ----------------------------------------------------------------------------------------------
Detail = str | Callable[[Case, Sequence[Hit]], str]


@dataclass(frozen=True)
class Rule:
    """One way of recognising a failure. Matches when every signal does and no `unless` signal does."""

    id: str
    kind: str
    priority: int
    signals: tuple[Signal, ...]
    unless: tuple[Signal, ...] = ()
    notes: tuple[Signal, ...] = ()  # evidence worth showing when the rule wins; never decides
    detail: Detail = ""
    transient: bool | None = None  # None: the kind's default
    headline: str | None = None
    origin: str = "built-in"  # or "config.toml:12" for a user rule
    states_window: bool = False  # a token limit in the evidence is the largest request the provider takes

    def match(self, case: Case) -> list[Hit] | None:
        hits: list[Hit] = []
        for signal in self.signals:
            hit = signal(case)
            if hit is None:
                return None
            hits.append(hit)
        if any(signal(case) is not None for signal in self.unless):
            return None
        return hits

    def describe(self, case: Case, hits: Sequence[Hit]) -> str:
        if callable(self.detail):
            return self.detail(case, hits)
        return self.detail or "matched"


def _words(hits: Sequence[Hit]) -> list[str]:
    return list(dict.fromkeys(word for hit in hits for word in hit.words))


def _timeout_detail(case: Case, hits: Sequence[Hit]) -> str:
    from app.engine.failure_phrases import TIMEOUT_STATUSES

    if case.status in TIMEOUT_STATUSES:
        said = TIMEOUT_STATUSES[case.status]
    elif case.status in (None, 200) and case.codes & TIMEOUT_CODES:
        said = "the provider gave up waiting"
    else:
        said = "no answer in time"
    return f"{said}; a timeout says nothing about size, so it is retried"


def _waf_detail(case: Case, hits: Sequence[Hit]) -> str:
    signals = _words(hits[1:])
    return f"{case.status} with {' and '.join(signals[:2]) or 'a block signal'}"


def _overflow_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = next((w for w in _words(hits) if w.startswith('"')), "a context-length error")
    tokens = token_counts(case)
    counted = ""
    if tokens is not None:
        core = tokens.lines[0].removeprefix("tokens: ").split(" (", 1)[0]
        counted = f" ({core.removesuffix(' limit')} tokens)"
    return f"{case.status or 'error'} {said}{counted}: the conversation is longer than the model's window"


def _payload_detail(case: Case, hits: Sequence[Hit]) -> str:
    from app.engine.failure_phrases import PAYLOAD_STATUSES

    if case.status in PAYLOAD_STATUSES:
        detail = PAYLOAD_STATUSES[case.status]
    elif "requestentitytoolargeexception" in (case.header("x-amzn-errortype") or "").lower():
        detail = "RequestEntityTooLargeException"
    else:
        found = PAYLOAD_RE.search(case.text)
        detail = (
            f'{case.status or "error"} "{found.group(0)}"'
            if found
            else f"{case.status or 'error'} error code {sorted(case.codes & PAYLOAD_CODES)[0]}"
        )
    return detail + (" (HTML page)" if case.html else "")


def _headers_detail(case: Case, hits: Sequence[Hit]) -> str:
    title = _title_of(case).strip(" ()")
    if case.status == 431:
        said = "431 Request Header Fields Too Large"
    elif title:
        said = f"{case.status or 'error'} page {title}"
    else:
        said = f"{case.status or 'error'} {next((w for w in _words(hits) if w.startswith(chr(34))), 'header too large')}"
    sent = (
        f" (bulkhead sent {format_size(case.request_header_bytes)} of headers)"
        if case.request_header_bytes
        else ""
    )
    return (
        f"{said}{sent}: the request's headers, not its body, are over the gateway's limit — "
        "a long API key or token, cookies, or custom headers"
    )


def _header_bytes(case: Case) -> Hit | None:
    size = case.request_header_bytes
    return make_hit(f"request headers {format_size(size)} ({size:,} bytes)") if size else None


HEADER_BYTES = Check("request header size", _header_bytes)
# Header blocks past this are refused by common servers (Node, Envoy and Kestrel cap them at 16 KiB;
# nginx and Apache a single line at 8 KiB). Node answers its 431 and closes at once with the body
# unread, so the client often sees a reset instead of the 431: a reset of a request with headers
# this big is a header problem, not a transient network failure and not a body cap.
HEADERS_SUSPECT_BYTES = 16 * 1024


def _big_headers(case: Case) -> Hit | None:
    size = case.request_header_bytes
    if not size or size < HEADERS_SUSPECT_BYTES:
        return None
    return make_hit(
        f"request headers {format_size(size)} ({size:,} bytes) ≥ {format_size(HEADERS_SUSPECT_BYTES)}, "
        "past what common servers accept"
    )


BIG_HEADERS = Check("header block past common server limits", _big_headers)


def _headers_reset_detail(case: Case, hits: Sequence[Hit]) -> str:
    sent = format_size(case.request_header_bytes or 0)
    return (
        f"the connection was reset after bulkhead sent {sent} of headers — more than servers commonly "
        "accept (Node, Envoy and Kestrel answer 431 and close); the headers, not the body, are the likely "
        "cause: a long API key or token, cookies, or custom headers"
    )


def _drop_detail(case: Case, hits: Sequence[Hit]) -> str:
    size = format_size(case.request_bytes) if case.request_bytes is not None else "large"
    return (
        f"no response to a {size} request; a gateway body cap cuts uploads like this "
        "(`bulkhead probe` measures it)"
    )


def _drop_unproven_detail(case: Case, hits: Sequence[Hit]) -> str:
    if case.request_bytes is None:
        said = "no response and the request size is unknown"
    else:
        said = f"no response to a {format_size(case.request_bytes)} request"
    return (
        f"{said}: treated as a transient network failure and retried (resets of bodies from "
        f"drop_payload_min_bytes, {format_size(case.drop_threshold)}, or repeated ones count as a "
        "gateway cap; `bulkhead probe` finds it)"
    )


def _tls_detail(case: Case, hits: Sequence[Hit]) -> str:
    """The certificate hint names what the failing route's SDK reads, and bulkhead's own `ca_bundle`."""
    from app.ca_bundle import SDK_NAMES, sdk_reads

    said = "TLS verification failed: the server's certificate is not trusted (a proxy re-signing traffic?)"
    if case.provider in SDK_NAMES:
        return (
            f"{said}; set ca_bundle in config.toml to its CA bundle, or {sdk_reads(case.provider)}, "
            f"which {SDK_NAMES[case.provider]} reads"
        )
    return (
        f"{said}; set ca_bundle in config.toml to its CA bundle (bulkhead hands it to every provider's SDK)"
    )


def _ca_bundle_detail(case: Case, hits: Sequence[Hit]) -> str:
    """The route's CA bundle does not exist (`app.ca_bundle`): its own words (variable, path), once."""
    said = case.message.split("CaBundleMissing: ", 1)[-1].strip().splitlines()[0]
    return said.split(": ", 1)[1] if said.startswith("routes.") and ": " in said else said


def _server_detail(case: Case, hits: Sequence[Hit]) -> str:
    return f"{case.status} from the {'gateway' if case.html else 'server'}" + _title_of(case)


def _title_of(case: Case) -> str:
    """(“502 Bad Gateway”): an HTML page's own title or first heading, quoted."""
    if not case.html:
        return ""
    from app.providers.html import page_heading

    title = page_heading(case.body or case.message)
    return f" (“{title}”)" if title else ""


def _overloaded_status_detail(case: Case, hits: Sequence[Hit]) -> str:
    from app.engine.failure_phrases import OVERLOADED_STATUSES

    return OVERLOADED_STATUSES.get(case.status, f"{case.status} overloaded")


def _auth_status_detail(case: Case, hits: Sequence[Hit]) -> str:
    from app.engine.failure_phrases import AUTH_STATUSES

    return AUTH_STATUSES.get(case.status, f"{case.status} refused")


def _pairing_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = next((w for w in _words(hits) if w.startswith('"')), "")
    return f"{case.status or 'error'} {said}: the conversation is longer than the model's window"


def _tpm_detail(case: Case, hits: Sequence[Hit]) -> str:
    return (
        f"{case.status or 'error'}: one request larger than the tokens-per-minute limit; "
        "waiting will not help, a smaller request will"
    )


def _html_200_detail(case: Case, hits: Sequence[Hit]) -> str:
    return "200 with an HTML page instead of the API's JSON (captive portal or block page)"


def _block_200_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = next((w for w in _words(hits) if w.startswith('"')), "")
    return f"200 with a block message instead of the API's stream ({said})"


def _upstream_detail(case: Case, hits: Sequence[Hit]) -> str:
    return (
        f"{case.status} from a proxy whose upstream failed or reset; the provider is not "
        "(necessarily) overloaded — retried"
    )


# Every built-in rule; priorities are unique (higher wins).
BUILT_IN_RULES: tuple[Rule, ...] = (
    Rule(
        "net.ca-bundle-missing",
        OTHER,
        905,
        (ExceptionClass(frozenset({"cabundlemissing"}), first_only=True),),
        transient=False,
        headline="Could not connect",
        detail=_ca_bundle_detail,
    ),
    Rule(
        "timeout",
        TIMEOUT,
        900,
        (
            any_of(
                transport("timeout", line="transport: timeout"),
                ExceptionClass(TIMEOUT_CLASSES, first_only=True),
                status(408, 504, 522, 524),
                all_of(NO_STATUS_OR_200, code(TIMEOUT_CODES)),
                all_of(status(None), phrase(TIMEOUT_RE)),
            ),
        ),
        notes=(REQUEST_SIZE,),
        detail=_timeout_detail,
    ),
    Rule(
        "waf.html-200",
        WAF_BLOCK,
        890,
        (transport("html-200", line="transport: html-200 (the SDK got a page, not the API's JSON)"),),
        notes=(HtmlBody(), phrase(WAF_RE)),
        detail=_html_200_detail,
    ),
    Rule(
        "waf.block-200", WAF_BLOCK, 885, (transport(NON_STREAM_200), phrase(WAF_RE)), detail=_block_200_detail
    ),
    Rule(
        "auth.proxy-407-in-chain",
        AUTH,
        880,
        (NO_HTTP_ANSWER, CauseChain(PROXY_AUTH_IN_CHAIN)),
        detail="the proxy wants credentials (407 while opening the tunnel)",
    ),
    Rule(
        "net.tls-verify",
        OTHER,
        875,
        (
            NO_HTTP_ANSWER,
            any_of(phrase(TLS_FAILURE, label="TLS"), ExceptionClass(TLS_FAILURE_CLASSES, chain=True)),
        ),
        unless=(API_EVENT,),
        transient=False,
        headline="Could not connect",
        detail=_tls_detail,
    ),
    Rule(
        "net.connect-failed",
        OTHER,
        870,
        (
            NO_HTTP_ANSWER,
            any_of(phrase(CONNECT_RE, label="connect"), ExceptionClass(CONNECT_FAILURE_CLASSES, chain=True)),
        ),
        unless=(API_EVENT,),
        transient=True,
        headline="Could not connect",
        detail="the request never left (no connection); treated as a transient network failure and retried",
    ),
    Rule(
        "net.cut-after-200",
        OTHER,
        865,
        (status(200, quiet=True), NO_HTTP_ANSWER, DROPPED),
        unless=(API_EVENT,),
        transient=True,
        headline="Connection dropped",
        notes=(
            Check(
                "accepted", lambda c: make_hit("the gateway had accepted the body (status 200 came first)")
            ),
        ),
        detail="the stream was cut after a 200, so the request size is not the cause",
    ),
    Rule(
        "net.reset-by-size",
        CONNECTION_DROP,
        860,
        (status(None, quiet=True), DROPPED, RESET_IS_SIZE),
        unless=(API_EVENT,),
        detail=_drop_detail,
    ),
    Rule(
        "headers.reset-big-headers",
        HEADERS_TOO_LARGE,
        858,
        (status(None, quiet=True), DROPPED, BIG_HEADERS),
        unless=(API_EVENT,),
        notes=(REQUEST_SIZE,),
        detail=_headers_reset_detail,
    ),
    Rule(
        "net.reset-unproven",
        OTHER,
        855,
        (status(None, quiet=True), DROPPED, RESET_UNPROVEN),
        unless=(API_EVENT,),
        transient=True,
        headline="Connection dropped",
        detail=_drop_unproven_detail,
    ),
    Rule(
        "auth.status", AUTH, 800, (status(401, 407),), notes=(code(AUTH_CODES),), detail=_auth_status_detail
    ),
    Rule(
        "overflow.tpm",
        CONTEXT_OVERFLOW,
        770,
        (any_of(all_of(status(429), phrase(MUST_BE_REDUCED)), TPM_OVER_LIMIT),),
        notes=(TOKEN_COUNTS_NOTE,),
        detail=_tpm_detail,
        states_window=True,
    ),
    Rule(
        "quota.exhausted",
        OTHER,
        760,
        (any_of(code(QUOTA_CODES), phrase(QUOTA_RE)),),
        unless=(phrase(QUOTA_RESETS_SOON_RE),),
        transient=False,
        detail="the account's quota or credit is used up; waiting will not help — check billing for this key",
    ),
    Rule(
        "overloaded.model-not-ready",
        OVERLOADED,
        750,
        (any_of(code("modelnotreadyexception"), phrase(MODEL_NOT_READY_RE)),),
        notes=(RETRY_AFTER,),
        detail="the model is not ready yet (loading or scaling up); retried after a wait",
    ),
    Rule(
        "rate.429",
        RATE_LIMIT,
        740,
        (status(429),),
        notes=(code(RATE_LIMIT_CODES), phrase(RATE_RE), RETRY_AFTER),
        detail="429 Too Many Requests",
    ),
    Rule(
        "waf.block-words",
        WAF_BLOCK,
        695,
        (status(None, between=(400, 599), quiet=True), phrase(WAF_STRONG_RE)),
        notes=(HtmlBody(), REQUEST_SIZE),
        detail=_waf_detail,
    ),
    Rule(
        "waf.action-header",
        WAF_BLOCK,
        697,
        (any_of(Header("x-amzn-waf-action"), Header("cf-mitigated")),),
        notes=(HtmlBody(), REQUEST_SIZE),
        detail=lambda c, h: (
            f"{c.status or 'an answer'} with {' and '.join(_words(h)) or 'a WAF action header'} "
            "(a CAPTCHA or challenge the API client cannot solve)"
        ),
    ),
    Rule(
        "waf.403",
        WAF_BLOCK,
        700,
        (
            status(403, 406),
            any_of(
                HtmlBody(),
                *(Header(name, value) for name, value in WAF_HEADERS_ALWAYS),
                *(Header(name, value, unless_json=True) for name, value in WAF_HEADERS_WITHOUT_JSON),
                Check(
                    "API Gateway ForbiddenException",
                    lambda c: (
                        make_hit(
                            "x-amzn-ErrorType ForbiddenException (API Gateway; Bedrock itself says AccessDenied)",
                            "an API Gateway ForbiddenException",
                        )
                        if APIGW_FORBIDDEN in c.codes
                        else None
                    ),
                ),
                phrase(WAF_RE),
                phrase(WAF_HTML_RE, html_only=True),
            ),
        ),
        notes=(REQUEST_SIZE,),
        detail=_waf_detail,
    ),
    Rule(
        "auth.403",
        AUTH,
        690,
        (status(403),),
        notes=(CF_RAY_ON_JSON, code(AUTH_CODES)),
        detail="403 with no firewall signal: the API refused the key or the model",
    ),
    Rule(
        "overflow.phrase",
        CONTEXT_OVERFLOW,
        650,
        (
            any_of(
                phrase(CONTEXT_OVERFLOW_RE),
                code(CONTEXT_OVERFLOW_CODES),
                Check(
                    "Bedrock ValidationException too long",
                    lambda c: (
                        make_hit(f'ValidationException with "{BEDROCK_TOO_LONG.search(c.text).group(0)}"')
                        if BEDROCK_VALIDATION_CODE in c.codes and BEDROCK_TOO_LONG.search(c.text)
                        else None
                    ),
                ),
            ),
        ),
        unless=(code(RATE_LIMIT_CODES),),
        notes=(TOKEN_COUNTS_NOTE,),
        detail=_overflow_detail,
        states_window=True,
    ),
    Rule(
        "server.upstream-trouble",
        SERVER_ERROR,
        610,
        (status(502, 503), phrase(UPSTREAM_TROUBLE_RE)),
        notes=(HTML_NOTE,),
        detail=_upstream_detail,
    ),
    Rule(
        "overloaded.status",
        OVERLOADED,
        600,
        (any_of(status(503, 529), all_of(status(between=(500, 599)), code(OVERLOADED_CODES))),),
        notes=(HTML_NOTE, phrase(OVERLOADED_RE)),
        detail=_overloaded_status_detail,
    ),
    Rule(
        "server.5xx",
        SERVER_ERROR,
        590,
        (status(between=(500, 599)),),
        notes=(HTML_NOTE, code(SERVER_ERROR_CODES)),
        detail=_server_detail,
    ),
    Rule(
        "headers.phrase",
        HEADERS_TOO_LARGE,
        575,
        (status(None, between=(400, 499), quiet=True), phrase(HEADERS_TOO_LARGE_RE)),
        notes=(HtmlBody("HTML page from a gateway"), HEADER_BYTES),
        detail=_headers_detail,
    ),
    Rule(
        "headers.431",
        HEADERS_TOO_LARGE,
        570,
        (status(431),),
        notes=(HtmlBody("HTML page from a gateway"), HEADER_BYTES),
        detail=_headers_detail,
    ),
    Rule(
        "payload.size",
        PAYLOAD_TOO_LARGE,
        550,
        (
            any_of(
                status(413),
                Header(
                    "x-amzn-errortype",
                    "requestentitytoolargeexception",
                    note="header x-amzn-ErrorType: RequestEntityTooLargeException",
                ),
                all_of(BELOW_500, any_of(phrase(PAYLOAD_RE), code(PAYLOAD_CODES))),
            ),
        ),
        notes=(HtmlBody(), BYTE_LIMIT_NOTE, REQUEST_SIZE),
        detail=_payload_detail,
    ),
    Rule(
        "overloaded.code",
        OVERLOADED,
        520,
        (BELOW_500, any_of(code(OVERLOADED_CODES), all_of(NO_STATUS_OR_200, phrase(OVERLOADED_RE)))),
        notes=(STREAM_ERROR,),
        detail="the provider is overloaded",
    ),
    Rule(
        "rate.code",
        RATE_LIMIT,
        510,
        (BELOW_500, any_of(code(RATE_LIMIT_CODES), all_of(NO_STATUS_OR_200, phrase(RATE_RE)))),
        notes=(STREAM_ERROR, RETRY_AFTER),
        detail="rate limited or throttled",
    ),
    Rule(
        "server.code",
        SERVER_ERROR,
        500,
        (BELOW_500, code(SERVER_ERROR_CODES)),
        notes=(STREAM_ERROR,),
        detail="the provider failed internally",
    ),
    Rule(
        "auth.phrase",
        AUTH,
        495,
        (status(None, 400, 401, 403, quiet=True), phrase(AUTH_RE)),
        detail="the provider refused the key (its own words)",
    ),
    Rule(
        "auth.code",
        AUTH,
        490,
        (BELOW_500, any_of(code(AUTH_CODES), ExceptionClass(AUTH_CLASSES))),
        notes=(STREAM_ERROR,),
        detail="the credentials or permissions were refused",
    ),
    Rule(
        "overflow.pairing",
        CONTEXT_OVERFLOW,
        400,
        (status(None, *GENERIC_OVERFLOW_STATUSES, quiet=True), NotHtml(), OVERFLOW_PAIRING),
        notes=(TOKEN_COUNTS_NOTE,),
        detail=_pairing_detail,
        states_window=True,
    ),
)


@dataclass(frozen=True)
class Verdict:
    """The winning rule and what it saw; `matched` lists every rule that matched, best first."""

    rule: Rule
    hits: tuple[Hit, ...]
    notes: tuple[Hit, ...]
    matched: tuple[str, ...] = field(default=())


def evaluate(case: Case, rules: Sequence[Rule]) -> Verdict | None:
    """Evaluate every rule; the highest priority wins (a user rule wins a tie with a built-in one)."""
    matched: list[tuple[Rule, list[Hit]]] = []
    for rule in rules:
        hits = rule.match(case)
        if hits is not None:
            matched.append((rule, hits))
    if not matched:
        return None
    matched.sort(key=lambda item: (item[0].priority, item[0].origin != "built-in"), reverse=True)
    rule, hits = matched[0]
    notes = tuple(hit for hit in (note(case) for note in rule.notes) if hit is not None)
    return Verdict(rule, tuple(hits), notes, tuple(r.id for r, _ in matched))
