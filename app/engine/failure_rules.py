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

from app.engine.failure_details import (  # noqa: F401 - detail sentences, one per rule
    BIG_HEADERS,
    HEADER_BYTES,
    HEADERS_SUSPECT_BYTES,
    LARGE_BODY,
    MANY_VALUES,
    _auth_status_detail,
    _big_headers,
    _block_200_detail,
    _ca_bundle_detail,
    _drop_detail,
    _drop_unproven_detail,
    _header_bytes,
    _headers_detail,
    _headers_reset_detail,
    _html_200_detail,
    _overflow_detail,
    _overloaded_status_detail,
    _pairing_detail,
    _payload_detail,
    _server_detail,
    _timeout_detail,
    _title_of,
    _tls_detail,
    _tpm_detail,
    _upstream_detail,
    _waf_detail,
    _words,
    block_status_detail,
    body_meaning_detail,
    gateway_html_400_detail,
    headers_meaning_detail,
    meaning_overflow_detail,
    network_policy_detail,
    not_the_request_detail,
    output_limit_detail,
    proxy_policy_detail,
    proxy_timeout_detail,
    proxy_unreachable_detail,
    refused_detail,
    slow_upload_detail,
    tunnel_refused_detail,
    waf_vendor_detail,
)
from app.engine.failure_hops import (
    CONNECTION_REFUSED,
    PROXY_POLICY_REFUSAL,
    PROXY_TIMEOUT,
    PROXY_UNREACHABLE,
    SIZE_EVIDENCE_SAYS_SIZE,
    TUNNEL_REFUSED,
)
from app.engine.failure_input import Case
from app.engine.failure_meaning import (
    MEANS_BODY_TOO_LARGE,
    MEANS_CONVERSATION_TOO_LONG,
    MEANS_HEADERS_TOO_LARGE,
    MEANS_OUTPUT_LIMIT,
    MEANS_SOMETHING_ELSE,
    Subject,
    read,
)
from app.engine.failure_phrases import (
    APIGW_FORBIDDEN,
    AUTH_CLASSES,
    AUTH_CODES,
    AUTH_RE,
    BEDROCK_TOO_LONG,
    BEDROCK_VALIDATION_CODE,
    BLOCK_STATUSES,
    CONNECT_FAILURE_CLASSES,
    CONNECT_RE,
    CONTEXT_OVERFLOW_CODES,
    CONTEXT_OVERFLOW_RE,
    GENERIC_OVERFLOW_STATUSES,
    HEADERS_TOO_LARGE_RE,
    MODEL_NOT_READY_RE,
    MUST_BE_REDUCED,
    NETWORK_POLICY_RE,
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
    RATE_WORDS_RE,
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
from app.engine.failure_vendors import Role, find_vendor
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
    means: str = ""  # the generalising signal this rule embodies (`classify --explain` shows it)
    recoverable: bool | None = None  # None: the kind's default (payload-related or context overflow)
    ladder_limit: int | None = None  # a recoverable rule's attempts (None: max_recovery_attempts)
    ladder_start: int = 1  # and the level it starts at (2: fewer messages at once)

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


# -- signals of the rules read by meaning (issue 39) ----------------------------------------------------------
def _not_provider_json(case: Case) -> Hit | None:
    return None if case.json_envelope else make_hit()


def _waf_vendor(case: Case) -> Hit | None:
    mark = find_vendor(case, (Role.WAF,))
    return make_hit(mark.line, f"{mark.vendor.display}'s mark") if mark is not None else None


def _big_413(case: Case) -> Hit | None:
    """A 413 on a body of a mebibyte or more, with no token figures: the body cap, even if it says "length"."""
    size = case.request_bytes
    if case.status != 413 or size is None or size < 1024 * 1024:
        return None
    if token_counts(case) is not None or read(case).about(Subject.INPUT) is not None:
        return None
    return make_hit(f"413 on a {format_size(size)} body with no token figures: the body's size")


def _gateway_origin(case: Case) -> Hit | None:
    """The answer came from a hop in front of the provider: a web page, or a vendor's marks with no API code."""
    if case.json_envelope:
        return None
    if case.html:
        return make_hit("HTML page from a gateway, not the provider's JSON")
    if case.codes - {"http"}:
        return None  # the provider's own error code (Bedrock's ModelTimeoutException): not a gateway
    mark = find_vendor(case)
    return make_hit(f"{mark.line}, no API error code") if mark is not None else None


def _network_policy(case: Case) -> Hit | None:
    if not case.json_envelope:
        return None
    found = NETWORK_POLICY_RE.search(case.text)
    return (
        make_hit(f'phrase "{found.group(0)}" in the provider\'s JSON', f'"{found.group(0)}"')
        if found
        else None
    )


NOT_PROVIDER_JSON = Check("not the provider's JSON", _not_provider_json)
# What payload.size already knows (413, API Gateway's header, the payload phrases and codes): it decides those.
KNOWN_PAYLOAD = any_of(
    status(413, quiet=True),
    Header("x-amzn-errortype", "requestentitytoolargeexception"),
    all_of(BELOW_500, any_of(phrase(PAYLOAD_RE), code(PAYLOAD_CODES))),
)
GATEWAY_ORIGIN = Check("answered by a gateway", _gateway_origin)
WAF_VENDOR_MARK = Check("a WAF vendor's mark (header, cookie, link host, page)", _waf_vendor)
BIG_413 = Check("413 on a multi-megabyte body", _big_413)
NETWORK_POLICY = Check("the provider's own network rules", _network_policy)
RATE_WORDS = phrase(RATE_WORDS_RE)
ANSWERED_ERROR = status(None, between=(400, 599), quiet=True)
NOT_THIS_FAMILY = status(401, 403, 407, 408, 429, quiet=True)  # auth, timeout and rate statuses say it first
NEVER_A_BLOCK = status(401, 407, 408, 413, 429, 431, quiet=True)


# An API error that arrived (a code, or words about the conversation's length): never a dropped line.
API_ANSWER = any_of(API_EVENT, MEANS_CONVERSATION_TOO_LONG)


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
        unless=(MEANS_BODY_TOO_LARGE,),  # a 200 page that states a body limit (PHP's post_max_size warning)
        notes=(HtmlBody(), phrase(WAF_RE), WAF_VENDOR_MARK),
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
        unless=(API_ANSWER,),
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
        unless=(API_ANSWER,),
        transient=True,
        headline="Could not connect",
        detail="the request never left (no connection); treated as a transient network failure and retried",
    ),
    Rule(
        "net.cut-after-200",
        OTHER,
        865,
        (status(200, quiet=True), NO_HTTP_ANSWER, DROPPED),
        unless=(API_ANSWER,),
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
        unless=(API_ANSWER,),
        detail=_drop_detail,
    ),
    Rule(
        "headers.reset-big-headers",
        HEADERS_TOO_LARGE,
        858,
        (status(None, quiet=True), DROPPED, BIG_HEADERS),
        unless=(API_ANSWER,),
        notes=(REQUEST_SIZE,),
        detail=_headers_reset_detail,
    ),
    Rule(
        "net.reset-unproven",
        OTHER,
        855,
        (status(None, quiet=True), DROPPED, RESET_UNPROVEN),
        unless=(API_ANSWER,),
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
        unless=(MEANS_CONVERSATION_TOO_LONG,),
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
        unless=(code(RATE_LIMIT_CODES), BIG_413, MEANS_BODY_TOO_LARGE),
        notes=(TOKEN_COUNTS_NOTE, MEANS_CONVERSATION_TOO_LONG),
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
    # -- issue 39: decided by meaning (object × limit × status family × body origin × size evidence) --------
    Rule(
        "meaning.output-limit",
        OTHER,
        765,
        (MEANS_OUTPUT_LIMIT,),
        unless=(status(401, 403, 407, 429, quiet=True),),
        transient=False,
        headline="Output limit refused",
        detail=output_limit_detail,
        means="output-limit noun × limit",
    ),
    Rule(
        "meaning.overflow",
        CONTEXT_OVERFLOW,
        645,
        (status(None, 200, between=(400, 599), quiet=True), MEANS_CONVERSATION_TOO_LONG),
        unless=(NOT_THIS_FAMILY, RATE_WORDS, code(RATE_LIMIT_CODES), BIG_413),
        notes=(TOKEN_COUNTS_NOTE,),
        detail=meaning_overflow_detail,
        states_window=True,
        means="token/context noun × limit",
    ),
    Rule(
        "meaning.headers",
        HEADERS_TOO_LARGE,
        580,
        (status(None, between=(400, 499), quiet=True), MEANS_HEADERS_TOO_LARGE),
        unless=(NOT_THIS_FAMILY, status(431, quiet=True), phrase(HEADERS_TOO_LARGE_RE)),
        notes=(HtmlBody("HTML page from a gateway"), HEADER_BYTES, REQUEST_SIZE),
        detail=headers_meaning_detail,
        means="header noun × limit",
    ),
    Rule(
        "meaning.body-size",
        PAYLOAD_TOO_LARGE,
        595,
        (
            any_of(status(None, between=(400, 599), quiet=True), transport("html-200", "non-sse-200")),
            MEANS_BODY_TOO_LARGE,
        ),
        unless=(NOT_THIS_FAMILY, status(431, quiet=True), KNOWN_PAYLOAD),
        notes=(HtmlBody(), BYTE_LIMIT_NOTE, REQUEST_SIZE),
        detail=body_meaning_detail,
        means="size noun × limit (and the request's size)",
    ),
    Rule(
        "meaning.not-the-request",
        OTHER,
        560,
        (status(None, between=(400, 499), quiet=True), MEANS_SOMETHING_ELSE),
        unless=(status(413, 431, quiet=True),),
        transient=False,
        headline="Refused for something other than size",
        detail=not_the_request_detail,
        means="a limit on another object (image, tools, field, response)",
    ),
    Rule(
        "waf.vendor-mark",
        WAF_BLOCK,
        696,
        (ANSWERED_ERROR, NOT_PROVIDER_JSON, WAF_VENDOR_MARK),
        unless=(NEVER_A_BLOCK, MEANS_HEADERS_TOO_LARGE),
        notes=(HtmlBody(), REQUEST_SIZE),
        detail=waf_vendor_detail,
        means="vendor fingerprint (header, cookie, link host, page)",
    ),
    Rule(
        "waf.block-status",
        WAF_BLOCK,
        694,
        (status(*BLOCK_STATUSES), HtmlBody()),
        notes=(phrase(WAF_RE), REQUEST_SIZE),
        detail=block_status_detail,
        means="status family: a status no API sends",
    ),
    Rule(
        "waf.page-words",
        WAF_BLOCK,
        693,
        (status(between=(400, 499)), HtmlBody(), phrase(WAF_RE)),
        unless=(NEVER_A_BLOCK, MEANS_HEADERS_TOO_LARGE, MEANS_BODY_TOO_LARGE),
        notes=(REQUEST_SIZE,),
        detail=_waf_detail,
        means="block words on a gateway page at any 4xx",
    ),
    Rule(
        "auth.network-policy",
        AUTH,
        705,
        (status(403), NETWORK_POLICY),
        detail=network_policy_detail,
        means="body origin: the provider's own JSON about its network",
    ),
    # -- issue 38: the hop that answered -------------------------------------------------------------------
    Rule(
        "proxy.policy",
        AUTH,
        720,
        (PROXY_POLICY_REFUSAL,),
        unless=(SIZE_EVIDENCE_SAYS_SIZE,),
        headline="Refused by the proxy's policy",
        detail=proxy_policy_detail,
        means="hop: X-Squid-Error / Proxy-Status policy error",
    ),
    Rule(
        "proxy.policy-by-size",
        PAYLOAD_TOO_LARGE,
        721,
        (PROXY_POLICY_REFUSAL, SIZE_EVIDENCE_SAYS_SIZE),
        notes=(REQUEST_SIZE,),
        headline="Refused by the proxy, by size",
        detail=lambda c, h: f"{c.status} policy refusal of a body larger than the ones this endpoint took",
        means="hop policy × the endpoint's size evidence",
    ),
    Rule(
        "proxy.unreachable",
        OTHER,
        718,
        (PROXY_UNREACHABLE,),
        transient=False,
        headline="The proxy could not reach the provider",
        detail=proxy_unreachable_detail,
        means="hop: X-Squid-Error / Proxy-Status upstream error",
    ),
    Rule(
        "proxy.timeout",
        TIMEOUT,
        717,
        (PROXY_TIMEOUT,),
        detail=proxy_timeout_detail,
        means="hop: X-Squid-Error / Proxy-Status timeout",
    ),
    Rule(
        "proxy.tunnel-refused",
        OTHER,
        878,
        (NO_HTTP_ANSWER, TUNNEL_REFUSED),
        transient=False,
        headline="The proxy refused the tunnel",
        detail=tunnel_refused_detail,
        means="hop: the proxy's answer to CONNECT",
    ),
    Rule(
        "net.refused",
        OTHER,
        872,
        (NO_HTTP_ANSWER, CONNECTION_REFUSED),
        unless=(TUNNEL_REFUSED, API_EVENT),
        transient=False,
        headline="Could not connect",
        detail=refused_detail,
        means="no HTTP answer: connection refused",
    ),
    Rule(
        "gateway.html-400",
        OTHER,
        565,
        (
            status(400),
            HtmlBody("HTML page from a gateway, not the provider's JSON"),
            any_of(MANY_VALUES, LARGE_BODY),
        ),
        transient=False,
        headline="Refused by a gateway",
        detail=gateway_html_400_detail,
        means="status 400 × gateway HTML × the request's shape",
        recoverable=True,
        ladder_limit=1,
        ladder_start=2,
    ),
    Rule(
        "timeout.gateway-408",
        TIMEOUT,
        902,
        (status(408), GATEWAY_ORIGIN),
        notes=(REQUEST_SIZE,),
        transient=False,
        headline="Upload too slow for the gateway",
        detail=slow_upload_detail,
        means="status 408 × gateway origin",
        recoverable=True,
        ladder_limit=1,
        ladder_start=2,
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


def means_of(rule: Rule) -> str:
    """The generalising signal behind `rule`: its own `means`, else the family of signal its id says."""
    if rule.means:
        return rule.means
    family = rule.id.split(".", 1)[0]
    return {
        "waf": "block-page phrases and headers",
        "overflow": "the providers' own context-length wording (phrase table)",
        "payload": "status 413 and the payload phrases",
        "headers": "header-size status and phrases",
        "net": "no HTTP answer: how the connection failed",
        "timeout": "timeout status, class or wording",
        "rate": "status 429 and rate-limit codes",
        "overloaded": "overload status and codes",
        "server": "status family 5xx",
        "auth": "auth status, codes and wording",
        "quota": "quota wording and codes",
        "config": "your rule from config.toml",
    }.get(family, "phrase table")
