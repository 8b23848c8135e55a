"""The provider fallback chain's vocabulary: which failures move a turn to the next route, which never do.

A route that cannot answer — after its own retries — hands the turn to the next route of its chain
(`fallback = [...]`). Only failures that are about the *route* move on; a request that is too big is
recovered on the route that refused it (the recovery ladder), never "solved" by switching.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class FallbackKind(StrEnum):
    """A failure the next route may get past (values as written in `fallback_on`)."""

    OVERLOADED = "overloaded"  # 529 / 503 overloaded, after the route's retries
    SERVER_ERROR = "server_error"  # 5xx, after the route's retries
    RATE_LIMIT = "rate_limit"  # 429 past the retry-after budget (retries spent, or a wait over 5 minutes)
    TIMEOUT = "timeout"  # no answer in time, after the route's retries
    CONNECTION_DROP = "connection_drop"  # a drop that is not about the request's size
    AUTH = "auth"  # the route's key, or a gateway in front of it, refuses us
    CONTENT_BLOCK = "content_block"  # a gateway refuses the conversation's content (judged: not its size)
    MODEL_NOT_FOUND = "model_not_found"  # the route does not know the model (404 / "model … does not exist")


DEFAULT_FALLBACK_ON: tuple[str, ...] = tuple(kind.value for kind in FallbackKind)

# Failure kinds about the request's size or shape: recovered on their own route, never by moving on.
STAYING_KINDS: tuple[str, ...] = (
    "context_overflow",
    "payload_too_large",
    "waf_block",
    "headers_too_large",
)

# After a partial answer (text already on screen), what moving on does: ask the user (the TUI asks; `-p`
# stops and says so), continue on the next route without asking, or stop there.
FallbackAfterPartial = Literal["ask", "continue", "stop"]
FALLBACK_AFTER_PARTIAL: tuple[FallbackAfterPartial, ...] = ("ask", "continue", "stop")
