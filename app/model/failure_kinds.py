"""What went wrong with a request, as one word: the classifier's failure kinds, and the sets the engine acts on.

The kinds are the vocabulary of the whole app: the classifier's rules produce them (`app.engine.failure_rules`),
`[[classifier.rules]]` in config.toml names them (checked at load time by `app.config`), the recovery ladder and
the fallback chain act on them, and the inspector shows them.
"""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """One classified failure (values as written in `[[classifier.rules]]` and stored with each rejection)."""

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


CONTEXT_OVERFLOW = FailureKind.CONTEXT_OVERFLOW
PAYLOAD_TOO_LARGE = FailureKind.PAYLOAD_TOO_LARGE
WAF_BLOCK = FailureKind.WAF_BLOCK
CONNECTION_DROP = FailureKind.CONNECTION_DROP
HEADERS_TOO_LARGE = FailureKind.HEADERS_TOO_LARGE
AUTH = FailureKind.AUTH
RATE_LIMIT = FailureKind.RATE_LIMIT
OVERLOADED = FailureKind.OVERLOADED
SERVER_ERROR = FailureKind.SERVER_ERROR
TIMEOUT = FailureKind.TIMEOUT
OTHER = FailureKind.OTHER

KINDS: tuple[FailureKind, ...] = tuple(FailureKind)  # in the order `classify --explain` lists them
# About the request's size or shape at a gateway: the recovery ladder makes the request smaller.
PAYLOAD_KINDS: frozenset[FailureKind] = frozenset({PAYLOAD_TOO_LARGE, WAF_BLOCK, CONNECTION_DROP})
# Worth sending again as it is, after a wait (the sender's retries).
TRANSIENT_KINDS: frozenset[FailureKind] = frozenset({RATE_LIMIT, OVERLOADED, SERVER_ERROR, TIMEOUT})
