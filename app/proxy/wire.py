"""What a proxied request is: which API (by its path), which client (by its User-Agent), which model."""

from __future__ import annotations

import re
from enum import StrEnum

from app.textsafe import display_line


class Wire(StrEnum):
    """The API a request speaks; it decides the shape of every error the proxy itself writes."""

    ANTHROPIC = "anthropic"  # Messages API (incl. count_tokens, models)
    OPENAI_CHAT = "openai-chat"  # Chat Completions
    OPENAI_RESPONSES = "openai-responses"  # Responses (incl. responses/compact)
    OTHER = "other"  # anything else: forwarded, recorded, never translated

    @property
    def provider(self) -> str:
        """The provider a bulkhead route for this API names (`anthropic` or `openai`)."""
        return {Wire.ANTHROPIC: "anthropic", Wire.OTHER: ""}.get(self, "openai")

    @property
    def generates(self) -> bool:
        """An API whose requests carry a conversation (the ones translate, early reject and shrink act on)."""
        return self is not Wire.OTHER


def wire_for(method: str, path: str, headers_say_anthropic: bool) -> Wire:
    """The API of `method path` (a path prefix before `/v1/…` is allowed, as gateways add one)."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith(("/v1/messages", "/v1/messages/count_tokens", "/messages", "/messages/count_tokens")):
        return Wire.ANTHROPIC
    if path.endswith("/chat/completions"):
        return Wire.OPENAI_CHAT
    if path.endswith(("/responses", "/responses/compact")):
        return Wire.OPENAI_RESPONSES
    if path.endswith("/models") or "/models/" in path:
        return Wire.ANTHROPIC if headers_say_anthropic else Wire.OPENAI_CHAT
    return Wire.OTHER


def is_conversation(method: str, path: str) -> bool:
    """A request that carries a conversation the model reads (not a model list, not a token count)."""
    path = path.split("?", 1)[0].rstrip("/")
    return method == "POST" and path.endswith(("/messages", "/chat/completions", "/responses", "/compact"))


_KNOWN_CLIENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^claude-cli/(\S+)", re.I), "Claude Code {0}"),
    (re.compile(r"^codex_exec/(\S+)", re.I), "Codex {0} (exec)"),
    (re.compile(r"^codex[\w-]*/(\S+)", re.I), "Codex {0}"),
    (re.compile(r"^opencode/(\S+)", re.I), "opencode {0}"),
    (re.compile(r"^goose/(\S+)", re.I), "goose {0}"),
    (re.compile(r"^Anthropic/Python (\S+)", re.I), "anthropic-python {0}"),
    (re.compile(r"^AsyncAnthropic/Python (\S+)", re.I), "anthropic-python {0}"),
    (re.compile(r"^Anthropic/JS (\S+)", re.I), "anthropic-js {0}"),
    (re.compile(r"^(?:Async)?OpenAI/Python (\S+)", re.I), "openai-python {0}"),
    (re.compile(r"^OpenAI/JS (\S+)", re.I), "openai-js {0}"),
)
CLIENT_NAME_CHARS = 48


def client_name(user_agent: str) -> str:
    """A short name for the client from its User-Agent (`Claude Code 2.1.197`), else the UA's first
    product token; shown through `display_line`, so a hostile User-Agent prints safely."""
    agent = user_agent.strip()
    if not agent:
        return "unknown client"
    for pattern, name in _KNOWN_CLIENTS:
        match = pattern.match(agent)
        if match:
            return display_line(name.format(match.group(1)))[:CLIENT_NAME_CHARS]
    return display_line(agent.split(" ", 1)[0])[:CLIENT_NAME_CHARS]


_MODEL_RE = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.){1,200})"')
MODEL_SNIFF_BYTES = 64 * 1024


def sniff_model(body_head: bytes) -> str:
    """The `model` a request body names, read from its first bytes without parsing the whole body."""
    match = _MODEL_RE.search(body_head[:MODEL_SNIFF_BYTES])
    if not match:
        return ""
    return display_line(match.group(1).decode("utf-8", "replace"))[:120]


def sniff_stream(body_head: bytes) -> bool | None:
    """Whether a request asks for a streamed answer (`"stream": true`), when its first bytes say."""
    match = re.search(rb'"stream"\s*:\s*(true|false)', body_head[:MODEL_SNIFF_BYTES])
    return None if match is None else match.group(1) == b"true"
