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

import html
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from app.providers.base import ProviderError, parse_retry_after
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

DEFAULT_DROP_THRESHOLD = 500_000  # bytes; Settings.drop_payload_min_bytes
LEARNED_CAP_RATIO = 0.75  # DESIGN.md §4: a payload rejection of N bytes teaches a cap of ¾ × N
FALLBACK_CAP_BYTES = 4 * 1024 * 1024  # assumed cap when the rejected size is unknown
MAX_SCAN_CHARS = 200_000  # the head and tail of a huge body are enough to recognise it
MAX_CAUSE_DEPTH = 8

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


# -- phrase tables (matched against lower-case text, HTML entities decoded, whitespace collapsed) --
def _any_of(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


CONTEXT_OVERFLOW_PHRASES = (
    r"prompt is too long",  # Anthropic
    r"input length and `?max_tokens`? exceeds? (?:the )?context limit",  # Anthropic, Bedrock Claude
    r"context[_ ]length[_ ]exceeded",  # OpenAI code, seed table
    r"maximum context length",  # OpenAI, vLLM, Groq, Mistral
    r"exceeds? the context window",  # OpenAI (Responses)
    r"context window exceeds? (?:the )?limit",  # MiniMax
    r"context window (?:is )?full",
    r"input token count.{0,80}exceeds",  # Gemini
    r"maximum prompt length",  # xAI
    r"input is too long",  # Bedrock ValidationException
    r"input too long",  # seed table (Google)
    r"exceeds the available context size",  # llama.cpp
    r"exceed_context_size_error",  # llama.cpp type
    r"input (?:length )?exceeds (?:the )?(?:model's )?(?:maximum )?context length",  # Ollama
    r"exceeded max context length",  # Ollama (older)
    r"is too long to fit into the model",  # vLLM
    r"longer than the maximum model length",  # vLLM
    r"current length is \d+ while limit is \d+",  # Cerebras
    r"prompt has too many tokens",  # AI21
    r"too many (?:input|prompt) tokens",
    r"too large for model with \d+ maximum context length",  # Mistral
    r"(?:exceeds?|over) (?:the )?token limit|token limit (?:exceeded|reached)",  # seed: "token limit"
    r"model_context_window_exceeded",
)
CONTEXT_OVERFLOW_CODES = frozenset({
    "context_length_exceeded", "exceed_context_size_error", "model_context_window_exceeded",
    "context_window_exceeded", "prompt_too_long", "input_too_long", "string_above_max_length",
})
# Bedrock puts too-long input in a ValidationException; only its length wording counts.
BEDROCK_VALIDATION_CODE = "validationexception"
BEDROCK_TOO_LONG = re.compile(r"too long|exceeds? (?:the )?(?:context|max)")
# Status-aware fallback: a 400/413 whose body pairs a token/length word with an excess word.
LENGTH_WORDS = re.compile(r"\b(?:tokens?|context(?: window| length| size| limit)?|prompt|"
                          r"input (?:length|size|tokens?)|(?:message|conversation) length)\b")
EXCESS_WORDS = re.compile(r"\b(?:exceeds?|exceeded|exceeding|too long|too many|too large|over the limit|"
                          r"greater than|more than the|maximum|limit)\b")
OUTPUT_ONLY_WORDS = re.compile(r"output tokens|max_tokens|max_completion_tokens|max_output_tokens")
GENERIC_OVERFLOW_STATUSES = frozenset({400, 413, 422})

PAYLOAD_PHRASES = (
    r"payload too large",
    r"request entity too large",
    r"entity too large",
    r"body too large",
    r"maximum request size",
    r"content too large",
    r"request[_ ]too[_ ]large",
    r"request payload size exceeds",  # Gemini front end (status 400)
    r"request exceeds the maximum size",
    r"requestentitytoolarge",
    r"request too long",  # API Gateway
    r"header fields too large",  # 431
    r"max(?:imum)? (?:body|payload|request body) size",
    r"client intended to send too large body",  # nginx log line
)
PAYLOAD_CODES = frozenset({
    "request_too_large", "requestentitytoolargeexception", "payload_too_large", "entity_too_large",
    "content_too_large", "request_entity_too_large",
})
PAYLOAD_STATUSES = {413: "413 Payload Too Large", 431: "431 Request Header Fields Too Large"}
# "413" as a status in free text, never inside other digits ("req_4130", "24135 tokens").
BARE_PAYLOAD_STATUS = re.compile(r"(?<![\w.])(413|431)(?=\s+(?:payload|request|content|entity|header))")

WAF_PHRASES = (
    r"\bfirewall\b", r"\bwaf\b", r"security polic(?:y|ies)", r"blocked by", r"\bcloudflare\b",
    r"mod_?security|mod security", r"\bakamai\b", r"reference #\s*[\w.]+", r"proxy denied",
    r"policy violation", r"request blocked", r"\bzscaler\b", r"the request could not be satisfied",
    r"you have been blocked", r"attention required", r"incapsula|imperva",
    r"the requested url was rejected", r"your support id is", r"generated by cloudfront",
    r"forcepoint|bluecoat|blue coat|fortiguard|netskope|sucuri|barracuda",
)
WAF_PHRASES_IN_HTML = (r"access denied", r"forbidden", r"not acceptable")
# Headers a provider never sends itself: a middlebox answered.
WAF_HEADERS_ALWAYS = (("cf-mitigated", ""), ("x-amzn-waf-action", ""), ("x-zscaler-", ""),
                      ("x-iinfo", ""), ("x-sucuri-id", ""), ("x-cdn", "incapsula"))
# Headers that also ride on real API answers (Anthropic sits behind Cloudflare): they count only
# when the body is not the API's own JSON error.
WAF_HEADERS_WITHOUT_JSON = (("cf-ray", ""), ("server", "cloudflare"), ("server", "akamai"),
                            ("server", "awselb"), ("x-amz-cf-id", ""), ("via", "cloudfront"))
APIGW_FORBIDDEN = "forbiddenexception"  # API Gateway's refusal; Bedrock itself says AccessDenied
WAF_STATUSES = frozenset({403, 406})
NON_STREAM_200 = "non-sse-200"  # the adapter's flag for a 200 that is neither the stream nor HTML

CONNECTION_DROP_PHRASES = (
    r"connection error\.?", r"connection was closed before we received a valid response",
    r"broken pipe", r"unexpected eof", r"connection reset", r"\bstream (?:was )?reset\b",
    r"\bstream error\b", r"rst_stream", r"peer closed connection", r"server disconnected",
    r"remote end closed connection", r"connection aborted", r"errno 104", r"econnreset", r"epipe",
    r"incomplete (?:chunked )?read", r"connection closed",
)
CONNECTION_DROP_CLASSES = frozenset({
    "apiconnectionerror", "connectionclosederror", "remoteprotocolerror", "readerror", "writeerror",
    "connectionreseterror", "brokenpipeerror", "protocolerror", "remotedisconnected", "incompleteread",
    "connectionabortederror", "responsestreamingerror", "chunkedencodingerror",
})
CONNECT_FAILURE_PHRASES = (
    r"connection refused", r"could not connect to the endpoint", r"name or service not known",
    r"nodename nor servname", r"temporary failure in name resolution", r"getaddrinfo failed",
    r"no route to host", r"network is unreachable", r"failed to connect to proxy",
)
CONNECT_FAILURE_CLASSES = frozenset({
    "connecterror", "connectionrefusederror", "endpointconnectionerror", "gaierror",
    "proxyconnectionerror", "newconnectionerror",
})
TLS_FAILURE = re.compile(r"certificate verify failed|sslcertverificationerror|ssl validation failed")
TLS_FAILURE_CLASSES = frozenset({"sslcertverificationerror", "sslerror"})

TIMEOUT_CLASSES = frozenset({
    "apitimeouterror", "readtimeout", "writetimeout", "connecttimeout", "pooltimeout", "timeoutexception",
    "readtimeouterror", "connecttimeouterror", "timeouterror", "timeout",
})
TIMEOUT_PHRASES = (r"timed out", r"read timeout", r"write timeout", r"connect timeout",
                   r"timeout on endpoint", r"deadline exceeded")
TIMEOUT_STATUSES = {408: "408 Request Timeout", 504: "504 Gateway Timeout", 522: "522 connection timed out",
                    524: "524 origin timeout"}
TIMEOUT_CODES = frozenset({"deadline_exceeded", "modeltimeoutexception", "requesttimeout", "timeout_error"})

RATE_LIMIT_PHRASES = (r"rate limit", r"tokens per min", r"requests per min", r"too many requests",
                      r"throttl", r"service tier capacity exceeded", r"resource has been exhausted",
                      r"slow down")
RATE_LIMIT_CODES = frozenset({
    "rate_limit_error", "rate_limit_exceeded", "throttlingexception", "too_many_requests",
    "resource_exhausted", "toomanyrequestsexception", "insufficient_quota",
})
MUST_BE_REDUCED = re.compile(r"must be reduced")  # OpenAI: one request over the TPM limit
OVERLOADED_STATUSES = {503: "503 Service Unavailable", 529: "529 Overloaded"}
OVERLOADED_CODES = frozenset({
    "overloaded_error", "serviceunavailableexception", "service_unavailable", "unavailable",
    "modelnotreadyexception",
})
OVERLOADED_PHRASES = (r"\boverloaded\b", r"service unavailable", r"unable to process your request")
SERVER_ERROR_CODES = frozenset({
    "api_error", "server_error", "internalserverexception", "internal_server_error", "internal",
    "internal_error", "internalfailure", "modelstreamerrorexception",
})
AUTH_STATUSES = {401: "401 Unauthorized", 407: "407 Proxy Authentication Required"}
AUTH_CODES = frozenset({
    "authentication_error", "permission_error", "invalid_api_key", "unrecognizedclientexception",
    "accessdeniedexception", "expiredtokenexception", "invalidsignatureexception", "permission_denied",
    "unauthenticated", "incorrect_api_key", "nocredentialserror", "security_token_invalid",
    "expiredtoken", "invalidclienttokenid",
})
AUTH_CLASSES = frozenset({"authenticationerror", "permissiondeniederror", "nocredentialserror",
                          "partialcredentialserror"})

# -- shapes ---------------------------------------------------------------------------------------
HTML_TAG = re.compile(r"<\s*(?:!doctype\s+html|html|head|body|title|h1|center)\b", re.IGNORECASE)
JSON_ERROR_IN_MESSAGE = re.compile(r"error code: \d{3} - [{\[]")
CODE_FIELD = re.compile(r"""["']?(?:type|code|__type|status|error_type|errortype)["']?\s*[:=]\s*"""
                        r"""["']([a-z][a-z0-9_.:#/-]{2,80})["']""")
BOTOCORE_CODE = re.compile(r"an error occurred \(([a-z][\w.]{2,80})\)")
STATUS_IN_MESSAGE = (
    re.compile(r"(?<![\w.])(?:error code|status code|statuscode|status|http(?:/[\d.]+)?)\s*[:=]?\s*\(?"
               r"([1-5]\d\d)(?![\w.])"),
    re.compile(r"an error occurred \(([1-5]\d\d)\)"),
    re.compile(r"^\s*([1-5]\d\d)(?=\s+[a-z])"),
    BARE_PAYLOAD_STATUS,
)
RETRY_IN_TEXT = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b")

# Token counts, parsed into evidence: (pattern, index of used, index of limit, 1-based groups).
TOKEN_COUNTS = (
    (re.compile(r"(\d[\d,]*) tokens > (\d[\d,]*) maximum"), 1, 2),
    (re.compile(r"maximum context length is (\d[\d,]*) tokens\W+however,? (?:you requested|your messages "
                r"resulted in|your request has) (\d[\d,]*)"), 2, 1),
    (re.compile(r"input token count \(?(\d[\d,]*)\)? exceeds the maximum number of tokens allowed "
                r"\(?(\d[\d,]*)\)?"), 1, 2),
    (re.compile(r"current length is (\d[\d,]*) while limit is (\d[\d,]*)"), 1, 2),
    (re.compile(r"maximum prompt length is (\d[\d,]*) but the request contains (\d[\d,]*)"), 2, 1),
    (re.compile(r"prompt contains (\d[\d,]*) tokens.{0,60}?with (\d[\d,]*) maximum context length"), 1, 2),
    (re.compile(r"total length (\d[\d,]*)\) is too long to fit into the model \(context length (\d[\d,]*)"),
     1, 2),
    (re.compile(r"prompt=(\d+) limit=(\d+)"), 1, 2),
    (re.compile(r"\((\d[\d,]*) tokens\) exceeds the available context size \((\d[\d,]*) tokens\)"), 1, 2),
)
INPUT_PLUS_OUTPUT = re.compile(r"(\d[\d,]*) \+ (\d[\d,]*) > (\d[\d,]*)")
BYTE_LIMIT = re.compile(r"(?:max(?:imum)? size|exceeds the limit|limit(?: of)?)\s*:?\s*(\d{4,})\s*bytes")

# Recognised middleboxes: (name, header signs, text fingerprint). A header sign is
# (name or prefix ending in "-", substring of the value or ""); the first match wins.
GATEWAY_FINGERPRINTS: tuple[tuple[str, tuple[tuple[str, str], ...], str | None], ...] = (
    ("modsecurity", (), r"mod_?security|mod security"),
    ("aws-waf", (("x-amzn-waf-action", ""),), r"\baws waf\b"),
    ("zscaler", (("server", "zscaler"), ("x-zscaler-", "")), r"\bzscaler\b"),
    ("imperva", (("x-iinfo", ""), ("x-cdn", "incapsula")), r"incapsula|imperva"),
    ("f5", (("server", "bigip"), ("server", "big-ip")), r"the requested url was rejected"),
    ("sucuri", (("x-sucuri-id", ""),), r"\bsucuri\b"),
    ("cloudflare", (("cf-ray", ""), ("cf-mitigated", ""), ("server", "cloudflare")), r"\bcloudflare\b"),
    ("akamai", (("server", "akamai"), ("akamai-grn", "")), r"\bakamai\b|edgesuite|reference #"),
    ("cloudfront", (("x-amz-cf-id", ""), ("via", "cloudfront"), ("x-cache", "cloudfront"),
                    ("server", "cloudfront")), r"cloudfront"),
    ("awselb", (("server", "awselb"),), None),
    ("apigw", (("x-amz-apigw-id", ""), ("x-amzn-errortype", APIGW_FORBIDDEN)), None),
    ("envoy", (("server", "envoy"), ("x-envoy-", "")), r"upstream connect error|\benvoy\b"),
    ("nginx", (("server", "nginx"),), r"\bnginx\b"),
)
# Headers that identify a middlebox even on a JSON answer.
GATEWAY_HEADERS_ON_JSON = frozenset({"x-amzn-waf-action", "x-zscaler-", "x-iinfo", "x-sucuri-id",
                                     "cf-mitigated", "x-amz-apigw-id", "x-amzn-errortype"})

# Exceptions from these modules are provider-call errors; anything else is not recovered.
SDK_MODULES = ("anthropic", "openai", "botocore", "boto3", "httpx", "httpcore", "urllib3", "requests",
               "http.client", "ssl", "socket", "builtins", "app.providers", "aiohttp", "h11", "h2")

_CONTEXT_OVERFLOW_RE = _any_of(CONTEXT_OVERFLOW_PHRASES)
_PAYLOAD_RE = _any_of(PAYLOAD_PHRASES)
_WAF_RE = _any_of(WAF_PHRASES)
_WAF_HTML_RE = _any_of(WAF_PHRASES_IN_HTML)
_DROP_RE = _any_of(CONNECTION_DROP_PHRASES)
_CONNECT_RE = _any_of(CONNECT_FAILURE_PHRASES)
_TIMEOUT_RE = _any_of(TIMEOUT_PHRASES)
_RATE_RE = _any_of(RATE_LIMIT_PHRASES)
_OVERLOADED_RE = _any_of(OVERLOADED_PHRASES)
_GATEWAY_TEXT = tuple((name, signs, re.compile(text) if text else None)
                      for name, signs, text in GATEWAY_FINGERPRINTS)


# -- the normalised case the rules read -------------------------------------------------------------
@dataclass
class _Case:
    status: int | None
    status_note: str  # "" or " (from the message)"
    message: str
    body: str
    headers: dict[str, str]
    request_bytes: int | None
    transport: str
    error_type: str
    drop_threshold: int
    class_names: tuple[str, ...] = ()  # the failing exception's classes (its MRO)
    cause_names: tuple[str, ...] = ()  # classes further down its __cause__/__context__ chain
    cause_notes: tuple[str, ...] = ()
    retry_after: float | None = None
    text: str = ""  # message + body: lower case, entities decoded, whitespace collapsed
    codes: frozenset[str] = frozenset()
    html: bool = False
    json_envelope: bool = False
    gateway: str | None = None

    def status_evidence(self) -> str:
        return f"status {self.status}{self.status_note}"

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


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
        case = _make_case(status=status, message=message, body=body, headers=headers,
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
        parts = _parts_from_exception(error)
        if parts is None:
            name = _qualified_name(error)
            return _finish(_make_case(drop_threshold=drop_threshold), _Verdict(
                OTHER, f"{name} did not come from a provider call, so it is never recovered",
                [f"exception {name} (not a provider error)"]))
        case = _make_case(drop_threshold=drop_threshold, **parts)
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
    return "fail: nothing to recover; the error is shown as it came"


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


# -- normalising input ------------------------------------------------------------------------------
def _make_case(*, status: Any = None, message: Any = "", body: Any = None, headers: Any = None,
               request_bytes: Any = None, transport: Any = None, error_type: Any = None,
               drop_threshold: Any = DEFAULT_DROP_THRESHOLD, class_names: Iterable[str] = (),
               cause_names: Iterable[str] = (), cause_notes: Iterable[str] = (),
               extra_codes: Iterable[str] = (), retry_after: Any = None) -> _Case:
    message_text = _as_text(message)
    body_text = _as_text(body)
    header_map = _as_headers(headers)
    threshold = _as_size(drop_threshold)
    case = _Case(
        status=_as_status(status), status_note="", message=message_text, body=body_text,
        headers=header_map, request_bytes=_as_size(request_bytes),
        transport=_as_text(transport).strip().lower(), error_type=_as_text(error_type).strip(),
        drop_threshold=DEFAULT_DROP_THRESHOLD if threshold is None else threshold,
        class_names=tuple(class_names) or _class_hint(error_type), cause_names=tuple(cause_names),
        cause_notes=tuple(cause_notes),
    )
    lowered_message = _scan_window(message_text).lower()
    if case.status is None:
        for pattern in STATUS_IN_MESSAGE:
            found = pattern.search(lowered_message)
            if found:
                case.status, case.status_note = int(found.group(1)), " (from the message)"
                break
    raw = _scan_window(message_text) + "\n" + _scan_window(body_text)
    case.html = bool(HTML_TAG.search(raw)) or "text/html" in header_map.get("content-type", "")
    case.text = re.sub(r"\s+", " ", html.unescape(raw).lower())
    case.json_envelope = _looks_like_json_error(body_text, lowered_message)
    case.codes = _error_codes(case, raw.lower(), extra_codes)
    case.gateway = _detect_gateway(case)
    case.retry_after = _as_seconds(retry_after)
    if case.retry_after is None:
        case.retry_after = _retry_after(case)
    return case


def _class_hint(error_type: Any) -> tuple[str, ...]:
    """An adapter may name the SDK class in `error_type` ("APITimeoutError"): read it as one."""
    name = _as_text(error_type).strip()
    known = TIMEOUT_CLASSES | CONNECTION_DROP_CLASSES | CONNECT_FAILURE_CLASSES | AUTH_CLASSES
    return (name,) if name.lower() in known else ()


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            pass
    try:
        return str(value)
    except Exception:  # a hostile __str__
        return f"<unprintable {type(value).__name__}>"


def _as_status(value: Any) -> int | None:
    number = _as_int(value)
    return number if number is not None and 100 <= number <= 999 else None


def _as_size(value: Any) -> int | None:
    number = _as_int(value)
    return number if number is not None and 0 <= number < 2 ** 62 else None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else None
    if isinstance(value, str | bytes):
        text = value.decode("latin-1") if isinstance(value, bytes) else value
        text = text.strip()
        return int(text) if text.isascii() and text.isdigit() and len(text) < 20 else None
    return None


def _as_seconds(value: Any) -> float | None:
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _as_headers(value: Any) -> dict[str, str]:
    """Lower-case header names to string values, from a mapping, pairs, or junk (→ {})."""
    if value is None or isinstance(value, str | bytes):
        return {}
    items: Iterable[Any]
    try:
        if isinstance(value, Mapping) or callable(getattr(value, "items", None)):
            items = list(value.items())
        else:
            items = list(value)
    except Exception:
        return {}
    result: dict[str, str] = {}
    for item in items[:500]:
        try:
            key, val = item
        except (TypeError, ValueError):
            continue
        name = _as_text(key).strip().lower()
        if name:
            result[name] = _as_text(val).strip()
    return result


def _scan_window(text: str) -> str:
    if len(text) <= MAX_SCAN_CHARS:
        return text
    head = MAX_SCAN_CHARS * 3 // 4
    return text[:head] + "\n…\n" + text[-(MAX_SCAN_CHARS - head):]


def _looks_like_json_error(body: str, lowered_message: str) -> bool:
    """True when the answer is an API's own JSON error, not a middlebox page."""
    stripped = body.strip()
    if stripped[:1] in ("{", "["):
        try:
            return isinstance(json.loads(stripped[:MAX_SCAN_CHARS]), dict | list)
        except (ValueError, RecursionError):
            return False
    return not stripped and bool(JSON_ERROR_IN_MESSAGE.search(lowered_message))


def _error_codes(case: _Case, lowered_raw: str, extra: Iterable[str]) -> frozenset[str]:
    codes = {m.group(1) for m in CODE_FIELD.finditer(lowered_raw)}
    codes |= {m.group(1) for m in BOTOCORE_CODE.finditer(lowered_raw)}
    amzn = case.header("x-amzn-errortype")
    if amzn:
        codes.add(amzn.split(":", 1)[0].strip().lower())
    if case.error_type:
        codes.add(case.error_type.lower())
    codes |= {_as_text(code).strip().lower() for code in extra if code}
    codes.discard("")
    return frozenset(codes)


def _detect_gateway(case: _Case) -> str | None:
    """The middlebox that answered, from headers and page fingerprints (not from an API's JSON)."""
    for name, signs, text_pattern in _GATEWAY_TEXT:
        for header_name, value_part in signs:
            if case.json_envelope and header_name not in GATEWAY_HEADERS_ON_JSON:
                continue
            if _header_matches(case.headers, header_name, value_part):
                return name
        if text_pattern is not None and not case.json_envelope and text_pattern.search(case.text):
            return name
    return None


def _header_matches(headers: Mapping[str, str], name: str, value_part: str) -> str | None:
    """The matching header name, for a name (or a prefix ending in '-') and value substring."""
    for key, value in headers.items():
        if (key.startswith(name) if name.endswith("-") else key == name) and value_part in value.lower():
            return key
    return None


def _retry_after(case: _Case) -> float | None:
    try:
        seconds = parse_retry_after(case.headers)
    except Exception:
        seconds = None
    if seconds is not None:
        return seconds
    found = RETRY_IN_TEXT.search(case.text)
    if found:
        value = float(found.group(1))
        return value / 1000 if found.group(2) == "ms" else value
    return None


# -- the rules (first match wins) -------------------------------------------------------------------
def _timeout_rule(case: _Case) -> _Verdict | None:
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
            phrase = _TIMEOUT_RE.search(case.text)
            if phrase:
                evidence.append(f'phrase "{phrase.group(0)}"')
    if not evidence:
        return None
    if case.request_bytes is not None:
        evidence.append(f"request {format_size(case.request_bytes)}")
    return _Verdict(TIMEOUT, f"{detail}; a timeout says nothing about size, so it is retried", evidence)


def _html_200_rule(case: _Case) -> _Verdict | None:
    """A 200 the adapter flagged: an HTML page (html-200), or another non-stream body with block wording."""
    if case.transport == NON_STREAM_200:
        phrase = _WAF_RE.search(case.text)
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
    phrase = _WAF_RE.search(case.text)
    if phrase:
        evidence.append(f'phrase "{phrase.group(0)}"')
    return _Verdict(WAF_BLOCK, "200 with an HTML page instead of the API's JSON (captive portal or block page)",
                    evidence)


def _connection_rule(case: _Case) -> _Verdict | None:
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
    connect = _CONNECT_RE.search(case.text) or _first_in(case.class_names + case.cause_names,
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
    phrase = _DROP_RE.search(case.text)
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


def _auth_status_rule(case: _Case) -> _Verdict | None:
    if case.status not in AUTH_STATUSES:
        return None
    evidence = [case.status_evidence()] + _code_evidence(case, AUTH_CODES)
    return _Verdict(AUTH, AUTH_STATUSES[case.status], evidence)


def _forbidden_rule(case: _Case) -> _Verdict | None:
    if case.status not in WAF_STATUSES:
        return None
    evidence = [case.status_evidence()]
    signals: list[str] = []
    if case.html:
        evidence.append("HTML body where the API speaks JSON")
        signals.append("an HTML block page")
    for name, value_part in WAF_HEADERS_ALWAYS + (() if case.json_envelope else WAF_HEADERS_WITHOUT_JSON):
        key = _header_matches(case.headers, name, value_part)
        if key:
            evidence.append(f"header {key}: {_clip(case.headers[key], 40)}")
            signals.append(f"{key} header" if not value_part else f"{key}: {_clip(case.headers[key], 20)}")
    if APIGW_FORBIDDEN in case.codes:
        evidence.append("x-amzn-ErrorType ForbiddenException (API Gateway; Bedrock itself says AccessDenied)")
        signals.append("an API Gateway ForbiddenException")
    phrase = _WAF_RE.search(case.text) or (_WAF_HTML_RE.search(case.text) if case.html else None)
    if phrase:
        evidence.append(f'phrase "{_clip(phrase.group(0), 60)}"')
        signals.append(f'"{_clip(phrase.group(0), 40)}"')
    if len(evidence) > 1:
        if case.request_bytes is not None:
            evidence.append(f"request {format_size(case.request_bytes)}")
        return _Verdict(WAF_BLOCK, f"{case.status} with {' and '.join(_dedupe(signals)[:2])}", evidence)
    if case.status == 406:
        return None  # a JSON 406 is an ordinary bad request
    if case.json_envelope and _header_matches(case.headers, "cf-ray", ""):
        evidence.append("header cf-ray ignored: the body is the API's own JSON error")
    evidence += _code_evidence(case, AUTH_CODES)
    return _Verdict(AUTH, "403 with no firewall signal: the API refused the key or the model", evidence)


def _too_many_requests_rule(case: _Case) -> _Verdict | None:
    if case.status != 429:
        return None
    evidence = [case.status_evidence()]
    reduced = MUST_BE_REDUCED.search(case.text)
    if reduced:
        evidence.append(f'phrase "{reduced.group(0)}"')
        evidence += _token_evidence(case.text)
        return _Verdict(CONTEXT_OVERFLOW, "429 for one request larger than the tokens-per-minute limit; "
                        "waiting will not help, a smaller request will", evidence)
    evidence += _code_evidence(case, RATE_LIMIT_CODES)
    phrase = _RATE_RE.search(case.text)
    if phrase:
        evidence.append(f'phrase "{phrase.group(0)}"')
    if case.retry_after is not None:
        evidence.append(f"retry-after {_format_seconds(case.retry_after)}")
    return _Verdict(RATE_LIMIT, "429 Too Many Requests", evidence)


def _overflow_phrase_rule(case: _Case) -> _Verdict | None:
    evidence: list[str] = []
    if case.status is not None:
        evidence.append(case.status_evidence())
    phrase = _CONTEXT_OVERFLOW_RE.search(case.text)
    code = _code_evidence(case, CONTEXT_OVERFLOW_CODES)
    bedrock = (BEDROCK_VALIDATION_CODE in case.codes and BEDROCK_TOO_LONG.search(case.text))
    if not (phrase or code or bedrock) or case.codes & RATE_LIMIT_CODES:
        return None  # "Too many tokens, please wait" is Bedrock throttling, not a long prompt
    if phrase:
        evidence.append(f'phrase "{_clip(phrase.group(0), 60)}"')
    evidence += code
    if bedrock:
        evidence.append(f'ValidationException with "{bedrock.group(0)}"')
    tokens = _token_evidence(case.text)
    evidence += tokens
    said = f'"{_clip(phrase.group(0), 60)}"' if phrase else "a context-length error"
    detail = f"{case.status or 'error'} {said}" + (f" ({_short_tokens(tokens[0])})" if tokens else "")
    return _Verdict(CONTEXT_OVERFLOW, f"{detail}: the conversation is longer than the model's window",
                    evidence)


def _server_status_rule(case: _Case) -> _Verdict | None:
    if case.status is None or not 500 <= case.status <= 599:
        return None
    evidence = [case.status_evidence()]
    if case.html:
        evidence.append("HTML error page from a gateway")
    overloaded = _code_evidence(case, OVERLOADED_CODES)
    if case.status in OVERLOADED_STATUSES or overloaded:
        evidence += overloaded
        phrase = _OVERLOADED_RE.search(case.text)
        if phrase:
            evidence.append(f'phrase "{phrase.group(0)}"')
        return _Verdict(OVERLOADED, OVERLOADED_STATUSES.get(case.status, f"{case.status} overloaded"), evidence)
    evidence += _code_evidence(case, SERVER_ERROR_CODES)
    return _Verdict(SERVER_ERROR, f"{case.status} from the {'gateway' if case.html else 'server'}", evidence)


def _payload_rule(case: _Case) -> _Verdict | None:
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
        phrase = _PAYLOAD_RE.search(case.text)
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


def _api_error_code_rule(case: _Case) -> _Verdict | None:
    """Errors told by their code or wording: in-stream events, botocore codes, message-only input."""
    if case.status is not None and case.status >= 500:
        return None
    evidence = [case.status_evidence()] if case.status is not None else []
    if case.transport == "stream-error":
        evidence.append("transport: error event inside the stream")
    tables = (
        (OVERLOADED, OVERLOADED_CODES, _OVERLOADED_RE, "the provider is overloaded"),
        (RATE_LIMIT, RATE_LIMIT_CODES, _RATE_RE, "rate limited or throttled"),
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


def _overflow_pairing_rule(case: _Case) -> _Verdict | None:
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
        said = f'"{_clip(sentence.strip(), 80)}"'
        return _Verdict(CONTEXT_OVERFLOW, f"{case.status or 'error'} {said}: the conversation is longer "
                        "than the model's window", evidence)
    return None


def _fallback_rule(case: _Case) -> _Verdict:
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
        return _Verdict(OTHER, f"{case.status} with no sign of size, overflow, WAF or overload", evidence)
    if case.message or case.body:
        evidence.append(f'message "{_clip(" ".join((case.message or case.body).split()), 80)}"')
    return _Verdict(OTHER, "no known signal (no status, no recognised wording)", evidence or ["no signal"])


_RULES: tuple[Callable[[_Case], _Verdict | None], ...] = (
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


def _decide(case: _Case) -> Failure:
    for rule in _RULES:
        verdict = rule(case)
        if verdict is not None:
            return _finish(case, verdict)
    return _finish(case, _fallback_rule(case))


def _finish(case: _Case, verdict: _Verdict) -> Failure:
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
                   evidence=(f"classifier error {name}: {_clip(_safe_str(exc), 120)}",))


# -- evidence helpers -------------------------------------------------------------------------------
def _code_evidence(case: _Case, table: frozenset[str]) -> list[str]:
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


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.0f}s" if float(seconds).is_integer() else f"{seconds:.1f}s"


def _safe_str(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"


# -- reading exceptions -----------------------------------------------------------------------------
def _qualified_name(error: BaseException) -> str:
    cls = type(error)
    module = getattr(cls, "__module__", "") or ""
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def _is_provider_origin(error: BaseException) -> bool:
    module = (getattr(type(error), "__module__", "") or "").lower()
    if module == "builtins":
        return isinstance(error, OSError)  # ConnectionResetError, TimeoutError, … not ValueError
    return any(module == root or module.startswith(root + ".") for root in SDK_MODULES)


def _cause_chain(error: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < MAX_CAUSE_DEPTH and all(current is not c for c in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _class_names(error: BaseException) -> list[str]:
    skip = {"object", "BaseException", "Exception"}
    return [cls.__name__ for cls in type(error).__mro__ if cls.__name__ not in skip]


def _parts_from_exception(error: BaseException) -> dict[str, Any] | None:
    """The fields the rules read, taken from a ProviderError or a raw SDK exception."""
    wrapper = error if isinstance(error, ProviderError) else None
    primary = wrapper.original if wrapper is not None and wrapper.original is not None else error
    if wrapper is None and not _is_provider_origin(error):
        return None
    chain = _cause_chain(primary)
    parts: dict[str, Any] = {
        "class_names": [] if primary is wrapper else _class_names(primary),  # error_type names the class
        "cause_names": [name for exc in chain[1:] for name in _class_names(exc)],
        "cause_notes": [f"cause {type(exc).__name__}: {_clip(_safe_str(exc), 100)}"
                        for exc in chain[1:3] if _safe_str(exc)],
    }
    botocore = _botocore_response(primary)
    message = _safe_str(primary)
    if wrapper is not None and wrapper.message and wrapper.message not in message:
        message = f"{wrapper.message}\n{message}" if primary is not wrapper else wrapper.message
    parts["message"] = message
    parts["status"] = _first_present(
        getattr(wrapper, "status", None), _as_status(getattr(primary, "status_code", None)),
        _as_status(_dig(botocore, "ResponseMetadata", "HTTPStatusCode")),
        _as_status(_dig(botocore, "Error", "Code")),
    )
    parts["body"] = _first_present(getattr(wrapper, "body", None), _sdk_body(primary))
    parts["headers"] = (getattr(wrapper, "headers", None) or _sdk_headers(primary)
                        or _dig(botocore, "ResponseMetadata", "HTTPHeaders") or None)
    parts["request_bytes"] = _first_present(getattr(wrapper, "request_bytes", None), _sdk_request_bytes(primary))
    parts["transport"] = getattr(wrapper, "transport", None) or _sdk_transport(parts["class_names"])
    parts["error_type"] = getattr(wrapper, "error_type", None)
    parts["extra_codes"] = [code for code in (
        _as_text(getattr(primary, "type", None)) if isinstance(getattr(primary, "type", None), str) else None,
        _as_text(getattr(primary, "code", None)) if isinstance(getattr(primary, "code", None), str) else None,
        _as_text(_dig(botocore, "Error", "Code")) if _dig(botocore, "Error", "Code") else None,
    ) if code]
    parts["retry_after"] = getattr(wrapper, "retry_after", None)
    return parts


def _first_present(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _botocore_response(error: BaseException) -> Mapping[str, Any] | None:
    response = getattr(error, "response", None)
    return response if isinstance(response, Mapping) else None


def _sdk_body(error: BaseException) -> Any:
    body = getattr(error, "body", None)
    if body is not None:
        return body
    response = getattr(error, "response", None)
    if response is None or isinstance(response, Mapping):
        return None
    try:
        text = response.text
    except Exception:  # an unread streaming response
        return None
    return text if isinstance(text, str) and text else None


def _sdk_headers(error: BaseException) -> dict[str, str] | None:
    response = getattr(error, "response", None)
    if response is None or isinstance(response, Mapping):
        return None
    try:
        return {str(k): str(v) for k, v in response.headers.items()}
    except Exception:
        return None


def _sdk_request_bytes(error: BaseException) -> int | None:
    """Exact body size: httpx-style `request.content`, botocore-style `request.body`."""
    request = getattr(error, "request", None)
    if request is None:
        kwargs = getattr(error, "kwargs", None)
        request = kwargs.get("request") if isinstance(kwargs, Mapping) else None
    if request is None:
        return None
    for attribute in ("content", "body"):
        try:
            value = getattr(request, attribute, None)
        except Exception:  # httpx raises for an unread streaming body
            continue
        if isinstance(value, bytes | bytearray):
            return len(value)
        if isinstance(value, str):
            return len(value.encode("utf-8"))
    return None


def _sdk_transport(class_names: list[str]) -> str | None:
    lowered = [name.lower() for name in class_names]
    if lowered and lowered[0] in TIMEOUT_CLASSES:
        return "timeout"
    if any(name in CONNECTION_DROP_CLASSES | CONNECT_FAILURE_CLASSES for name in lowered):
        return "connection"
    return None
