"""The words of the rule table's verdicts: each rule's detail sentence (what happened, from what it saw).

A detail reads the normalised `Case` and the signals that matched (`Hit`s) and says, in one sentence, what
the failure means for the user. Failure kinds and the rules themselves live in `failure_rules.py`; what
bulkhead then does about a failure, in words, in `failure_words.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.failure_case import Case
from app.engine.failure_phrases import PAYLOAD_CODES, PAYLOAD_RE, TIMEOUT_CODES
from app.engine.failure_signals import Check, Hit, make_hit, token_counts
from app.sizes import format_size


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

    return OVERLOADED_STATUSES.get(case.status or 0, f"{case.status} overloaded")


def _auth_status_detail(case: Case, hits: Sequence[Hit]) -> str:
    from app.engine.failure_phrases import AUTH_STATUSES

    return AUTH_STATUSES.get(case.status or 0, f"{case.status} refused")


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


# -- issue 39: verdicts read by meaning ----------------------------------------------------------------------
def _quoted(hits: Sequence[Hit], fallback: str) -> str:
    return next((w for w in _words(hits) if w.startswith('"')), fallback)


def meaning_overflow_detail(case: Case, hits: Sequence[Hit]) -> str:
    tokens = token_counts(case)
    counted = ""
    if tokens is not None:
        core = tokens.lines[0].removeprefix("tokens: ").split(" (", 1)[0]
        counted = f" ({core.removesuffix(' limit')} tokens)"
    said = _quoted(hits, "a context-length limit")
    return f"{case.status or 'error'} {said}{counted}: the conversation is longer than the model's window"


def output_limit_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = _quoted(hits, "an output-token limit")
    return (
        f"{case.status or 'error'} {said}: the requested output length (max_tokens) is over the model's limit — "
        "lower `max_output_tokens` in config.toml (or the route's own)"
    )


def body_meaning_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = _quoted(hits, "a body-size limit")
    return f"{case.status or 'error'} {said}: the request body is over a size limit" + (
        " (HTML page)" if case.html else ""
    )


def headers_meaning_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = _quoted(hits, "a header-size limit")
    sent = (
        f" (bulkhead sent {format_size(case.request_header_bytes)} of headers)"
        if case.request_header_bytes
        else ""
    )
    return (
        f"{case.status or 'error'} {said}{sent}: the request's headers, not its body, are over the limit — "
        "a long API key or token, cookies, or custom headers"
    )


def not_the_request_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = _quoted(hits, "a limit")
    return (
        f"{case.status or 'error'} {said}: a limit on something other than the conversation's size (an image, "
        "the tool list, one field, the response)"
    )


def waf_vendor_detail(case: Case, hits: Sequence[Hit]) -> str:
    return f"{case.status} block page from a WAF ({' and '.join(_words(hits)[:2]) or 'its marks'})"


def block_status_detail(case: Case, hits: Sequence[Hit]) -> str:
    title = _title_of(case)
    return (
        f"{case.status}{title}: a status no API answers with, on a web page — a middlebox blocked the request"
    )


def network_policy_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = _quoted(hits, "its network rules")
    return (
        f"{case.status} from the provider itself: {said} — the resource's own firewall or virtual-network "
        "settings refuse this network (not a WAF judging the content)"
    )


def _hop_name(case: Case, fallback: str) -> str:
    from app.engine.failure_hops import hop_of

    hop = hop_of(case)
    return hop.name if hop is not None and hop.name else fallback


def _host_of(case: Case) -> str:
    from urllib.parse import urlsplit

    url = case.target.url if case.target else ""
    try:
        parts = urlsplit(url)
        return (
            f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
            if parts.hostname
            else ""
        )
    except ValueError:
        return ""


def proxy_policy_detail(case: Case, hits: Sequence[Hit]) -> str:
    who = _hop_name(case, "the proxy")
    host = _host_of(case)
    where = f" to {host}" if host else ""
    return (
        f"{case.status} from {who}: its access rules do not allow this request{where} "
        f"({' and '.join(_words(hits)[:1]) or 'a policy refusal'}) — the proxy's policy, not the request's size"
    )


def proxy_unreachable_detail(case: Case, hits: Sequence[Hit]) -> str:
    who = _hop_name(case, "the proxy")
    host = _host_of(case)
    said = " and ".join(_words(hits)[:1]) or "an upstream failure"
    return f"{case.status} from {who}: it could not reach {host or 'the provider'} ({said}) — the proxy failed, not the provider"


def proxy_timeout_detail(case: Case, hits: Sequence[Hit]) -> str:
    who = _hop_name(case, "the proxy")
    return f"{case.status} from {who}: it timed out waiting for the provider; retried"


def tunnel_refused_detail(case: Case, hits: Sequence[Hit]) -> str:
    proxy = case.target.proxy if case.target else None
    who = proxy.named() if proxy is not None else "the proxy"
    host = _host_of(case) or "the provider"
    code = next((hit.value for hit in hits if isinstance(hit.value, int)), None)
    meaning = "its policy does not allow a tunnel there" if code == 403 else "it could not reach the provider"
    return f"{who} refused to open a tunnel to {host} ({code or 'an error'}): {meaning}"


def refused_detail(case: Case, hits: Sequence[Hit]) -> str:
    target = case.target
    proxy = target.proxy if target else None
    if proxy is not None:
        return f"nothing listens at {proxy.address}, {proxy.named()}"
    host = _host_of(case)
    setting = f" ({target.setting})" if target and target.setting else ""
    if host:
        return f"nothing listens at {host}{setting}"
    return "the connection was refused: nothing listens at the route's address"


def gateway_html_400_detail(case: Case, hits: Sequence[Hit]) -> str:
    title = _title_of(case)
    why = " and ".join(line for hit in hits for line in hit.lines if line.startswith("request "))
    return (
        f"400{title} from a gateway, not the provider's JSON, on a request with {why or 'a large body'}: a WAF "
        "such as ModSecurity refuses bodies with too many values (SecArgumentsLimit, 1,000 by default) or too "
        "large — one attempt with fewer messages"
    )


def slow_upload_detail(case: Case, hits: Sequence[Hit]) -> str:
    title = _title_of(case)
    size = f" {format_size(case.request_bytes)}" if case.request_bytes else ""
    return (
        f"408{title} from a gateway: it stopped waiting for the{size} request body (an upload too slow for its "
        "read timeout, e.g. Apache RequestReadTimeout) — a smaller request helps, raising request_timeout does "
        "not; one attempt with fewer messages"
    )


def _many_values(case: Case) -> Hit | None:
    count = case.request_values
    if count is None or count < MANY_JSON_VALUES:
        return None
    return make_hit(
        f"request {count:,} JSON values ≥ {MANY_JSON_VALUES:,} (ModSecurity's default SecArgumentsLimit)"
    )


def _large_body(case: Case) -> Hit | None:
    size = case.request_bytes
    if size is None or size < LARGE_BODY_BYTES:
        return None
    return make_hit(f"request {format_size(size)} ≥ {format_size(LARGE_BODY_BYTES)}")


# A WAF counts a JSON body's values as arguments; ModSecurity's SecArgumentsLimit defaults to 1,000.
MANY_JSON_VALUES = 1_000
# ModSecurity buffers at most SecRequestBodyNoFilesLimit (128 KiB) of a non-file body by default.
LARGE_BODY_BYTES = 128 * 1024
MANY_VALUES = Check("many JSON values", _many_values)
LARGE_BODY = Check("a large body", _large_body)
