"""The rules that read what an error means and which hop answered (issues 38 and 39), as data.

Each rule combines a generalising signal — an object put over a limit (`failure_meaning.py`), a vendor's
fingerprint (`failure_vendors.py`), the hop's own words (`failure_hops.py`) — with the status family, where the
body came from and the request's own size; `means` names the signal for `classify --explain`. Priorities are
unique across both tables; `tests/unit/test_failure_rules.py` pins every pair of rules of different kinds that
meet on a real vector.
"""

from __future__ import annotations

from app.engine.failure_case import Case
from app.engine.failure_details import (
    HEADER_BYTES,
    LARGE_BODY,
    MANY_VALUES,
    _waf_detail,
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
from app.engine.failure_input import api_message, clip
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
    BLOCK_STATUSES,
    HEADERS_TOO_LARGE_RE,
    NETWORK_POLICY_RE,
    PAYLOAD_CODES,
    PAYLOAD_RE,
    RATE_LIMIT_CODES,
    RATE_WORDS_RE,
    WAF_RE,
)
from app.engine.failure_rule import (
    Rule,
)
from app.engine.failure_signals import (
    API_EVENT,
    BELOW_500,
    BYTE_LIMIT_NOTE,
    NO_HTTP_ANSWER,
    REQUEST_SIZE,
    TOKEN_COUNTS_NOTE,
    Check,
    Header,
    Hit,
    HtmlBody,
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
from app.model.failure_kinds import (
    AUTH,
    CONTEXT_OVERFLOW,
    HEADERS_TOO_LARGE,
    OTHER,
    PAYLOAD_TOO_LARGE,
    TIMEOUT,
    WAF_BLOCK,
)
from app.sizes import format_size


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


def _provider_message(case: Case) -> Hit | None:
    said = api_message(case)
    return make_hit(f'message "{clip(said, 80)}"') if said else None


NOT_PROVIDER_JSON = Check("not the provider's JSON", _not_provider_json)
PROVIDER_MESSAGE = Check("the provider's own words", _provider_message)
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


READ_RULES: tuple[Rule, ...] = (
    # -- issue 39: decided by meaning (object × limit × status family × body origin × size evidence) --------
    Rule(
        "meaning.output-limit",
        OTHER,
        765,
        (MEANS_OUTPUT_LIMIT,),
        unless=(status(401, 403, 407, 429, quiet=True),),
        notes=(PROVIDER_MESSAGE,),
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
        notes=(PROVIDER_MESSAGE,),
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
