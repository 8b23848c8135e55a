"""The errors a client's own provider sends, so the client's own recovery acts on a gateway's refusal.

A gateway's 413 page means nothing to Claude Code or Codex: they retry it or give up. The same refusal
worded as their provider words a context overflow makes their own compaction run. Which wording each
client acts on was measured with the real clients (README, "Using bulkhead's recovery with other
agents"); `OverflowStyle` names the candidates. Every message also says, in words, which hop refused,
the evidence and the learned cap — for the person reading the client's error line.

A content block is never worded as an overflow (compacting would not help): it becomes a
non-retryable invalid-request error that says the gateway refused the content, with its incident ID.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass
from enum import StrEnum

from app.proxy.wire import Wire
from app.sizes import format_size

BYTES_PER_TOKEN = 4  # the estimate bulkhead uses everywhere (DESIGN.md §4)


class OverflowStyle(StrEnum):
    """How a size refusal is worded for the client."""

    REQUEST_TOO_LARGE = "request-too-large"  # Anthropic 413 request_too_large
    PROMPT_TOO_LONG = "prompt-too-long"  # Anthropic 400 invalid_request_error "prompt is too long: N > M"
    CONTEXT_LENGTH_EXCEEDED = "context-length-exceeded"  # OpenAI 400 code context_length_exceeded


DEFAULT_STYLE = {
    Wire.ANTHROPIC: OverflowStyle.PROMPT_TOO_LONG,
    Wire.OPENAI_CHAT: OverflowStyle.CONTEXT_LENGTH_EXCEEDED,
    Wire.OPENAI_RESPONSES: OverflowStyle.CONTEXT_LENGTH_EXCEEDED,
}
STYLES_FOR = {
    Wire.ANTHROPIC: (OverflowStyle.PROMPT_TOO_LONG, OverflowStyle.REQUEST_TOO_LARGE),
    Wire.OPENAI_CHAT: (OverflowStyle.CONTEXT_LENGTH_EXCEEDED,),
    Wire.OPENAI_RESPONSES: (OverflowStyle.CONTEXT_LENGTH_EXCEEDED,),
}


@dataclass(frozen=True)
class Answer:
    """A response the proxy writes itself."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes


@dataclass(frozen=True)
class Refusal:
    """What the proxy knows about a size refusal, for the words of the translated error."""

    hop: str  # "nginx at 127.0.0.1:8080"
    rejected_bytes: int | None  # the refused body (None: unknown)
    cap_bytes: int | None  # the learned (or configured) cap now in force
    evidence: tuple[str, ...]
    early: bool = False  # answered by the proxy before sending (--early-reject)


def tokens(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / BYTES_PER_TOKEN))


def _explanation(refusal: Refusal) -> str:
    size = format_size(refusal.rejected_bytes) if refusal.rejected_bytes else "this"
    if refusal.early:
        said = (
            f"bulkhead proxy answered for {refusal.hop}: the {size} request body is over the cap it "
            f"learned ({format_size(refusal.cap_bytes)}), so it was not sent"
        )
    else:
        said = f"bulkhead proxy: {refusal.hop} refused the {size} request body"
        if refusal.cap_bytes:
            said += f"; cap learned: {format_size(refusal.cap_bytes)}"
    evidence = "; ".join(refusal.evidence[:4])
    return said + (f" (evidence: {evidence})" if evidence else "") + ". Make the conversation smaller."


def _token_pair(refusal: Refusal) -> tuple[int, int]:
    """(tokens of the refused request, tokens that would fit): a client that drops history by the gap
    between them (Claude Code does) drops about enough to pass the cap."""
    sent = tokens(refusal.rejected_bytes or 0)
    limit = tokens(refusal.cap_bytes) if refusal.cap_bytes else max(1, sent * 3 // 4)
    return max(sent, limit + 1), limit


def overflow(wire: Wire, style: OverflowStyle, refusal: Refusal) -> Answer:
    """The client's own provider's overflow error for a size refusal."""
    sent, limit = _token_pair(refusal)
    words = _explanation(refusal)
    if style is OverflowStyle.REQUEST_TOO_LARGE:
        return _anthropic(413, "request_too_large", f"Request exceeds the maximum size. {words}")
    if style is OverflowStyle.PROMPT_TOO_LONG:
        return _anthropic(
            400, "invalid_request_error", f"prompt is too long: {sent} tokens > {limit} maximum. {words}"
        )
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in {sent} "
        f"tokens. Please reduce the length of the messages. {words}"
    )
    return _openai(
        400,
        message,
        code="context_length_exceeded",
        param="messages" if wire is Wire.OPENAI_CHAT else "input",
    )


def content_block(wire: Wire, *, hop: str, incident: str | None, evidence: tuple[str, ...]) -> Answer:
    """A non-retryable error for a content block: not an overflow, never worth a retry or a compaction."""
    where = f" ({incident})" if incident else ""
    message = (
        f"bulkhead proxy: {hop} refused the content of this request{where}, not its size — retrying or "
        f"compacting sends the same text and is refused again. Remove or reword what it objects to (the "
        f"newest tool output, an attached file or the prompt), or ask the network team to review the "
        f"block{' quoting that reference' if incident else ''}."
    )
    if evidence:
        message += f" Evidence: {'; '.join(evidence[:4])}."
    if wire is Wire.ANTHROPIC:
        return _anthropic(400, "invalid_request_error", message)
    return _openai(400, message, code="gateway_content_blocked", param=None)


def unreachable(wire: Wire, message: str) -> Answer:
    """The upstream could not be reached (or the proxy failed): a 502 in the client's API shape."""
    if wire is Wire.ANTHROPIC:
        return _anthropic(502, "api_error", message, retry=True)
    return _openai(502, message, code="upstream_unreachable", param=None, kind="server_error", retry=True)


def _headers(retry: bool) -> tuple[tuple[str, str], ...]:
    return (
        ("content-type", "application/json"),
        ("x-should-retry", "true" if retry else "false"),  # both SDKs obey it
        ("x-bulkhead-proxy", "answered"),
    )


def _anthropic(status: int, kind: str, message: str, *, retry: bool = False) -> Answer:
    request_id = "req_bulkhead" + uuid.uuid4().hex[:20]
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return Answer(status, (*_headers(retry), ("request-id", request_id)), _json(body))


def _openai(
    status: int,
    message: str,
    *,
    code: str,
    param: str | None,
    kind: str = "invalid_request_error",
    retry: bool = False,
) -> Answer:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return Answer(
        status, (*_headers(retry), ("x-request-id", "req_bulkhead" + uuid.uuid4().hex[:20])), _json(body)
    )


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def plain(status: int, message: str) -> Answer:
    """An error of the proxy's own (a bad request head, an unknown control path)."""
    body = json.dumps({"error": {"message": f"bulkhead proxy: {message}"}}).encode()
    return Answer(status, (("content-type", "application/json"),), body)
