"""The classifier's rules, as data: `Rule(id, kind, priority, signals, unless)`.

Every rule is evaluated against the normalised `Case`; a rule matches when each of its
`signals` matches and none of its `unless` signals does. The matching rule with the highest
priority wins (built-in priorities are unique; `tests/unit/test_failure_rules.py` pins every
pair of rules that can match the same error). Each signal writes its own evidence line, so a
verdict always says what decided it, and the winning rule's id is part of the evidence.

Signals read status, headers, phrases, error codes, body shape, transport flags, exception
classes (also down the cause chain) and the request size. What cannot be said as a pattern
is a named predicate (`Check`): the size judgement of a reset (`app/engine/resets.py`), the
pairing of a length word with an excess word, a tokens-per-minute request over its limit.
User rules from `[[classifier.rules]]` are built with the same signals (`user_rule`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engine.failure_input import Case, clip, header_matches
from app.engine.failure_phrases import (
    APIGW_FORBIDDEN,
    AUTH_CLASSES,
    AUTH_CODES,
    AUTH_RE,
    BEDROCK_TOO_LONG,
    BEDROCK_VALIDATION_CODE,
    BYTE_LIMIT,
    CONNECT_FAILURE_CLASSES,
    CONNECT_RE,
    CONNECTION_DROP_CLASSES,
    CONTEXT_OVERFLOW_CODES,
    CONTEXT_OVERFLOW_RE,
    DROP_RE,
    EXCESS_WORDS,
    GENERIC_OVERFLOW_STATUSES,
    HEADERS_TOO_LARGE_RE,
    INPUT_PLUS_OUTPUT,
    LENGTH_WORDS,
    MODEL_NOT_READY_RE,
    MUST_BE_REDUCED,
    NON_STREAM_200,
    OUTPUT_ONLY_WORDS,
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
    TOKEN_COUNTS,
    TPM_LIMIT,
    UPSTREAM_TROUBLE_RE,
    WAF_HEADERS_ALWAYS,
    WAF_HEADERS_WITHOUT_JSON,
    WAF_HTML_RE,
    WAF_RE,
    WAF_STRONG_RE,
)
from app.engine.resets import judge_reset
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
KINDS = (CONTEXT_OVERFLOW, PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP, HEADERS_TOO_LARGE, AUTH, RATE_LIMIT,
         OVERLOADED, SERVER_ERROR, TIMEOUT, OTHER)
PAYLOAD_KINDS = frozenset({PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP})
TRANSIENT_KINDS = frozenset({RATE_LIMIT, OVERLOADED, SERVER_ERROR, TIMEOUT})


# -- what a signal saw ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hit:
    """A matched signal: its evidence lines and how a reason names it ("an HTML block page")."""

    lines: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    value: Any = None  # what a predicate measured (e.g. the stated token limit)


Signal = Callable[[Case], "Hit | None"]


def _hit(line: str | Iterable[str] = (), words: str = "", value: Any = None) -> Hit:
    lines = (line,) if isinstance(line, str) else tuple(line)
    return Hit(tuple(item for item in lines if item), (words,) if words else (), value)


def _pattern(value: str | re.Pattern[str]) -> re.Pattern[str]:
    return value if isinstance(value, re.Pattern) else re.compile(value)


# -- signals -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Status:
    """The HTTP status is one of `codes` (None: no HTTP answer) or within `between` (inclusive)."""

    codes: tuple[int | None, ...] = ()
    between: tuple[int, int] | None = None
    quiet: bool = False  # match without an evidence line (a condition, not a signal)

    def __call__(self, case: Case) -> Hit | None:
        status = case.status
        inside = status in self.codes or (status is not None and self.between is not None
                                          and self.between[0] <= status <= self.between[1])
        if not inside:
            return None
        if self.quiet or status is None:
            return _hit()
        return _hit(case.status_evidence(), str(status))


def status(*codes: int | None, between: tuple[int, int] | None = None, quiet: bool = False) -> Status:
    return Status(tuple(codes), between, quiet)


@dataclass(frozen=True)
class Header:
    """A response header (a name, or a prefix ending in "-") whose value holds `contains`."""

    name: str
    contains: str = ""
    unless_json: bool = False  # ignored when the body is the API's own JSON error (rides on real answers)
    note: str = ""

    def __call__(self, case: Case) -> Hit | None:
        if self.unless_json and case.json_envelope:
            return None
        key = header_matches(case.headers, self.name.lower(), self.contains.lower())
        if key is None:
            return None
        value = case.headers[key]
        words = f"{key} header" if not self.contains else f"{key}: {clip(value, 20)}"
        return _hit(self.note or f"header {key}: {clip(value, 40)}", words)


@dataclass(frozen=True)
class Phrase:
    """A regular expression found in the message + body (lower case, entities decoded)."""

    pattern: re.Pattern[str]
    html_only: bool = False  # only when the body is an HTML page
    label: str = ""  # e.g. "TLS": `phrase "…" (TLS)`
    clip_at: int = 60

    def __call__(self, case: Case) -> Hit | None:
        if self.html_only and not case.html:
            return None
        found = self.pattern.search(case.text)
        if not found:
            return None
        said = clip(found.group(0), self.clip_at)
        suffix = f" ({self.label})" if self.label else ""
        return _hit(f'phrase "{said}"{suffix}', f'"{clip(found.group(0), 40)}"')


def phrase(pattern: str | re.Pattern[str], *, html_only: bool = False, label: str = "", clip_at: int = 60) -> Phrase:
    return Phrase(_pattern(pattern), html_only, label, clip_at)


@dataclass(frozen=True)
class Code:
    """An error code or type from the body, the SDK exception or `x-amzn-ErrorType`."""

    codes: frozenset[str]

    def __call__(self, case: Case) -> Hit | None:
        found = sorted(case.codes & self.codes)
        if not found:
            return None
        return _hit([f'error code "{code}"' for code in found], f"error code {found[0]}")


def code(*codes: str | Iterable[str]) -> Code:
    flat: set[str] = set()
    for item in codes:
        flat |= {item} if isinstance(item, str) else set(item)
    return Code(frozenset(c.lower() for c in flat))


@dataclass(frozen=True)
class HtmlBody:
    """The body is a web page where the API speaks JSON."""

    line: str = "HTML body where the API speaks JSON"

    def __call__(self, case: Case) -> Hit | None:
        return _hit(self.line, "an HTML block page") if case.html else None


@dataclass(frozen=True)
class NotHtml:
    def __call__(self, case: Case) -> Hit | None:
        return None if case.html else _hit()


@dataclass(frozen=True)
class Transport:
    """The adapter's transport flag: connection, timeout, html-200, non-sse-200, stream-error."""

    values: tuple[str, ...]
    line: str = ""

    def __call__(self, case: Case) -> Hit | None:
        if case.transport not in self.values:
            return None
        return _hit(self.line or f"transport: {case.transport}")


def transport(*values: str, line: str = "") -> Transport:
    return Transport(tuple(values), line)


@dataclass(frozen=True)
class ExceptionClass:
    """An exception class by name: the failing one (`first_only`: its own class) or down the cause chain."""

    names: frozenset[str]
    chain: bool = False
    first_only: bool = False

    def __call__(self, case: Case) -> Hit | None:
        own = case.class_names[:1] if self.first_only else case.class_names
        for name in own:
            if name.lower() in self.names:
                return _hit(f"exception {name}", name)
        if self.chain:
            for name in case.cause_names:
                if name.lower() in self.names:
                    return _hit(f"exception {name}", name)
        return None


@dataclass(frozen=True)
class CauseChain:
    """A regular expression in the messages of the exception's cause chain (issue 22: a 407 down it)."""

    pattern: re.Pattern[str]

    def __call__(self, case: Case) -> Hit | None:
        found = self.pattern.search(case.cause_text)
        return _hit(f'cause chain says "{clip(found.group(0), 60)}"', found.group(0)) if found else None


@dataclass(frozen=True)
class BytesAtLeast:
    """The request body was at least `size` bytes."""

    size: int

    def __call__(self, case: Case) -> Hit | None:
        if case.request_bytes is None or case.request_bytes < self.size:
            return None
        return _hit(f"request {format_size(case.request_bytes)} ≥ {format_size(self.size)}")


@dataclass(frozen=True)
class AnyOf:
    """At least one of `signals` matches; the evidence of every one that does is kept."""

    signals: tuple[Signal, ...]

    def __call__(self, case: Case) -> Hit | None:
        hits = [hit for hit in (signal(case) for signal in self.signals) if hit is not None]
        return _merge(hits) if hits else None


@dataclass(frozen=True)
class AllOf:
    """Every one of `signals` matches (to group inside an AnyOf)."""

    signals: tuple[Signal, ...]

    def __call__(self, case: Case) -> Hit | None:
        hits = []
        for signal in self.signals:
            hit = signal(case)
            if hit is None:
                return None
            hits.append(hit)
        return _merge(hits)


def _merge(hits: Sequence[Hit]) -> Hit:
    value = next((hit.value for hit in hits if hit.value is not None), None)
    return Hit(tuple(line for hit in hits for line in hit.lines), tuple(w for hit in hits for w in hit.words), value)


def any_of(*signals: Signal) -> AnyOf:
    return AnyOf(tuple(signals))


def all_of(*signals: Signal) -> AllOf:
    return AllOf(tuple(signals))


@dataclass(frozen=True)
class Check:
    """A named procedural predicate (what a pattern cannot say): `test(case) -> Hit | None`."""

    name: str
    test: Callable[[Case], Hit | None]

    def __call__(self, case: Case) -> Hit | None:
        return self.test(case)


# -- the named predicates ------------------------------------------------------------------------------
def _no_http_answer(case: Case) -> Hit | None:
    """No HTTP response, or a 200 whose stream then broke (the only 200s a dropped connection can have)."""
    if case.status is None or (case.status == 200 and case.transport in ("connection", "stream-error")):
        return _hit()
    return None


def _dropped(case: Case) -> Hit | None:
    """The connection went away: the transport flag, a drop exception (also down the chain), or drop wording."""
    lines: list[str] = []
    if case.transport == "connection":
        lines.append("transport: connection dropped (no HTTP response)" if case.status is None
                     else f"transport: connection cut after status {case.status}")
    name = next((n for n in case.class_names if n.lower() in CONNECTION_DROP_CLASSES), None)
    if name:
        lines.append(f"exception {name}")
    found = DROP_RE.search(case.text)
    if found:
        lines.append(f'phrase "{found.group(0)}"')
    if not lines and not any(n.lower() in CONNECTION_DROP_CLASSES for n in case.cause_names):
        return None
    return _hit(lines + list(case.cause_notes[:2]))


def _reset_is_size(case: Case) -> Hit | None:
    verdict = judge_reset(case.request_bytes, case.drop_threshold, case.size_evidence)
    return _hit(verdict.evidence, verdict.rule) if verdict.payload else None


def _reset_size_unproven(case: Case) -> Hit | None:
    verdict = judge_reset(case.request_bytes, case.drop_threshold, case.size_evidence)
    return None if verdict.payload else _hit(verdict.evidence)


def _overflow_pairing(case: Case) -> Hit | None:
    """A sentence pairing a token/length word with an excess word ("Requested input length 9000 exceeds …")."""
    for sentence in re.split(r"[.;!?\n]\s", case.text):
        length = LENGTH_WORDS.search(sentence)
        excess = EXCESS_WORDS.search(sentence)
        if not (length and excess) or abs(length.start() - excess.start()) > 80:
            continue
        if OUTPUT_ONLY_WORDS.search(sentence) and not re.search(r"\b(?:input|prompt|context)\b", sentence):
            continue  # "max_tokens > the model's maximum output": a setting, not a long conversation
        return _hit(f'words "{length.group(0)}" + "{excess.group(0)}"', f'"{clip(sentence.strip(), 80)}"')
    return None


def _tpm_request_over_limit(case: Case) -> Hit | None:
    """One request above the tokens-per-minute limit ("Limit 6000, Requested 9000"): waiting cannot help."""
    found = TPM_LIMIT.search(case.text)
    if not found:
        return None
    limit, used, requested = (int(g.replace(",", "")) if g else None for g in found.group(1, 2, 3))
    if requested is None or limit is None or requested <= limit:
        return None  # "Used 6000, Requested 5000": the minute's budget is spent, a wait helps
    return _hit(f"tokens per minute: requested {requested:,} > limit {limit:,}", "", value=limit)


def _byte_limit(case: Case) -> Hit | None:
    found = BYTE_LIMIT.search(case.text)
    if not found:
        return None
    size = int(found.group(1))
    return _hit(f"server limit {format_size(size)} ({size:,} bytes)")


def _request_size(case: Case) -> Hit | None:
    return _hit(f"request {format_size(case.request_bytes)}") if case.request_bytes is not None else None


def _retry_after(case: Case) -> Hit | None:
    return _hit(f"retry-after {format_seconds(case.retry_after)}") if case.retry_after is not None else None


def _cf_ray_on_json(case: Case) -> Hit | None:
    if case.json_envelope and header_matches(case.headers, "cf-ray", ""):
        return _hit("header cf-ray ignored: the body is the API's own JSON error")
    return None


def _stream_error_note(case: Case) -> Hit | None:
    return _hit("transport: error event inside the stream") if case.transport == "stream-error" else None


def _html_note(case: Case) -> Hit | None:
    return _hit("HTML error page from a gateway") if case.html else None


def _token_counts(case: Case) -> Hit | None:
    """Token figures the error states, parsed (`value` is the stated window, when there is one)."""
    text = case.text
    found = INPUT_PLUS_OUTPUT.search(text)
    if found:
        prompt, output, limit = (_number(found.group(i)) for i in (1, 2, 3))
        return _hit(f"tokens: {prompt:,} input + {output:,} max_tokens > {limit:,} limit", value=limit)
    for pattern, used_group, limit_group in TOKEN_COUNTS:
        found = pattern.search(text)
        if found:
            used, limit = _number(found.group(used_group)), _number(found.group(limit_group))
            over = f" ({(used - limit) / limit:+.0%})" if limit else ""
            return _hit(f"tokens: {used:,} > {limit:,} limit{over}", value=limit)
    return None


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if float(seconds).is_integer() else f"{seconds:.1f}s"


NO_HTTP_ANSWER = Check("no HTTP answer", _no_http_answer)
DROPPED = Check("connection dropped", _dropped)
RESET_IS_SIZE = Check("reset judged by size", _reset_is_size)
RESET_UNPROVEN = Check("reset not proven a size problem", _reset_size_unproven)
OVERFLOW_PAIRING = Check("length word + excess word", _overflow_pairing)
TPM_OVER_LIMIT = Check("one request over the tokens-per-minute limit", _tpm_request_over_limit)
BYTE_LIMIT_NOTE = Check("server byte limit", _byte_limit)
REQUEST_SIZE = Check("request size", _request_size)
RETRY_AFTER = Check("retry-after", _retry_after)
CF_RAY_ON_JSON = Check("cf-ray on the API's JSON", _cf_ray_on_json)
STREAM_ERROR = Check("error event in the stream", _stream_error_note)
HTML_NOTE = Check("gateway HTML page", _html_note)
TOKEN_COUNTS_NOTE = Check("token counts", _token_counts)

API_EVENT_CODES = code(RATE_LIMIT_CODES, OVERLOADED_CODES, SERVER_ERROR_CODES, AUTH_CODES, CONTEXT_OVERFLOW_CODES,
                       "invalid_request_error")
API_EVENT = any_of(API_EVENT_CODES, phrase(CONTEXT_OVERFLOW_RE))  # an API error that arrived, not a dropped line
BELOW_500 = status(None, between=(100, 499), quiet=True)
NO_STATUS_OR_200 = status(None, 200, quiet=True)


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
    tokens = _token_counts(case)
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
        detail = (f'{case.status or "error"} "{found.group(0)}"' if found
                  else f"{case.status or 'error'} error code {sorted(case.codes & PAYLOAD_CODES)[0]}")
    return detail + (" (HTML page)" if case.html else "")


def _headers_detail(case: Case, hits: Sequence[Hit]) -> str:
    title = _title_of(case).strip(" ()")
    if case.status == 431:
        said = "431 Request Header Fields Too Large"
    elif title:
        said = f"{case.status or 'error'} page {title}"
    else:
        said = f"{case.status or 'error'} {next((w for w in _words(hits) if w.startswith(chr(34))), 'header too large')}"
    sent = f" (bulkhead sent {format_size(case.request_header_bytes)} of headers)" if case.request_header_bytes else ""
    return (f"{said}{sent}: the request's headers, not its body, are over the gateway's limit — "
            "a long API key or token, cookies, or custom headers")


def _header_bytes(case: Case) -> Hit | None:
    size = case.request_header_bytes
    return _hit(f"request headers {format_size(size)} ({size:,} bytes)") if size else None


HEADER_BYTES = Check("request header size", _header_bytes)

def _drop_detail(case: Case, hits: Sequence[Hit]) -> str:
    size = format_size(case.request_bytes) if case.request_bytes is not None else "large"
    return (f"no response to a {size} request; a gateway body cap cuts uploads like this "
            "(`bulkhead probe` measures it)")


def _drop_unproven_detail(case: Case, hits: Sequence[Hit]) -> str:
    if case.request_bytes is None:
        said = "no response and the request size is unknown"
    else:
        said = f"no response to a {format_size(case.request_bytes)} request"
    return (f"{said}: treated as a transient network failure and retried (resets of bodies from "
            f"drop_payload_min_bytes, {format_size(case.drop_threshold)}, or repeated ones count as a "
            "gateway cap; `bulkhead probe` finds it)")


def _server_detail(case: Case, hits: Sequence[Hit]) -> str:
    return f"{case.status} from the {'gateway' if case.html else 'server'}" + _title_of(case)


def _title_of(case: Case) -> str:
    """ (“502 Bad Gateway”): an HTML page's own title or first heading, quoted."""
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
    return (f"{case.status or 'error'}: one request larger than the tokens-per-minute limit; "
            "waiting will not help, a smaller request will")


def _html_200_detail(case: Case, hits: Sequence[Hit]) -> str:
    return "200 with an HTML page instead of the API's JSON (captive portal or block page)"


def _block_200_detail(case: Case, hits: Sequence[Hit]) -> str:
    said = next((w for w in _words(hits) if w.startswith('"')), "")
    return f"200 with a block message instead of the API's stream ({said})"


def _upstream_detail(case: Case, hits: Sequence[Hit]) -> str:
    return (f"{case.status} from a proxy whose upstream failed or reset; the provider is not "
            "(necessarily) overloaded — retried")


# Every built-in rule; priorities are unique (higher wins).
BUILT_IN_RULES: tuple[Rule, ...] = (
    Rule("timeout", TIMEOUT, 900, (any_of(
        transport("timeout", line="transport: timeout"),
        ExceptionClass(TIMEOUT_CLASSES, first_only=True),
        status(408, 504, 522, 524),
        all_of(NO_STATUS_OR_200, code(TIMEOUT_CODES)),
        all_of(status(None), phrase(TIMEOUT_RE))),),
        notes=(REQUEST_SIZE,), detail=_timeout_detail),
    Rule("waf.html-200", WAF_BLOCK, 890,
         (transport("html-200", line="transport: html-200 (the SDK got a page, not the API's JSON)"),),
         notes=(HtmlBody(), phrase(WAF_RE)), detail=_html_200_detail),
    Rule("waf.block-200", WAF_BLOCK, 885, (transport(NON_STREAM_200), phrase(WAF_RE)), detail=_block_200_detail),
    Rule("auth.proxy-407-in-chain", AUTH, 880, (NO_HTTP_ANSWER, CauseChain(PROXY_AUTH_IN_CHAIN)),
         detail="the proxy wants credentials (407 while opening the tunnel)"),
    Rule("net.tls-verify", OTHER, 875, (NO_HTTP_ANSWER, any_of(
        phrase(TLS_FAILURE, label="TLS"), ExceptionClass(TLS_FAILURE_CLASSES, chain=True))),
         unless=(API_EVENT,), transient=False, headline="Could not connect",
         detail="TLS verification failed (a proxy re-signing traffic? set SSL_CERT_FILE or REQUESTS_CA_BUNDLE "
                "to its CA)"),
    Rule("net.connect-failed", OTHER, 870, (NO_HTTP_ANSWER, any_of(
        phrase(CONNECT_RE, label="connect"), ExceptionClass(CONNECT_FAILURE_CLASSES, chain=True))),
         unless=(API_EVENT,), transient=True, headline="Could not connect",
         detail="the request never left (no connection); treated as a transient network failure and retried"),
    Rule("net.cut-after-200", OTHER, 865, (status(200, quiet=True), NO_HTTP_ANSWER, DROPPED),
         unless=(API_EVENT,), transient=True, headline="Connection dropped",
         notes=(Check("accepted", lambda c: _hit("the gateway had accepted the body (status 200 came first)")),),
         detail="the stream was cut after a 200, so the request size is not the cause"),
    Rule("net.reset-by-size", CONNECTION_DROP, 860, (status(None, quiet=True), DROPPED, RESET_IS_SIZE),
         unless=(API_EVENT,), detail=_drop_detail),
    Rule("net.reset-unproven", OTHER, 855, (status(None, quiet=True), DROPPED, RESET_UNPROVEN),
         unless=(API_EVENT,), transient=True, headline="Connection dropped", detail=_drop_unproven_detail),
    Rule("auth.status", AUTH, 800, (status(401, 407),), notes=(code(AUTH_CODES),), detail=_auth_status_detail),
    Rule("overflow.tpm", CONTEXT_OVERFLOW, 770, (any_of(
        all_of(status(429), phrase(MUST_BE_REDUCED)), TPM_OVER_LIMIT),),
         notes=(TOKEN_COUNTS_NOTE,), detail=_tpm_detail, states_window=True),
    Rule("quota.exhausted", OTHER, 760, (any_of(code(QUOTA_CODES), phrase(QUOTA_RE)),),
         unless=(phrase(QUOTA_RESETS_SOON_RE),), transient=False,
         detail="the account's quota or credit is used up; waiting will not help — check billing for this key"),
    Rule("overloaded.model-not-ready", OVERLOADED, 750, (any_of(
        code("modelnotreadyexception"), phrase(MODEL_NOT_READY_RE)),), notes=(RETRY_AFTER,),
         detail="the model is not ready yet (loading or scaling up); retried after a wait"),
    Rule("rate.429", RATE_LIMIT, 740, (status(429),),
         notes=(code(RATE_LIMIT_CODES), phrase(RATE_RE), RETRY_AFTER), detail="429 Too Many Requests"),
    Rule("waf.block-words", WAF_BLOCK, 695, (status(None, between=(400, 599), quiet=True), phrase(WAF_STRONG_RE)),
         notes=(HtmlBody(), REQUEST_SIZE), detail=_waf_detail),
    Rule("waf.action-header", WAF_BLOCK, 697, (any_of(Header("x-amzn-waf-action"), Header("cf-mitigated")),),
         notes=(HtmlBody(), REQUEST_SIZE),
         detail=lambda c, h: f"{c.status or 'an answer'} with {' and '.join(_words(h)) or 'a WAF action header'} "
                             "(a CAPTCHA or challenge the API client cannot solve)"),
    Rule("waf.403", WAF_BLOCK, 700, (status(403, 406), any_of(
        HtmlBody(),
        *(Header(name, value) for name, value in WAF_HEADERS_ALWAYS),
        *(Header(name, value, unless_json=True) for name, value in WAF_HEADERS_WITHOUT_JSON),
        Check("API Gateway ForbiddenException", lambda c: _hit(
            "x-amzn-ErrorType ForbiddenException (API Gateway; Bedrock itself says AccessDenied)",
            "an API Gateway ForbiddenException") if APIGW_FORBIDDEN in c.codes else None),
        phrase(WAF_RE),
        phrase(WAF_HTML_RE, html_only=True))),
         notes=(REQUEST_SIZE,), detail=_waf_detail),
    Rule("auth.403", AUTH, 690, (status(403),), notes=(CF_RAY_ON_JSON, code(AUTH_CODES)),
         detail="403 with no firewall signal: the API refused the key or the model"),
    Rule("overflow.phrase", CONTEXT_OVERFLOW, 650, (any_of(
        phrase(CONTEXT_OVERFLOW_RE), code(CONTEXT_OVERFLOW_CODES),
        Check("Bedrock ValidationException too long", lambda c: _hit(
            f'ValidationException with "{BEDROCK_TOO_LONG.search(c.text).group(0)}"')
            if BEDROCK_VALIDATION_CODE in c.codes and BEDROCK_TOO_LONG.search(c.text) else None)),),
         unless=(code(RATE_LIMIT_CODES),), notes=(TOKEN_COUNTS_NOTE,),
         detail=_overflow_detail, states_window=True),
    Rule("server.upstream-trouble", SERVER_ERROR, 610, (status(502, 503), phrase(UPSTREAM_TROUBLE_RE)),
         notes=(HTML_NOTE,), detail=_upstream_detail),
    Rule("overloaded.status", OVERLOADED, 600, (any_of(
        status(503, 529), all_of(status(between=(500, 599)), code(OVERLOADED_CODES))),),
         notes=(HTML_NOTE, phrase(OVERLOADED_RE)), detail=_overloaded_status_detail),
    Rule("server.5xx", SERVER_ERROR, 590, (status(between=(500, 599)),),
         notes=(HTML_NOTE, code(SERVER_ERROR_CODES)), detail=_server_detail),
    Rule("headers.phrase", HEADERS_TOO_LARGE, 575, (status(None, between=(400, 499), quiet=True),
                                                    phrase(HEADERS_TOO_LARGE_RE)),
         notes=(HtmlBody("HTML page from a gateway"), HEADER_BYTES), detail=_headers_detail),
    Rule("headers.431", HEADERS_TOO_LARGE, 570, (status(431),),
         notes=(HtmlBody("HTML page from a gateway"), HEADER_BYTES), detail=_headers_detail),
    Rule("payload.size", PAYLOAD_TOO_LARGE, 550, (any_of(
        status(413),
        Header("x-amzn-errortype", "requestentitytoolargeexception",
               note="header x-amzn-ErrorType: RequestEntityTooLargeException"),
        all_of(BELOW_500, any_of(phrase(PAYLOAD_RE), code(PAYLOAD_CODES)))),),
         notes=(HtmlBody(), BYTE_LIMIT_NOTE, REQUEST_SIZE), detail=_payload_detail),
    Rule("overloaded.code", OVERLOADED, 520, (BELOW_500, any_of(
        code(OVERLOADED_CODES), all_of(NO_STATUS_OR_200, phrase(OVERLOADED_RE)))),
         notes=(STREAM_ERROR,), detail="the provider is overloaded"),
    Rule("rate.code", RATE_LIMIT, 510, (BELOW_500, any_of(
        code(RATE_LIMIT_CODES), all_of(NO_STATUS_OR_200, phrase(RATE_RE)))),
         notes=(STREAM_ERROR, RETRY_AFTER), detail="rate limited or throttled"),
    Rule("server.code", SERVER_ERROR, 500, (BELOW_500, code(SERVER_ERROR_CODES)), notes=(STREAM_ERROR,),
         detail="the provider failed internally"),
    Rule("auth.phrase", AUTH, 495, (status(None, 400, 401, 403, quiet=True), phrase(AUTH_RE)),
         detail="the provider refused the key (its own words)"),
    Rule("auth.code", AUTH, 490, (BELOW_500, any_of(code(AUTH_CODES), ExceptionClass(AUTH_CLASSES))),
         notes=(STREAM_ERROR,), detail="the credentials or permissions were refused"),
    Rule("overflow.pairing", CONTEXT_OVERFLOW, 400, (status(None, *GENERIC_OVERFLOW_STATUSES, quiet=True), NotHtml(),
                                                     OVERFLOW_PAIRING),
         notes=(TOKEN_COUNTS_NOTE,), detail=_pairing_detail, states_window=True),
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
