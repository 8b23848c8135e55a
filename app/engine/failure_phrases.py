"""The phrase, code, header and class tables the failure classifier matches (DESIGN.md §5).

Matched against lower-case text with HTML entities decoded and whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DEFAULT_DROP_THRESHOLD = 500_000  # bytes; Settings.drop_payload_min_bytes
MAX_SCAN_CHARS = 200_000  # the head and tail of a huge body are enough to recognise it
MAX_CAUSE_DEPTH = 8


# -- phrase tables (matched against lower-case text, HTML entities decoded, whitespace collapsed) --
def any_of(patterns: Iterable[str]) -> re.Pattern[str]:
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
    r"is longer than the model'?s (?:maximum )?context length",  # LiteLLM table (vLLM, Aleph Alpha)
    r"`?inputs`? tokens \+ `?max_new_tokens`? must be",  # TGI, Together (LiteLLM table)
    r"expected maxlength: \d+, actual: \d+",  # Bedrock (Cohere) text length (LiteLLM table)
    r"invalid '(?:messages|input)[^']*': string too long",  # OpenAI: one message's text over its limit
    r"exceeds the limit of \d+",  # GitHub Copilot (pi-mono table)
    r"greater than the context length",  # LM Studio (pi-mono table)
    r"exceeded model token limit",  # Kimi (pi-mono table)
    r"reduce the length of the messages",  # Groq (pi-mono, opencode tables)
    r"input tokens exceed the configured limit",  # OpenAI Responses (LiteLLM table)
    r"model'?s maximum context limit",  # LiteLLM table
    r"maximum input length is \d+ tokens",  # LiteLLM table
    r"length limit exceeded",  # Hugging Face (LiteLLM table)
    r"input text length should not exceed",  # NLP Cloud (LiteLLM table)
    r"prompt tokens \(\d+\) exceed model maximum",  # Bedrock Mantle (LiteLLM table)
    r"too many tokens",  # Cohere, Bedrock, generic (LiteLLM, pi-mono tables) — not "too many requests"
    r"is longer than the maximum model length",  # vLLM
    r"prompt is too long: \d+",  # Fireworks
)
CONTEXT_OVERFLOW_CODES = frozenset(
    {
        "context_length_exceeded",
        "exceed_context_size_error",
        "model_context_window_exceeded",
        "context_window_exceeded",
        "prompt_too_long",
        "input_too_long",
    }
)  # not string_above_max_length: OpenAI also says it of the `user` parameter (LiteLLM excludes it too)
# Bedrock puts too-long input in a ValidationException; only its length wording counts.
BEDROCK_VALIDATION_CODE = "validationexception"
BEDROCK_TOO_LONG = re.compile(r"too long|exceeds? (?:the )?(?:context|max)")
# Status-aware fallback: a 400/413 whose body pairs a token/length word with an excess word.
LENGTH_WORDS = re.compile(
    r"\b(?:tokens?|context(?: window| length| size| limit)?|prompt|"
    r"input (?:length|size|tokens?)|(?:message|conversation) length)\b"
)
EXCESS_WORDS = re.compile(
    r"\b(?:exceeds?|exceeded|exceeding|too long|too many|too large|over the limit|"
    r"greater than|more than the|maximum|limit)\b"
)
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
    r"max(?:imum)? (?:body|payload|request body) size",
    r"client intended to send too large body",  # nginx log line
)
PAYLOAD_CODES = frozenset(
    {
        "request_too_large",
        "requestentitytoolargeexception",
        "payload_too_large",
        "entity_too_large",
        "content_too_large",
        "request_entity_too_large",
    }
)
PAYLOAD_STATUSES = {413: "413 Payload Too Large"}
# "413" (or 431) as a status in free text, never inside other digits ("req_4130", "24135 tokens").
BARE_PAYLOAD_STATUS = re.compile(r"(?<![\w.])(413|431)(?=\s+(?:payload|request|content|entity|header))")

# Header-size rejections: not the body (431; nginx's 400 page; IIS, Apache, Tomcat, Envoy wording).
HEADERS_TOO_LARGE_PHRASES = (
    r"request header fields too large",  # RFC 6585 reason phrase (Node, Envoy, Kestrel, Go)
    r"request header or cookie too large",  # nginx 400 (large_client_header_buffers)
    r"request header too large",  # nginx 494 reason phrase
    r"size of (?:the )?request headers? (?:is )?too long",  # IIS "HTTP Error 400. The size of the request headers is too long."
    r"size of a request header field exceeds server limit",  # Apache LimitRequestFieldSize
    r"request header field (?:is )?too (?:long|large)",
    r"headers? (?:section )?(?:is |are )?too (?:large|long|big)",  # "header too long" (Tomcat), "headers too large"
    r"cookie too large",
    r"request_header_fields_too_large|header_overflow|hpe_header_overflow",  # codes (Node's llhttp)
    r"max(?:imum)? header size",
)

WAF_PHRASES = (
    r"\bfirewall\b",
    r"\bwaf\b",
    r"security polic(?:y|ies)",
    r"blocked by",
    r"\bcloudflare\b",
    r"mod_?security|mod security",
    r"\bakamai\b",
    r"reference #\s*[\w.]+",
    r"proxy denied",
    r"policy violation",
    r"request blocked",
    r"\bzscaler\b",
    r"the request could not be satisfied",
    r"you have been blocked",
    r"attention required",
    r"incapsula|imperva",
    r"the requested url was rejected",
    r"your support id is",
    r"generated by cloudfront",
    r"forcepoint|bluecoat|blue coat|fortiguard|netskope|sucuri|barracuda",
    r"web page blocked",
    r"incident id",
    r"request unsuccessful",
    r"\battack id\b",
    r"rbac: access denied",
    r"err_access_denied",
    r"the request is blocked",
    r"requested url could not be retrieved",
    r"administrative rules",
    r"human verification",
    r"error 1020",
)
WAF_PHRASES_IN_HTML = (r"access denied", r"forbidden", r"not acceptable")
# Words only a block page says: they decide at any status (a PAN-OS page comes with 503, Envoy's RBAC as text).
WAF_STRONG_PHRASES = (
    r"web page blocked",
    r"blocked in accordance with (?:company|your organization'?s?) policy",
    r"request blocked",
    r"you have been blocked",
    r"access (?:has been )?blocked",
    r"the request is blocked",
    r"incapsula incident id",
    r"your support id is",
    r"\battack id\b",
    r"rbac: access denied",
    r"err_access_denied",
    r"sucuri website firewall",
    r"blocked by the .{0,40}(?:firewall|waf)",
    r"request unsuccessful\. incapsula",
    r"fortiguard .{0,40}access blocked",
)
# Headers a provider never sends itself: a middlebox answered.
WAF_HEADERS_ALWAYS = (
    ("cf-mitigated", ""),
    ("x-amzn-waf-action", ""),
    ("x-zscaler-", ""),
    ("x-iinfo", ""),
    ("x-sucuri-id", ""),
    ("x-cdn", "incapsula"),
)
# Headers that also ride on real API answers (Anthropic sits behind Cloudflare): they count only
# when the body is not the API's own JSON error.
WAF_HEADERS_WITHOUT_JSON = (
    ("cf-ray", ""),
    ("server", "cloudflare"),
    ("server", "akamai"),
    ("server", "awselb"),
    ("x-amz-cf-id", ""),
    ("via", "cloudfront"),
)
APIGW_FORBIDDEN = "forbiddenexception"  # API Gateway's refusal; Bedrock itself says AccessDenied
WAF_STATUSES = frozenset({403, 406})
NON_STREAM_200 = "non-sse-200"  # the adapter's flag for a 200 that is neither the stream nor HTML

# TLS ended mid-handshake or mid-upload (an h2-only server refusing HTTP/1.1 included): a drop
TLS_DROP_PHRASES = (
    r"eof occurred in violation of protocol",
    r"unexpected_eof_while_reading",
    r"tlsv1 alert no application protocol",
    r"no application protocol",
)
CONNECTION_DROP_PHRASES = (
    r"connection error\.?",
    r"connection was closed before we received a valid response",
    r"broken pipe",
    r"unexpected eof",
    r"connection reset",
    r"\bstream (?:was )?reset\b",
    r"\bstream error\b",
    r"rst_stream",
    r"peer closed connection",
    r"server disconnected",
    r"remote end closed connection",
    r"connection aborted",
    r"errno 104",
    r"econnreset",
    r"epipe",
    r"incomplete (?:chunked )?read",
    r"connection closed",
    r"websocket (?:closed|disconnected)",  # Codex: "websocket closed by server before response.completed"
    r"stream (?:closed|disconnected) before",
    r"disconnected before completion",
    *TLS_DROP_PHRASES,
)
CONNECTION_DROP_CLASSES = frozenset(
    {
        "apiconnectionerror",
        "connectionclosederror",
        "remoteprotocolerror",
        "readerror",
        "writeerror",
        "connectionreseterror",
        "brokenpipeerror",
        "protocolerror",
        "remotedisconnected",
        "incompleteread",
        "connectionabortederror",
        "responsestreamingerror",
        "chunkedencodingerror",
        "ssleoferror",
        "sslzeroreturnerror",
    }
)
CONNECT_FAILURE_PHRASES = (
    r"connection refused",
    r"could not connect to the endpoint",
    r"name or service not known",
    r"nodename nor servname",
    r"temporary failure in name resolution",
    r"getaddrinfo failed",
    r"no route to host",
    r"network is unreachable",
    r"failed to connect to proxy",
)
CONNECT_FAILURE_CLASSES = frozenset(
    {
        "connecterror",
        "connectionrefusederror",
        "endpointconnectionerror",
        "gaierror",
        "proxyconnectionerror",
        "newconnectionerror",
    }
)
# Only a real verification failure is a certificate problem (issue 22): an EOF or reset during the
# handshake or the upload ("SSL validation failed for … EOF occurred in violation of protocol" from
# botocore) is a dropped connection, judged by size like any drop.
TLS_FAILURE = re.compile(
    r"certificate verify failed|certificate_verify_failed|sslcertverificationerror|unable to get local issuer"
    r"|self[- ]signed certificate|unable to verify the first certificate|hostname mismatch"
    r"|certificate is not valid for|doesn't match '|tlsv1 alert unknown ca|certificate has expired"
)
TLS_FAILURE_CLASSES = frozenset({"sslcertverificationerror"})

TIMEOUT_CLASSES = frozenset(
    {
        "apitimeouterror",
        "readtimeout",
        "writetimeout",
        "connecttimeout",
        "pooltimeout",
        "timeoutexception",
        "readtimeouterror",
        "connecttimeouterror",
        "timeouterror",
        "timeout",
    }
)
TIMEOUT_PHRASES = (
    r"timed out",
    r"read timeout",
    r"write timeout",
    r"connect timeout",
    r"timeout on endpoint",
    r"deadline exceeded",
)
TIMEOUT_STATUSES = {
    408: "408 Request Timeout",
    504: "504 Gateway Timeout",
    522: "522 connection timed out",
    524: "524 origin timeout",
}
TIMEOUT_CODES = frozenset({"deadline_exceeded", "modeltimeoutexception", "requesttimeout", "timeout_error"})

RATE_LIMIT_PHRASES = (
    r"rate limit",
    r"tokens per min",
    r"requests per min",
    r"too many requests",
    r"throttl",
    r"service tier capacity exceeded",
    r"resource has been exhausted",
    r"slow down",
)
RATE_LIMIT_CODES = frozenset(
    {
        "rate_limit_error",
        "rate_limit_exceeded",
        "throttlingexception",
        "too_many_requests",
        "resource_exhausted",
        "toomanyrequestsexception",
    }
)
MUST_BE_REDUCED = re.compile(r"must be reduced")  # OpenAI: one request over the TPM limit
OVERLOADED_STATUSES = {503: "503 Service Unavailable", 529: "529 Overloaded"}
OVERLOADED_CODES = frozenset(
    {
        "overloaded_error",
        "serviceunavailableexception",
        "service_unavailable",
        "unavailable",
        "modelnotreadyexception",
        "model_capacity_exhausted",
    }
)
OVERLOADED_PHRASES = (
    r"\boverloaded\b",
    r"service unavailable",
    r"unable to process your request",
    r"high demand",  # Gemini, Gemini CLI, Codex: "experiencing high demand"
    r"\bat capacity\b",  # "Selected model is at capacity"
    r"no capacity available",  # Google's MODEL_CAPACITY_EXHAUSTED
    r"capacity (?:constraints|exhausted)",
)
# A model that is loading or scaling up: wait and retry (Bedrock ModelNotReadyException, TGI/HF 503, Ollama).
MODEL_NOT_READY_PHRASES = (
    r"model is (?:currently |still )?loading",
    r"not ready for inference",
    r"model is not ready",
    # "being loaded", never "is loaded with context length of only 4096 tokens" (LM Studio's window)
    r"model (?:is )?(?:still |currently )?(?:being loaded|warming up)",
    r"loading model",
)
# A proxy's 502/503 about its upstream: server trouble, not provider overload (Envoy, nginx, HAProxy, Kong).
UPSTREAM_TROUBLE_PHRASES = (
    r"upstream connect error",
    r"disconnect/reset before headers",
    r"no healthy upstream",
    r"upstream (?:prematurely )?closed",
    r"upstream server is temporarily unavailable",
    r"reset reason: (?:connection (?:termination|failure)|remote reset)",
    r"no server is available to handle",
    r"an invalid response was received from the upstream server",
    r"failure to get a peer from the ring-balancer",
)
# The account's credit or quota is gone: waiting will not help (OpenAI insufficient_quota, Anthropic credit).
QUOTA_PHRASES = (
    r"exceeded your current quota",
    r"insufficient[_ ]quota",
    r"credit balance is too low",
    r"billing hard limit",
    r"you have run out of credits",
    r"quota exceeded for quota metric .{0,60}per ?day",
)
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached", "billing_not_active"})
# …unless it says the quota refills within the minute (Gemini's free tier: PerMinute quotas with a retryDelay).
QUOTA_RESETS_SOON = (r"per ?minute", r"retrydelay", r"retry_delay", r"please retry in", r"try again in")
# One request above a tokens-per-minute limit: "… (TPM): Limit 6000, Requested 9000" (OpenAI, Groq, Azure).
TPM_LIMIT = re.compile(
    r"(?:tokens per min(?:ute)?|\btpm\b).{0,40}?limit:? ?([\d,]+)(?:, used:? ?([\d,]+))?,"
    r" requested:? ?([\d,]+)"
)
# A 407 down the exception's cause chain: the proxy refused the CONNECT tunnel (httpx ProxyError, urllib3).
PROXY_AUTH_IN_CHAIN = re.compile(r"\b407\b|proxy authentication required")
SERVER_ERROR_CODES = frozenset(
    {
        "api_error",
        "server_error",
        "internalserverexception",
        "internal_server_error",
        "internal",
        "internal_error",
        "internalfailure",
        "modelstreamerrorexception",
    }
)
AUTH_STATUSES = {401: "401 Unauthorized", 407: "407 Proxy Authentication Required"}
AUTH_CODES = frozenset(
    {
        "authentication_error",
        "permission_error",
        "invalid_api_key",
        "unrecognizedclientexception",
        "accessdeniedexception",
        "expiredtokenexception",
        "invalidsignatureexception",
        "permission_denied",
        "unauthenticated",
        "incorrect_api_key",
        "nocredentialserror",
        "security_token_invalid",
        "expiredtoken",
        "invalidclienttokenid",
    }
)
# The provider's own words for a refused key (LiteLLM's provider branches; Google, Cohere, AI21, Apigee, APIM).
AUTH_PHRASES = (
    r"api key not valid",
    r"invalid api key",
    r"incorrect api key provided",
    r"invalid x-api-key",
    r"invalid api token",
    r"bad or missing api token",
    r"invalid private key",
    r"incorrect authentication token",
    r"unable to locate credentials",
    r"security token included in the request is invalid",
    r"missing subscription key",
    r"invalid apikey",
    r"no api key provided",
    r"authorization denied for",
)
AUTH_CLASSES = frozenset(
    {"authenticationerror", "permissiondeniederror", "nocredentialserror", "partialcredentialserror"}
)

# -- shapes ---------------------------------------------------------------------------------------
HTML_TAG = re.compile(r"<\s*(?:!doctype\s+html|html|head|body|title|h1|center)\b", re.IGNORECASE)
JSON_ERROR_IN_MESSAGE = re.compile(r"error code: \d{3} - [{\[]")
CODE_FIELD = re.compile(
    r"""["']?(?:type|code|__type|status|error_type|errortype)["']?\s*[:=]\s*"""
    r"""["']([a-z][a-z0-9_.:#/-]{2,80})["']"""
)
BOTOCORE_CODE = re.compile(r"an error occurred \(([a-z][\w.]{2,80})\)")
STATUS_IN_MESSAGE = (
    re.compile(
        r"(?<![\w.])(?:error code|status code|statuscode|status|http(?:/[\d.]+)?)\s*[:=]?\s*\(?"
        r"([1-5]\d\d)(?![\w.])"
    ),
    re.compile(r"an error occurred \(([1-5]\d\d)\)"),
    re.compile(r"^\s*([1-5]\d\d)(?=\s+[a-z])"),
    BARE_PAYLOAD_STATUS,
)
RETRY_IN_TEXT = re.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b")

# Token counts, parsed into evidence: (pattern, index of used, index of limit, 1-based groups).
TOKEN_COUNTS = (
    (re.compile(r"(\d[\d,]*) tokens > (\d[\d,]*) maximum"), 1, 2),
    (
        re.compile(
            r"maximum context length is (\d[\d,]*) tokens\W+however,? (?:you requested|your messages "
            r"resulted in|your request has) (\d[\d,]*)"
        ),
        2,
        1,
    ),
    (
        re.compile(
            r"input token count \(?(\d[\d,]*)\)? exceeds the maximum number of tokens allowed "
            r"\(?(\d[\d,]*)\)?"
        ),
        1,
        2,
    ),
    (re.compile(r"current length is (\d[\d,]*) while limit is (\d[\d,]*)"), 1, 2),
    (re.compile(r"maximum prompt length is (\d[\d,]*) but the request contains (\d[\d,]*)"), 2, 1),
    (re.compile(r"prompt contains (\d[\d,]*) tokens.{0,60}?with (\d[\d,]*) maximum context length"), 1, 2),
    (
        re.compile(
            r"total length (\d[\d,]*)\) is too long to fit into the model \(context length (\d[\d,]*)"
        ),
        1,
        2,
    ),
    (re.compile(r"prompt=(\d+) limit=(\d+)"), 1, 2),
    (re.compile(r"\((\d[\d,]*) tokens\) exceeds the available context size \((\d[\d,]*) tokens\)"), 1, 2),
)
INPUT_PLUS_OUTPUT = re.compile(r"(\d[\d,]*) \+ (\d[\d,]*) > (\d[\d,]*)")
BYTE_LIMIT = re.compile(r"(?:max(?:imum)? size|exceeds the limit|limit(?: of)?)\s*:?\s*(\d{4,})\s*bytes")

# Exceptions from these modules are provider-call errors; anything else is not recovered.
SDK_MODULES = (
    "anthropic",
    "openai",
    "botocore",
    "boto3",
    "httpx",
    "httpcore",
    "urllib3",
    "requests",
    "http.client",
    "ssl",
    "socket",
    "builtins",
    "app.providers",
    "aiohttp",
    "h11",
    "h2",
)

CONTEXT_OVERFLOW_RE = any_of(CONTEXT_OVERFLOW_PHRASES)
PAYLOAD_RE = any_of(PAYLOAD_PHRASES)
WAF_RE = any_of(WAF_PHRASES)
WAF_HTML_RE = any_of(WAF_PHRASES_IN_HTML)
DROP_RE = any_of(CONNECTION_DROP_PHRASES)
CONNECT_RE = any_of(CONNECT_FAILURE_PHRASES)
TIMEOUT_RE = any_of(TIMEOUT_PHRASES)
RATE_RE = any_of(RATE_LIMIT_PHRASES)
OVERLOADED_RE = any_of(OVERLOADED_PHRASES)
WAF_STRONG_RE = any_of(WAF_STRONG_PHRASES)
AUTH_RE = any_of(AUTH_PHRASES)
HEADERS_TOO_LARGE_RE = any_of(HEADERS_TOO_LARGE_PHRASES)
MODEL_NOT_READY_RE = any_of(MODEL_NOT_READY_PHRASES)
UPSTREAM_TROUBLE_RE = any_of(UPSTREAM_TROUBLE_PHRASES)
QUOTA_RE = any_of(QUOTA_PHRASES)
QUOTA_RESETS_SOON_RE = any_of(QUOTA_RESETS_SOON)
# The provider's own JSON refusing a network, not a content judgement (Azure: "Access denied due to Virtual
# Network/Firewall rules"): the resource's networking settings, a permission refusal.
NETWORK_POLICY_RE = re.compile(
    r"virtual network|\bvnet\b|firewall rules|private (?:endpoint|link)|public network access"
    r"|(?:ip|address|network) (?:address )?(?:is )?not (?:allowed|authorized|whitelisted|permitted)"
    r"|traffic ?denied"
)
# Statuses no API answers with: a middlebox's block (hosts answer mod_security blocks with 418; WebKnight 999).
BLOCK_STATUSES = (418, 451, 999)
# A limit stated per minute or as a rate: waiting helps, compacting does not.
RATE_WORDS_RE = re.compile(
    r"\bper (?:minute|min|second|sec|hour|day)\b|\brate[ _-]?limit|\bthrottl|wait before|try again in|\btpm\b"
)
