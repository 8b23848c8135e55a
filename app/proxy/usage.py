"""Token usage read from what went back to the client (for the records' cost column), and bodies decoded
for reading: the proxy forwards bytes as they came and reads a copy."""

from __future__ import annotations

import json
import zlib
from typing import Any

USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "prompt_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "completion_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


def decode_body(raw: bytes, content_encoding: str) -> str | None:
    """`raw` as text, undoing gzip/deflate; None for an encoding this machine cannot read (br, zstd)."""
    encoding = content_encoding.strip().lower()
    try:
        if encoding in ("", "identity"):
            data = raw
        elif encoding in ("gzip", "x-gzip"):
            data = zlib.decompress(raw, 16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            try:
                data = zlib.decompress(raw)
            except zlib.error:
                data = zlib.decompress(raw, -zlib.MAX_WBITS)
        else:
            return None
    except zlib.error:
        return None
    return data.decode("utf-8", "replace")


def usage_from(text: str) -> dict[str, Any]:
    """The usage an answer reports, from a JSON body or the `data:` lines of an event stream (Anthropic's
    message_start/message_delta, OpenAI's final chunk or response.completed); {} when none is seen."""
    found: dict[str, Any] = {}
    documents: list[Any] = []
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            documents.append(json.loads(stripped))
        except ValueError:
            pass
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload.startswith("{"):
                try:
                    documents.append(json.loads(payload))
                except ValueError:
                    continue
    for document in documents:
        for usage in _usages(document):
            for key, value in usage.items():
                name = USAGE_KEYS.get(key)
                if name and isinstance(value, int) and not isinstance(value, bool):
                    found[name] = max(value, found.get(name, 0))
            details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details")
            if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
                found["cache_read_tokens"] = max(details["cached_tokens"], found.get("cache_read_tokens", 0))
    return found


def _usages(value: Any, depth: int = 0) -> list[dict[str, Any]]:
    if depth > 4 or not isinstance(value, dict):
        return []
    found = [value["usage"]] if isinstance(value.get("usage"), dict) else []
    for key in ("message", "response"):
        found += _usages(value.get(key), depth + 1)
    return found
