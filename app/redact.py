"""Secrets never leave the process: one rule for which headers are secret, used everywhere.

The adapters redact what they record, the store redacts again before writing, exports and the
inspector redact once more on the way out — all with this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[redacted]"
# Header names whose values are secrets (lower case).
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-amz-security-token", "cookie",
    "set-cookie", "x-goog-api-key", "anthropic-api-key", "openai-api-key",
})
# …and any header with one of these as a dash-separated word (`x-auth-token`, not `…-tokens-remaining`).
SECRET_HEADER_RE = re.compile(r"(?:^|[-_])(?:token|auth|secret|password|passwd|signature|credentials?|"
                              r"api[-_]?key|apikey)(?:$|[-_])")


def is_secret_header(name: str) -> bool:
    lowered = str(name).lower()
    return lowered in SECRET_HEADERS or SECRET_HEADER_RE.search(lowered) is not None


def redact_headers(headers: Mapping[Any, Any] | None) -> dict[str, str]:
    """Headers safe to store and show: every secret-looking value replaced by `[redacted]`."""
    if not isinstance(headers, Mapping):
        return {}
    return {str(key): REDACTED if is_secret_header(key) and value not in (None, "") else str(value)
            for key, value in headers.items()}
