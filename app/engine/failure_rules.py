"""The classifier's rules, as data: `Rule(id, kind, priority, signals, unless)` (`failure_rule.py`).

Every rule is evaluated against the normalised `Case`; a rule matches when each of its
`signals` matches and none of its `unless` signals does. The matching rule with the highest
priority wins (built-in priorities are unique; `tests/unit/test_failure_rules.py` pins every
pair of rules that can match the same error). Each signal writes its own evidence line, so a
verdict always says what decided it, and the winning rule's id is part of the evidence.

Signals (`failure_signals.py`) read status, headers, phrases, error codes, body shape, transport
flags, exception classes (also down the cause chain) and the request size. What cannot be said as
a pattern is a named predicate (`Check`): the size judgement of a reset (`app/engine/resets.py`),
the pairing of a length word with an excess word, a tokens-per-minute request over its limit.
User rules from `[[classifier.rules]]` are built from the same signals (`user_rules.py`). This table holds
the first rules (statuses, codes, phrases, connections); `failure_rules_read.py` those that read meaning and
hops (issues 38–39); `BUILT_IN_RULES` is both.
"""

from __future__ import annotations

from app.engine.failure_details import (  # detail sentences, one per rule (the meaning and hop rules' own: failure_rules_read)
    BIG_HEADERS,
    HEADER_BYTES,
    _auth_status_detail,
    _block_200_detail,
    _ca_bundle_detail,
    _drop_detail,
    _drop_unproven_detail,
    _headers_detail,
    _headers_reset_detail,
    _html_200_detail,
    _overflow_detail,
    _overloaded_status_detail,
    _pairing_detail,
    _payload_detail,
    _server_detail,
    _timeout_detail,
    _tls_detail,
    _tpm_detail,
    _upstream_detail,
    _waf_detail,
    _words,
)
from app.engine.failure_meaning import (
    MEANS_BODY_TOO_LARGE,
    MEANS_CONVERSATION_TOO_LONG,
)
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
from app.engine.failure_rule import (  # noqa: F401 - the kinds and the machinery are this module's API
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
    Detail,
    Rule,
    Verdict,
    evaluate,
    means_of,
)
from app.engine.failure_rules_read import (
    API_ANSWER,
    BIG_413,
    READ_RULES,
    WAF_VENDOR_MARK,
)
from app.engine.failure_signals import (
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
    HtmlBody,
    NotHtml,
    all_of,
    any_of,
    code,
    make_hit,
    phrase,
    status,
    transport,
)

# Every built-in rule; priorities are unique (higher wins).
CORE_RULES: tuple[Rule, ...] = (
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
)

BUILT_IN_RULES: tuple[Rule, ...] = (*CORE_RULES, *READ_RULES)
