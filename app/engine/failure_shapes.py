"""The shapes of a failure's text the classifier reads beside its phrases: HTML, JSON error codes, statuses and
retry hints inside messages, token counts and byte limits, and the modules whose exceptions are provider-call
errors (the phrase tables: `failure_phrases.py`)."""

from __future__ import annotations

import re

from app.engine.failure_phrases import BARE_PAYLOAD_STATUS

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
