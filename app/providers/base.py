"""The one provider interface, and the error every adapter raises.

    request = provider.build(view, system, tools, max_tokens=...)   # predicted body size known
    async for event in provider.stream(request): ...                # TextChunk, ToolCallChunk, ...

Adapters translate bulkhead's messages to their wire format, measure the body exactly
(cached per immutable message), record the bytes that really crossed the wire, and wrap
every SDK exception into `ProviderError` (provenance: only these are ever "recovered").

This module must not import any SDK: importing `app.providers` stays cheap.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import json.encoder
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.config import Route, Settings
from app.model.archive import LEGACY_MARKER_PREFIX, current_markers
from app.model.costs import Usage
from app.model.events import RequestPurpose
from app.model.messages import Message, Text, ToolResult
from app.model.tools import ToolSpec

SUMMARY_PURPOSE: RequestPurpose = "summary"


def _unserializable(obj: Any) -> Any:
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def one_encoder(
    default: Callable[[Any], Any], *, ascii_only: bool, separators: tuple[str, str], allow_nan: bool
) -> Callable[[Any, int], list[str]] | None:
    """`json.dumps`'s C encoder with these options, to make once and keep: `json.dumps` with non-default options
    builds a new encoder (and its C core) for every call, and a long session's first measure serializes every
    block of it (half of that went to building encoders). No cycle check (a request body is a tree); None
    without the C module. `encoder(obj, 0)` gives the JSON as a list of strings. The argument order is
    `json.encoder`'s own."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    strings = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    item_separator, key_separator = separators
    encoder: Callable[[Any, int], list[str]] = make(
        None, default, strings, None, key_separator, item_separator, False, False, allow_nan
    )
    return encoder


_ENCODE = one_encoder(_unserializable, ascii_only=False, separators=(",", ":"), allow_nan=False)


def dumps(obj: Any) -> bytes:
    """Exactly how the httpx-based SDKs serialize a JSON body (compact, UTF-8, no ASCII escaping)."""
    if _ENCODE is None:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return "".join(_ENCODE(obj, 0)).encode("utf-8")


# How `dumps` writes a string: its UTF-8 bytes as they are, but `"`, `\\` and the control characters
# escaped — as two characters (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`) or as six (`\u00XX`, the others).
# No byte of a multi-byte UTF-8 sequence is below 0x80, so counting those bytes counts those characters.
_KEPT_BYTES = bytes(b for b in range(256) if b >= 0x20 and b not in b'"\\')
_TWO_CHARACTER_ESCAPES = b'"\\\b\f\n\r\t'


def string_len(text: str) -> int:
    """Bytes of `text` as a JSON string in `dumps` (quotes included), counted without building the
    escaped copy: its UTF-8 bytes, plus one for each character escaped as two and five for each escaped
    as six. A lone surrogate raises UnicodeEncodeError, as `dumps` does."""
    raw = text.encode("utf-8")
    escaped = raw.translate(None, _KEPT_BYTES)  # only the bytes that are escaped
    return len(raw) + 2 + len(escaped) + 4 * len(escaped.translate(None, _TWO_CHARACTER_ESCAPES))


@dataclass
class Request:
    """A provider request ready to send. `body` is the exact JSON body (or Bedrock's params)."""

    provider: str
    route: str
    model: str
    url: str
    body: dict[str, Any]
    predicted_bytes: int
    max_tokens: int
    purpose: RequestPurpose = "chat"
    message_count: int = 0
    # Filled in by the transport as the request goes out and comes back:
    actual_bytes: int | None = None
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    # When the transport sent it (time.monotonic()): after the SDK import, the client and a lazy lab start,
    # so a request's latency is the network's and the server's time, not bulkhead's own setup.
    sent_at: float | None = None


# -- what stream() yields -------------------------------------------------------------------------
@dataclass(frozen=True)
class TextChunk:
    text: str


@dataclass(frozen=True)
class ToolCallChunk:
    """A complete tool call (adapters assemble the streamed JSON arguments first)."""

    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class UsageChunk:
    usage: Usage


@dataclass(frozen=True)
class StopChunk:
    """Why the model stopped, normalised: end | max_tokens | tool_use | stop_sequence | other."""

    reason: str
    raw: str = ""


@dataclass(frozen=True)
class NativeChunk:
    """A provider item to keep in the answer and replay verbatim: a compaction block/item, or an
    OpenAI reasoning item with its encrypted content (see `app.model.messages.Native`)."""

    api: str
    item: dict[str, Any]


@dataclass(frozen=True)
class EditsChunk:
    """Context edits the provider applied to this request before the model read it (Anthropic's
    `context_management.applied_edits`): how many edits, tool uses and input tokens they cleared."""

    edits: int
    cleared_tool_uses: int
    cleared_input_tokens: int
    kinds: tuple[str, ...] = ()


StreamEvent = TextChunk | ToolCallChunk | UsageChunk | StopChunk | NativeChunk | EditsChunk


@dataclass(frozen=True)
class ListedModel:
    """A model an endpoint says it offers: its id, a display name, and its window when the endpoint
    says (vLLM's `max_model_len`); `note` says how it is reached (e.g. "inference profile")."""

    id: str
    name: str = ""
    window: int | None = None
    note: str = ""


def sendable_view(view: Sequence[Message]) -> Sequence[Message]:
    """`view` with the legacy marker rewritten in its text and tool results (the same message ids, so the
    providers' per-message caches stay right: the rewrite is the same every time). Thinking blocks are
    signed and never touched. The view itself is returned when nothing needs it."""
    out: list[Message] | None = None
    for index, message in enumerate(view):
        parts = tuple(_sendable_part(part) for part in message.parts)
        if any(new is not old for new, old in zip(parts, message.parts, strict=True)):
            if out is None:
                out = list(view)
            out[index] = dataclasses.replace(message, parts=parts)
    return view if out is None else out


def _sendable_part(part: Any) -> Any:
    if isinstance(part, Text) and LEGACY_MARKER_PREFIX in part.text:
        return Text(current_markers(part.text))
    if isinstance(part, ToolResult) and LEGACY_MARKER_PREFIX in part.content:
        return dataclasses.replace(part, content=current_markers(part.content))
    return part


class ProviderError(Exception):
    """Any failure of a provider call, with everything the classifier and the inspector need."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        original: BaseException | None = None,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: str | None = None,
        request_bytes: int | None = None,
        output_visible: bool = False,
        retry_after: float | None = None,
        error_type: str | None = None,
        transport: str | None = None,
        request_header_bytes: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.original = original
        self.status = status
        self.headers = dict(headers or {})
        self.body = body
        self.request_bytes = request_bytes
        self.output_visible = output_visible
        self.retry_after = retry_after
        self.error_type = error_type  # e.g. the SDK class name or the API's error type
        self.transport = transport  # e.g. "connection", "timeout", "html-200", "stream-error"
        self.request_header_bytes = request_header_bytes  # bytes of the request's header block, when known

    def __repr__(self) -> str:
        return (
            f"ProviderError({self.provider}, status={self.status}, bytes={self.request_bytes}, "
            f"type={self.error_type}, transport={self.transport}: {self.message[:120]!r})"
        )


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after` (seconds or HTTP date) or `retry-after-ms`."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from datetime import UTC, datetime
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class ProbeFloor:
    """What every chat request of a route carries besides its messages — the system prompt (with the project's
    instructions), the tool definitions and the extra headers (betas) — sent with each probe, so a probe sees
    what chat sees (a gateway that blocks every chat request by its tools does not pass a bare probe)."""

    system: str = ""
    tools: tuple[ToolSpec, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeReply:
    """A probe request the gateway let through: the status and the body bytes that crossed the wire."""

    status: int
    actual_bytes: int | None


class Provider(abc.ABC):
    """One route's adapter. Construct cheaply; SDK clients are created lazily on first use."""

    kind: str = ""
    probe_method: str = ""  # how `probe()` reaches the provider without running the model, and why

    def __init__(self, route: Route, settings: Settings, api_key: str | None = None) -> None:
        self.route = route
        self.settings = settings
        self.api_key = api_key
        # context_engine = "provider": input tokens at which the provider should compact (set by the engine)
        self.compact_threshold: int | None = None
        # betas this route's endpoint refused or stripped (its gateway profile): never sent there
        self.refused_betas: frozenset[str] = frozenset()

    def build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        """Translate a view into a request, with its exact predicted body size. What is sent never carries
        the legacy archive marker `<<ccr:KEY>>` (views stored before the marker changed hold it; a PL2 CRS
        refuses it): it is written `[[ccr:KEY]]` here, for every provider and purpose, while the stored view
        and the master log stay as they are."""
        return self._build(sendable_view(view), system, tools, max_tokens=max_tokens, purpose=purpose)

    @abc.abstractmethod
    def _build(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int,
        purpose: RequestPurpose = "chat",
    ) -> Request:
        """The provider's own translation of a view into a request (see `build`)."""

    @abc.abstractmethod
    def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        """Send `request` and yield its events. Every failure is raised as ProviderError."""

    def measure(
        self, view: Sequence[Message], system: str, tools: Sequence[ToolSpec], *, max_tokens: int
    ) -> int:
        """Predicted body bytes for a view (incremental: per-message sizes are cached)."""
        return self.build(view, system, tools, max_tokens=max_tokens).predicted_bytes

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        """Send a body of about `size` bytes that costs nothing at the model (see `bulkhead probe`), carrying
        `floor` (the route's system prompt, tools and headers; the body is never smaller than it).

        Returns when the provider answered (even with an error about the request itself);
        raises ProviderError for everything else, exactly as `stream()` does.
        """
        raise NotImplementedError(f"{self.kind} routes cannot be probed")

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        """Send `texts` (each its own content block of one user message) the way `probe` sends its filler:
        through the same SDK, path and headers, to an endpoint that does not run the model. For finding
        which text a content-inspecting gateway refuses (app.engine.content_finder); raises ProviderError."""
        raise NotImplementedError(f"{self.kind} routes cannot be probed")

    async def list_models(self) -> list[ListedModel]:
        """The models this route's endpoint offers (for the /model picker); raises ProviderError."""
        raise NotImplementedError(f"{self.kind} routes cannot list their models")

    def chat_headers(self) -> dict[str, str]:
        """The headers a chat request adds to the client's own (e.g. Anthropic's `anthropic-beta`)."""
        return {}

    @property
    def endpoint_url(self) -> str:
        return self.route.base_url or self.route.endpoint_url or ""

    async def prepare(self) -> None:  # noqa: B027 - optional hook
        """Do the first request's local setup ahead (the SDK import, the client, a lazy lab start), best effort:
        what fails here is the request's to report. Called while MCP servers start (app.engine.mcp_link), so
        the two overlap instead of adding up."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    # -- provider-native context management (context_engine = "provider") ----------------------------
    native_compaction: str = ""  # how this provider compacts natively, for `config check`; "" = it cannot

    def build_compaction(
        self,
        view: Sequence[Message],
        system: str,
        tools: Sequence[ToolSpec],
        *,
        instructions: str | None = None,
    ) -> Request:
        """The request that asks the provider to compact `view` now (Anthropic's `compaction`
        parameter, OpenAI's `/responses/compact`). NotImplementedError where there is none."""
        raise NotImplementedError(f"{self.kind} has no native compaction")

    async def send_compaction(self, request: Request) -> tuple[list[NativeChunk], Usage | None]:
        """Send a `build_compaction` request: the compaction item(s) it returned and its usage.
        Every failure is a ProviderError, as in stream()."""
        raise NotImplementedError(f"{self.kind} has no native compaction")
