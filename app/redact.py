"""Secrets never leave the process: which headers are secret, and which values are.

Two rules, used everywhere:

- **by name** — a header whose name says it is a secret (`authorization`, `x-api-key`, …) is
  stored and shown as `[redacted]` (`redact_headers`);
- **by value** — every secret bulkhead knows is replaced wherever it appears in text it stores,
  exports or prints (`redact_text`, `redact_known`, `redact_value`): a gateway that echoes the
  key in an error body or in an `x-echo-authorization` header, `env` run by the shell tool, a
  key pasted into a prompt. What the model receives is not changed (a file it reads and may
  write back keeps its bytes); the copy on disk is redacted. The values come from one registry, filled where secrets are read: `app.secrets`
  (keyring and environment), `app.config` (`api_key_env`, passwords in `base_url`), the
  environment's proxy URLs (`app.network_env`), the AWS credentials boto3 resolved, and the
  secret headers the providers send. In what bulkhead records about requests and prints, a
  password in any `scheme://user:password@host` URL is also hidden by position, whatever its
  length (`redact_text`); conversation content keeps other people's URLs (`redact_known`).

The adapters redact what they record, the store redacts again before writing, exports and the
inspector redact once more on the way out — all with this module.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

REDACTED = "[redacted]"
# Header names whose values are secrets (lower case).
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-amz-security-token",
        "cookie",
        "set-cookie",
        "x-goog-api-key",
        "anthropic-api-key",
        "openai-api-key",
    }
)
# …and any header with one of these as a dash-separated word (`x-auth-token`, not `…-tokens-remaining`).
SECRET_HEADER_RE = re.compile(
    r"(?:^|[-_])(?:token|auth|secret|password|passwd|signature|credentials?|"
    r"api[-_]?key|apikey)(?:$|[-_])"
)
# Request headers whose value is a reusable credential (a SigV4 `authorization` is per request: not kept).
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-amz-security-token", "x-goog-api-key"}
)
# Shorter values are only hidden by position (in URLs): replacing them everywhere would hit ordinary words.
MIN_SECRET_CHARS = 8
MAX_KNOWN_SECRETS = 512  # a bound, so a long session never grows the registry without end
# `scheme://user:password@host`: the password is group 2.
URL_PASSWORD_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:\"'<>]*:)([^\s/?#@\"'<>]+)(@)")
URL_PASSWORD_SHOWN = "***"

_lock = threading.Lock()
_known: dict[str, str] = {}  # value -> what it is ("env OPENAI_API_KEY", "keyring anthropic", …)
_ordered: tuple[str, ...] = ()  # longest first, so a key is replaced before a value it contains


def is_secret_header(name: str) -> bool:
    lowered = str(name).lower()
    return lowered in SECRET_HEADERS or SECRET_HEADER_RE.search(lowered) is not None


def redact_headers(headers: Mapping[Any, Any] | None) -> dict[str, str]:
    """Headers safe to store and show: secret-looking names get `[redacted]`, other values are
    redacted by value (a gateway echoing the key in `x-echo-authorization`).

    The credentials found in request headers (`x-api-key`, `Authorization: Bearer …`) join the
    registry, so wherever else they turn up they are replaced too.
    """
    if not isinstance(headers, Mapping):
        return {}
    safe: dict[str, str] = {}
    for key, value in headers.items():
        if value in (None, ""):
            safe[str(key)] = "" if value is None else value
            continue
        if is_secret_header(key):
            if str(key).lower() in CREDENTIAL_HEADERS:
                _register_header_credential(str(value))
            safe[str(key)] = REDACTED
        else:
            safe[str(key)] = redact_text(str(value))
    return safe


def _register_header_credential(value: str) -> None:
    scheme, _, token = value.strip().partition(" ")
    if scheme.upper().startswith("AWS4-"):
        return  # a signature: valid for one request, never reused
    if token and scheme.lower() in ("bearer", "basic", "token"):
        register_secret(token.strip(), f"{scheme} credential")
    else:
        register_secret(value.strip(), "credential header")


# -- the registry --------------------------------------------------------------------------------------
def register_secret(value: str | None, label: str = "secret") -> None:
    """Remember `value` as a secret (with its base64 and URL-encoded forms). Short values are ignored."""
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_CHARS:
        return
    forms = {value, base64.b64encode(value.encode()).decode().rstrip("="), quote(value, safe="")}
    global _ordered
    with _lock:
        added = False
        for form in forms:
            if len(form) >= MIN_SECRET_CHARS and form not in _known and len(_known) < MAX_KNOWN_SECRETS:
                _known[form] = label
                added = True
        if added:
            _ordered = tuple(sorted(_known, key=len, reverse=True))


def register_url_password(url: str | None, label: str = "URL password") -> None:
    """A password in `scheme://user:password@host` joins the registry (decoded and as written)."""
    if not url:
        return
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return
    if password:
        register_secret(password, label)
        register_secret(unquote(password), label)


def known_secrets() -> dict[str, str]:
    """value → label for every registered secret form (for tests and `config check`; never print values)."""
    with _lock:
        return dict(_known)


def forget_secrets() -> None:
    """Empty the registry (tests: each test starts without the previous one's keys)."""
    global _ordered
    with _lock:
        _known.clear()
        _ordered = ()


def has_secret(text: str) -> bool:
    return any(value in text for value in _ordered)


def redact_known(text: str) -> str:
    """`text` with every known secret replaced by `[redacted]` — for conversation content (messages,
    archive, spill files), where a URL password in a file the model read is the user's data."""
    if not isinstance(text, str) or not text:
        return text
    for value in _ordered:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_text(text: str) -> str:
    """`text` with every known secret replaced by `[redacted]` and every URL password by `***` — for
    what bulkhead itself records and prints (request records, events, stderr, HAR)."""
    text = redact_known(text)
    if isinstance(text, str) and "://" in text and "@" in text:
        text = URL_PASSWORD_RE.sub(_hide_url_password, text)
    return text


def _hide_url_password(match: re.Match[str]) -> str:
    password = match.group(2)
    return match.group(0) if password == REDACTED else match.group(1) + URL_PASSWORD_SHOWN + match.group(3)


def redact_value(value: Any, *, urls: bool = True) -> Any:
    """`redact_text` (or, with `urls=False`, `redact_known`) applied to every string inside dicts,
    lists and tuples, keys included."""
    if isinstance(value, str):
        return redact_text(value) if urls else redact_known(value)
    if isinstance(value, Mapping):
        return {redact_value(k, urls=urls): redact_value(v, urls=urls) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, urls=urls) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_value(v, urls=urls) for v in value)
    return value


def redact_data(value: Any) -> Any:
    """`redact_known` on every string inside `value`, dataclass instances included (a changed one is
    copied): an engine event on its way to the screen."""
    import dataclasses

    if isinstance(value, str | Mapping | list | tuple):
        return redact_value(value, urls=False) if _ordered else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and _ordered:
        changes = {}
        for field in dataclasses.fields(value):
            if field.init:
                old = getattr(value, field.name)
                new = redact_data(old)
                if new != old:
                    changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


MIN_PREFIX_AT_CUT = 4  # a cut that ends with this much of a known secret hides it


def clip_redacted(text: str, limit: int, marker: str = "…") -> str:
    """`text` cut to `limit` characters for evidence and notices, redacted first (a cut must not keep the
    first half of a key, which the registry would no longer recognise), then any trailing start of a
    known secret at the cut hidden too."""
    text = redact_text(text)
    if len(text) <= limit:
        return text
    kept = text[: max(0, limit - len(marker))]
    hold = _longest_secret_prefix_suffix(kept)
    if hold >= MIN_PREFIX_AT_CUT:
        kept = kept[: len(kept) - hold] + REDACTED
    return kept + marker


class StreamRedactor:
    """`redact_known` for text that arrives in pieces (a streamed answer): a secret split across two
    pieces is still caught. `feed` returns what is safe to show now, holding back a tail that could be
    the start of a known secret; `flush` returns the rest when the stream ends."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        data = redact_known(self._pending + text)
        hold = _longest_secret_prefix_suffix(data)
        self._pending = data[len(data) - hold :] if hold else ""
        return data[: len(data) - hold] if hold else data

    def flush(self) -> str:
        rest, self._pending = redact_known(self._pending), ""
        return rest


def _longest_secret_prefix_suffix(text: str) -> int:
    """Length of the longest end of `text` that begins some known secret (0 when none does)."""
    best = 0
    for value in _ordered:
        for size in range(min(len(value) - 1, len(text)), best, -1):
            if value.startswith(text[-size:]):
                best = size
                break
    return best
