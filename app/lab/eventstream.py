"""AWS event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock's ConverseStream uses.

A frame: total length (u32) · headers length (u32) · prelude CRC32 · headers · payload ·
message CRC32, all big-endian. Header values here are strings (type 7), which is all
Bedrock sends. botocore decodes what `encode_frame` writes.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

_STRING = 7


class EventStreamError(ValueError):
    """A frame that does not parse (bad length or CRC)."""


def _headers_bytes(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        name_b, value_b = name.encode("utf-8"), value.encode("utf-8")
        out += struct.pack(">B", len(name_b)) + name_b
        out += struct.pack(">BH", _STRING, len(value_b)) + value_b
    return bytes(out)


def encode_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    header_bytes = _headers_bytes(headers)
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message) & 0xFFFFFFFF)


def event(event_type: str, payload: Mapping[str, Any]) -> bytes:
    """A ConverseStream event frame (messageStart, contentBlockDelta, metadata, ...)."""
    return encode_frame(
        {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode("utf-8"),
    )


def exception(exception_type: str, message: str) -> bytes:
    """An in-stream error frame (e.g. throttlingException), as Bedrock sends mid-stream."""
    return encode_frame(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps({"message": message}).encode("utf-8"),
    )


def decode_frames(data: bytes) -> Iterator[tuple[dict[str, str], bytes]]:
    """Parse concatenated frames; raises EventStreamError on anything malformed."""
    offset = 0
    while offset < len(data):
        if len(data) - offset < 16:
            raise EventStreamError("truncated frame prelude")
        total, header_len = struct.unpack_from(">II", data, offset)
        (prelude_crc,) = struct.unpack_from(">I", data, offset + 8)
        if zlib.crc32(data[offset : offset + 8]) & 0xFFFFFFFF != prelude_crc:
            raise EventStreamError("prelude CRC mismatch")
        if total < 16 + header_len or offset + total > len(data):
            raise EventStreamError("frame length out of range")
        (message_crc,) = struct.unpack_from(">I", data, offset + total - 4)
        if zlib.crc32(data[offset : offset + total - 4]) & 0xFFFFFFFF != message_crc:
            raise EventStreamError("message CRC mismatch")
        headers: dict[str, str] = {}
        pos, end = offset + 12, offset + 12 + header_len
        try:
            while pos < end:
                (name_len,) = struct.unpack_from(">B", data, pos)
                name = data[pos + 1 : pos + 1 + name_len].decode("utf-8")
                pos += 1 + name_len
                value_type, value_len = struct.unpack_from(">BH", data, pos)
                if value_type != _STRING:
                    raise EventStreamError(f"unsupported header value type {value_type}")
                if pos + 3 + value_len > end:
                    raise EventStreamError("header runs past the header section")
                headers[name] = data[pos + 3 : pos + 3 + value_len].decode("utf-8")
                pos += 3 + value_len
        except (UnicodeDecodeError, struct.error) as exc:
            raise EventStreamError(f"malformed header: {exc}") from None
        if pos != end:
            raise EventStreamError("header runs past the header section")
        yield headers, data[end : offset + total - 4]
        offset += total
