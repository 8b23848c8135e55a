"""What the adapters share: per-message size caching, the exchange record, error provenance.

Exact bytes, incrementally: a body is `envelope + messages`. Each bulkhead message is
translated and serialized once (messages are immutable, so its id is a sound cache key);
the body's size is then the envelope's size plus the cached sizes plus the separators
between them. Predicting a 10 MB view after one new message serializes one message.

Provenance: the SDK exceptions are recognised by attributes and class names only (the
SDKs ship their own transport package; none of them is imported here).
"""

from __future__ import annotations

import contextvars
import json
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from app.providers.base import ProviderError, Request, StreamEvent, dumps, parse_retry_after, string_len
from app.providers.html import decode_body, looks_like_html, page_heading
from app.redact import redact_headers

T = TypeVar("T")

_LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")
LONG_STRING = 4096  # characters: a string this long is measured by counting (`compact_len`)
PIECE_CACHE_LIMIT = 200_000  # messages; far more than any view holds
ERROR_BODY_LIMIT = 1 << 20  # bytes of an error body kept on ProviderError


def without_userinfo(url: str) -> str:
    """`url` without a `user:password@` part. The SDKs' HTTP client turns one into `Authorization: Basic …`,
    which replaced the route's key (OpenAI's Bearer, Anthropic's x-api-key): the key is what authenticates."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def has_userinfo(url: str | None) -> bool:
    from urllib.parse import urlsplit

    return bool(url) and "@" in urlsplit(url or "").netloc


def is_local_url(url: str | None) -> bool:
    """True for a base URL on this machine (localhost, 127.x, ::1): such servers need no API key."""
    if not url:
        return False
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.")


# -- sizes --------------------------------------------------------------------------------------


def compact_len(obj: Any) -> int:
    """Bytes of `obj` as the httpx-based SDKs send it (compact separators, raw UTF-8).

    A block's long strings (a text, a tool result: at least `LONG_STRING` characters) are counted
    (`string_len`) rather than escaped and copied: a resumed 10 MB view is measured in under half the time.
    """
    if type(obj) is dict:
        for value in obj.values():
            if type(value) is str and len(value) >= LONG_STRING:
                return _counted_len(obj)
    return len(dumps(obj))


def _counted_len(block: dict[str, Any]) -> int:
    skeleton, counted = {}, 0
    for key, value in block.items():
        if type(value) is str and len(value) >= LONG_STRING:
            counted += string_len(value) - 2  # the skeleton keeps its quotes: ""
            value = ""
        skeleton[key] = value
    return len(dumps(skeleton)) + counted


def list_len(item_sizes: Sequence[int], separator: int) -> int:
    """Bytes of a JSON array whose items serialize to `item_sizes`: `[`, items joined by a
    separator of `separator` bytes (`,` for the SDKs, `, ` for botocore), `]`."""
    count = len(item_sizes)
    return 2 + sum(item_sizes) + (separator * (count - 1) if count else 0)


def body_len(envelope: Mapping[str, Any], known: Mapping[str, int], measure: Callable[[Any], int]) -> int:
    """Bytes of `envelope` where the values under the keys of `known` have known sizes.

    The envelope is serialized with `0` (one byte) in those places, which is then swapped
    for the real sizes: the big values themselves are never serialized here.
    """
    skeleton = {key: (0 if key in known else value) for key, value in envelope.items()}
    return measure(skeleton) + sum(size - 1 for size in known.values())


class PieceCache(Generic[T]):
    """Translated, measured messages by id. `serialized` counts cache misses (for tests)."""

    def __init__(self, limit: int = PIECE_CACHE_LIMIT) -> None:
        self._data: OrderedDict[str, T] = OrderedDict()
        self._limit = limit
        self.serialized = 0

    def get(self, key: str, make: Callable[[], T]) -> T:
        hit = self._data.get(key)
        if hit is not None:
            self._data.move_to_end(key)
            return hit
        piece = make()
        self.serialized += 1
        self._data[key] = piece
        if len(self._data) > self._limit:
            self._data.popitem(last=False)
        return piece

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()


class OneSlot:
    """Remembers one value computed from a tuple of objects, compared by identity. The key and its value are
    kept as one pair, so a measure in another thread (`Engine.warm_sizes`) never pairs one's key with the
    other's value."""

    def __init__(self) -> None:
        self._slot: tuple[tuple[Any, ...], Any] | None = None

    def get(self, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        slot = self._slot
        if (
            slot is not None
            and len(slot[0]) == len(key)
            and all(a is b for a, b in zip(slot[0], key, strict=True))
        ):
            return slot[1]
        value = make()
        self._slot = (key, value)
        return value


class Turn:
    """A wire message being assembled from consecutive same-role pieces.

    Blocks that `leads(block)` says must come first (tool results, which have to answer the
    assistant's tool calls directly) are kept ahead of the others, each with its size.
    """

    __slots__ = ("role", "_lead", "_lead_sizes", "_rest", "_rest_sizes")

    def __init__(self, role: str) -> None:
        self.role = role
        self._lead: list[dict[str, Any]] = []
        self._lead_sizes: list[int] = []
        self._rest: list[dict[str, Any]] = []
        self._rest_sizes: list[int] = []

    def add(
        self, blocks: Sequence[dict[str, Any]], sizes: Sequence[int], leads: Callable[[dict[str, Any]], bool]
    ) -> None:
        for block, size in zip(blocks, sizes, strict=True):
            if leads(block):
                self._lead.append(block)
                self._lead_sizes.append(size)
            else:
                self._rest.append(block)
                self._rest_sizes.append(size)

    def content(self) -> tuple[list[dict[str, Any]], list[int]]:
        """Fresh lists (the caller may append cache marks): blocks and their sizes."""
        return self._lead + self._rest, self._lead_sizes + self._rest_sizes


# -- the exchange: what crossed the wire ---------------------------------------------------------


@dataclass
class Exchange:
    """Facts about one request as it goes out and comes back, filled in by transport hooks."""

    actual_bytes: int | None = None
    request_header_bytes: int | None = None  # the header block as sent ("Name: value\r\n" each)
    request_headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    error_body: str | None = None  # raw body of an error response, when a hook saw it
    unexpected_body: str | None = None  # a 200 body that is not the stream we asked for
    saw_done: bool = False  # an SSE stream carried OpenAI's `data: [DONE]` terminator
    sent_at: float | None = None  # time.monotonic() when the request first went out (a redirect keeps it)

    def saw_request(self, size: int | None, headers: Mapping[Any, Any] | None) -> None:
        if self.sent_at is None:
            self.sent_at = time.monotonic()
        self.actual_bytes = size
        self.request_header_bytes = header_block_bytes(headers)
        self.request_headers = redact_headers(_text_headers(headers))
        # a new attempt (e.g. a followed redirect) starts without a response
        self.status = None
        self.response_headers = {}

    def saw_response(self, status: int | None, headers: Mapping[Any, Any] | None) -> None:
        self.status = status
        self.response_headers = _text_headers(headers)

    def apply(self, request: Request) -> None:
        if self.actual_bytes is not None:
            request.actual_bytes = self.actual_bytes
        if self.request_headers:
            request.request_headers = dict(self.request_headers)
        if self.status is not None:
            request.status = self.status
        if self.response_headers:
            request.response_headers = dict(self.response_headers)
        if self.sent_at is not None:
            request.sent_at = self.sent_at


CURRENT_EXCHANGE: contextvars.ContextVar[Exchange | None] = contextvars.ContextVar(
    "bulkhead_exchange", default=None
)


def header_block_bytes(headers: Mapping[Any, Any] | Sequence[Any] | None) -> int | None:
    """Bytes of a request's header lines as HTTP/1.1 sends them (`Name: value` + CRLF each)."""
    if not headers:
        return None
    items = (
        headers.raw
        if hasattr(headers, "raw")
        else (headers.items() if hasattr(headers, "items") else headers)
    )
    total = 0
    try:
        for key, value in items:
            key = key if isinstance(key, bytes) else str(key).encode("latin-1", "replace")
            value = value if isinstance(value, bytes) else str(value).encode("latin-1", "replace")
            total += len(key) + 2 + len(value) + 2
    except (TypeError, ValueError):
        return None
    return total


def _text_headers(headers: Mapping[Any, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    if not headers:
        return out
    items = headers.items() if hasattr(headers, "items") else headers
    for key, value in items:
        key = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        value = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        out[key.lower()] = value
    return out


async def httpx_request_hook(request: Any) -> None:
    """Event hook for the SDKs' httpx client: record the exact body that is about to go out."""
    exchange = CURRENT_EXCHANGE.get()
    if exchange is None:
        return
    try:
        size = len(request.content)
    except Exception:  # a streaming body has no content yet
        size = _content_length(request.headers)
    exchange.saw_request(size, request.headers)


async def httpx_response_hook(response: Any) -> None:
    exchange = CURRENT_EXCHANGE.get()
    if exchange is not None:
        exchange.saw_response(response.status_code, response.headers)
        if "event-stream" in response.headers.get("content-type", "").lower():
            stream = getattr(response, "stream", None)
            tap = _done_tap_class(type(stream)) if stream is not None else None
            if tap is not None:
                response.stream = tap(stream, exchange)


_DONE_MARK = b"[DONE]"
_TAPS: dict[type, type] = {}


def _done_tap_class(stream_type: type) -> type | None:
    """A wrapper for a streamed SSE body that notes whether `data: [DONE]` went by (the SDKs swallow it,
    and a close-delimited body that a proxy cut ends just as quietly); bytes pass through untouched.

    It subclasses the transport's own `AsyncByteStream` (found on the stream's class: the SDKs ship
    their own httpx), which the response checks for."""
    if stream_type in _TAPS:
        return _TAPS[stream_type]
    base = next((cls for cls in stream_type.__mro__ if cls.__name__ == "AsyncByteStream"), None)
    if base is None:
        _TAPS[stream_type] = None  # type: ignore[assignment]
        return None

    class DoneTap(base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: Any, exchange: Exchange) -> None:
            self._stream = stream
            self._exchange = exchange
            self._tail = b""

        async def __aiter__(self):
            async for chunk in self._stream:
                if not self._exchange.saw_done and chunk:
                    window = self._tail + bytes(chunk)
                    if _DONE_MARK in window:
                        self._exchange.saw_done = True
                    self._tail = window[-len(_DONE_MARK) :]
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    _TAPS[stream_type] = DoneTap
    return DoneTap


def _content_length(headers: Any) -> int | None:
    try:
        return int(headers.get("content-length"))
    except (TypeError, ValueError):
        return None


# -- errors -------------------------------------------------------------------------------------

_TIMEOUT_NAMES = frozenset(
    {
        "APITimeoutError",
        "TimeoutException",
        "ReadTimeout",
        "WriteTimeout",
        "ConnectTimeout",
        "PoolTimeout",
        "ReadTimeoutError",
        "ConnectTimeoutError",
        "TimeoutError",
    }
)
_CONNECTION_NAMES = frozenset(
    {
        "APIConnectionError",
        "TransportError",
        "NetworkError",
        "ProtocolError",
        "RemoteProtocolError",
        "LocalProtocolError",
        "ReadError",
        "WriteError",
        "ConnectError",
        "CloseError",
        "ConnectionClosedError",
        "EndpointConnectionError",
        "ConnectionError",
        "ConnectionResetError",
        "BrokenPipeError",
        "ConnectionAbortedError",
        "ConnectionRefusedError",
        "IncompleteRead",
        "RemoteDisconnected",
        "ResponseStreamingError",
        "IncompleteStreamError",
        "HTTPClientError",
    }
)


def transport_kind(exc: BaseException) -> str | None:
    """ "timeout" or "connection" for transport failures (by class names along the MRO)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _TIMEOUT_NAMES:
        return "timeout"
    if names & _CONNECTION_NAMES:
        return "connection"
    return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def _body_text(body: Any) -> str | None:
    if body is None:
        return None
    if isinstance(body, (str, bytes)):
        return decode_body(body, ERROR_BODY_LIMIT)
    try:
        return json.dumps(body, ensure_ascii=False)[:ERROR_BODY_LIMIT]
    except (TypeError, ValueError):
        return str(body)[:ERROR_BODY_LIMIT]


def sdk_error(
    provider: str,
    exc: BaseException,
    exchange: Exchange,
    *,
    in_stream: bool,
    type_attrs: tuple[str, ...] = ("type",),
) -> ProviderError:
    """A ProviderError for anything the anthropic/openai SDKs (or their transport) raised."""
    name = type(exc).__name__
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None)
    if status is None and in_stream:
        status = exchange.status
    headers = exchange.response_headers
    if response is not None and getattr(response, "headers", None) is not None:
        headers = _text_headers(response.headers)
        if status is None:
            status = getattr(response, "status_code", None)
    body: str | None = None
    if response is not None and not in_stream:
        try:
            body = decode_body(response.content, ERROR_BODY_LIMIT)
        except Exception:  # a streamed response that was never read
            body = None
    if not body:
        body = _body_text(getattr(exc, "body", None))
    request_bytes = exchange.actual_bytes
    if request_bytes is None:
        try:
            request_bytes = len(exc.request.content)  # type: ignore[attr-defined]
        except Exception:  # not every exception carries a request
            request_bytes = None
    error_type = None
    for attr in type_attrs:
        value = getattr(exc, attr, None)
        if isinstance(value, str) and value:
            error_type = value
            break
    transport = transport_kind(exc)
    if transport is None and in_stream:
        transport = "stream-error"
    elif transport is None and status is not None:
        transport = "http"  # an HTTP error answer (the classifier reads how the answer arrived)
    error_type = error_type or name
    where = f"HTTP {status}" if status is not None else (transport or "error")
    detail = _short(str(exc) or name)
    if body and looks_like_html(body) and str(exc).strip() == body.strip():
        detail = "HTML page" + (f" ({_html_title(body)})" if _html_title(body) else "")
    return ProviderError(
        f"{provider}: {where} {error_type}: {detail}",
        provider=provider,
        original=exc,
        status=status,
        headers=headers,
        body=body,
        request_bytes=request_bytes,
        retry_after=parse_retry_after(headers),
        error_type=error_type,
        transport=transport,
        request_header_bytes=exchange.request_header_bytes,
    )


def unexpected_200(
    provider: str,
    body: str,
    exchange: Exchange,
    *,
    original: BaseException | None = None,
    content_type: str | None = None,
) -> ProviderError:
    """A 200 whose body is not the stream we asked for: an HTML page (captive portal, block page)
    or anything else a middlebox answered with."""
    html = looks_like_html(body, content_type)
    transport = "html-200" if html else "non-sse-200"
    what = (
        "an HTML page" + (f" ({_html_title(body)})" if html and _html_title(body) else "")
        if html
        else f"a non-stream body ({content_type or 'no content type'})"
    )
    return ProviderError(
        f"{provider}: HTTP 200 carried {what} instead of the API's stream",
        provider=provider,
        original=original,
        status=exchange.status or 200,
        headers=exchange.response_headers,
        body=body[:ERROR_BODY_LIMIT],
        request_bytes=exchange.actual_bytes,
        retry_after=parse_retry_after(exchange.response_headers),
        error_type="HTMLResponse" if html else "UnexpectedResponse",
        transport=transport,
    )


def wrap_unknown(provider: str, exc: BaseException, exchange: Exchange, *, in_stream: bool) -> ProviderError:
    """Anything else (a parser bug, a malformed event): still a ProviderError, with what we know."""
    transport = transport_kind(exc) or ("stream-error" if in_stream else None)
    return ProviderError(
        f"{provider}: {type(exc).__name__}: {_short(str(exc))}",
        provider=provider,
        original=exc,
        status=exchange.status,
        headers=exchange.response_headers,
        body=exchange.error_body,
        request_bytes=exchange.actual_bytes,
        retry_after=parse_retry_after(exchange.response_headers),
        error_type=type(exc).__name__,
        transport=transport,
    )


def incomplete_stream(provider: str, exchange: Exchange) -> ProviderError:
    """The stream ended cleanly but before the model said it had stopped: a cut connection."""
    return ProviderError(
        f"{provider}: the response stream ended before the message was complete",
        provider=provider,
        status=exchange.status,
        headers=exchange.response_headers,
        request_bytes=exchange.actual_bytes,
        error_type="IncompleteStream",
        transport="connection",
    )


def _html_title(body: str) -> str:
    return page_heading(body)


def get(obj: Any, key: str, default: Any = None) -> Any:
    """`obj[key]` for dicts, `obj.key` for SDK models: events are read the same either way."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        value = obj.get(key, default)
    else:
        value = getattr(obj, key, default)
    return default if value is None else value


class MalformedEvent(ValueError):
    """A stream event whose fields are not what the wire format says (a proxy mangled it, or a bug)."""


def text_field(obj: Any, key: str) -> str:
    """A string field of an event ("" when absent); anything but a string is a malformed event."""
    value = get(obj, key, "")
    if not isinstance(value, str):
        raise MalformedEvent(f"field {key!r} is {type(value).__name__}, not text")
    return value


def index_field(obj: Any, key: str, default: int = 0) -> int:
    value = get(obj, key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedEvent(f"field {key!r} is {type(value).__name__}, not an index")
    return value


def count_field(obj: Any, key: str) -> int | None:
    """A token count (None when absent); a negative or non-integer count is a malformed event."""
    value = get(obj, key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedEvent(f"field {key!r} is {value!r}, not a token count")
    return value


def list_field(obj: Any, key: str) -> list[Any]:
    value = get(obj, key, [])
    if not isinstance(value, list | tuple):
        raise MalformedEvent(f"field {key!r} is {type(value).__name__}, not a list")
    return list(value)


class StreamParser:
    """Base of the adapters' stream parsers: an event that cannot be read is a ProviderError.

    Subclasses implement `_feed(event)` and `_finish()`; whatever they raise besides a
    ProviderError (a MalformedEvent, a TypeError from a field of the wrong type) is wrapped,
    so a stream yields clean events or a ProviderError — nothing else.
    """

    def __init__(self, provider: str, exchange: Exchange) -> None:
        self.provider = provider
        self.exchange = exchange

    def feed(self, event: Any) -> list[StreamEvent]:
        try:
            return self._feed(event)
        except ProviderError:
            raise
        except Exception as exc:  # any unreadable event is the stream's failure
            raise wrap_unknown(self.provider, exc, self.exchange, in_stream=True) from exc

    def finish(self) -> list[StreamEvent]:
        try:
            return self._finish()
        except ProviderError:
            raise
        except Exception as exc:
            raise wrap_unknown(self.provider, exc, self.exchange, in_stream=True) from exc

    def _feed(self, event: Any) -> list[StreamEvent]:
        raise NotImplementedError

    def _finish(self) -> list[StreamEvent]:
        raise NotImplementedError


def parse_sse_text(text: str) -> list[tuple[str | None, str]]:
    """(event, data) pairs from an SSE body read as a whole (for servers with a wrong content type)."""
    events: list[tuple[str | None, str]] = []
    event: str | None = None
    data: list[str] = []
    for line in text.splitlines() + [""]:
        if not line:
            if data:
                events.append((event, "\n".join(data)))
            event, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    return events


def parse_arguments(text: str, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """Streamed tool arguments as a dict. Unparseable JSON is passed on as `_raw_arguments`,
    so the tool rejects it visibly instead of the stream failing."""
    if not text.strip():
        return dict(initial or {})
    try:
        value = json.loads(text)
    except ValueError:
        return {"_raw_arguments": text}
    return value if isinstance(value, dict) else {"_value": value}


async def close_quietly(result: Any) -> None:
    """Close an SDK stream, ignoring a connection that is already gone."""
    close = getattr(result, "close", None)
    if close is None:
        return
    try:
        await close()
    except Exception:  # best effort
        pass
