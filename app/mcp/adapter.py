"""MCP tools as bulkhead tools, and their results as tool outcomes.

Names: `mcp__SERVER__TOOL` (Claude Code's form, so hook matchers like `mcp__github__.*` and
permission rules written for it work). Characters a provider refuses in a tool name become `_`;
a name over 64 characters is shortened with a hash, so two tools never share one.

Results (`CallToolResult`) become one text for the model, in the server's order:

- text content as is;
- images attached to the result (up to `mcp_image_max_bytes`; a larger one is saved to the
  session's spill folder and the text names the file);
- an embedded resource's text under a `[resource URI (type)]` line, a binary one saved to the
  spill folder; a resource link as one line; audio saved to the spill folder;
- `structuredContent`, when no text block already carries the same JSON, under
  `[structured content]`, so nothing the server returned is lost;
- `isError` marks the result as an error.

The text then goes through the same per-result budget as a built-in tool (head and tail, the full
text spilled to a file the preview names). What the model receives is never sanitised; the front
ends pass what they show through `app.textsafe`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import mimetypes
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from app.mcp.connection import McpTool
from app.model.messages import Image
from app.model.tools import ToolSpec
from app.sizes import format_size
from app.tools.base import ToolOutcome, error, ok

PREFIX = "mcp__"
SEPARATOR = "__"
MAX_TOOL_NAME = 64  # OpenAI's limit for function names (Anthropic allows more); the smaller wins
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})  # what the providers accept


def is_mcp_name(name: str) -> bool:
    return name.startswith(PREFIX)


def server_of(name: str) -> str:
    """The (sanitised) server part of `mcp__SERVER__TOOL`, or ""."""
    if not is_mcp_name(name):
        return ""
    return name[len(PREFIX) :].split(SEPARATOR, 1)[0]


def safe(text: str) -> str:
    """`text` with every character a provider refuses in a tool name replaced by `_`."""
    return _UNSAFE.sub("_", text)


def tool_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """`mcp__SERVER__TOOL`, made safe for every provider and unique among `taken`."""
    name = f"{PREFIX}{safe(server)}{SEPARATOR}{safe(tool)}"
    taken = set(taken)
    if len(name) <= MAX_TOOL_NAME and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def tool_spec(tool: McpTool, name: str) -> ToolSpec:
    """The definition every provider is told: the server's own description and input schema."""
    schema = dict(tool.input_schema) if isinstance(tool.input_schema, Mapping) else {}
    if schema.get("type") != "object":
        schema = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
    description = tool.description.strip() or tool.title or f"{tool.name} (MCP server {tool.server})"
    return ToolSpec(name, description, schema)


def one_line(text: str, limit: int) -> str:
    """The first sentence (or line) of `text`, at most `limit` chars — for an index entry."""
    flat = " ".join(text.split())
    match = re.search(r"(?<=[.!?])\s", flat)
    first = flat[: match.start()] if match else flat
    return first if len(first) <= limit else first[: max(1, limit - 1)].rstrip() + "…"


# -- results -----------------------------------------------------------------------------------------


def _field(block: Any, name: str, default: Any = None) -> Any:
    if isinstance(block, Mapping):
        return block.get(name, default)
    return getattr(block, name, default)


def _save_binary(data: bytes, stem: str, mime: str | None, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ext = mimetypes.guess_extension(mime or "") or ".bin"
    digest = hashlib.sha256(data).hexdigest()[:10]
    path = folder / f"{_UNSAFE.sub('_', stem)}-{digest}{ext}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def _decode(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _same_json(text: str, value: Any) -> bool:
    """Whether a text block already says what the structured content says (the spec asks servers to
    send both; SDK servers wrap a plain return value as {"result": value})."""
    if isinstance(value, Mapping) and set(value) == {"result"}:
        inner = value["result"]
        if text == inner or (not isinstance(inner, str) and _same_json(text, inner)):
            return True
    try:
        return json.loads(text) == value
    except (ValueError, TypeError):
        return False


def convert_result(result: Any, *, name: str, spill_folder: Path, image_max_bytes: int) -> ToolOutcome:
    """A `CallToolResult` (SDK model or plain dict) as a tool outcome, before the result budget."""
    pieces: list[str] = []
    images: list[Image] = []
    texts: list[str] = []

    def keep_binary(data_b64: str, mime: str | None, what: str) -> None:
        raw = _decode(data_b64 or "")
        if raw is None:
            pieces.append(f"[{what} ({mime or 'unknown type'}): the server sent data that is not base64]")
            return
        try:
            path = _save_binary(raw, name, mime, spill_folder)
        except OSError as exc:
            pieces.append(
                f"[{what} ({mime or 'unknown type'}, {format_size(len(raw))}) could not be saved: "
                f"{exc.strerror or exc}]"
            )
            return
        pieces.append(f"[{what} ({mime or 'unknown type'}, {format_size(len(raw))}) saved to {path}]")

    for block in _field(result, "content", None) or ():
        kind = _field(block, "type", "")
        if kind == "text":
            text = _field(block, "text", "") or ""
            texts.append(text)
            pieces.append(text)
        elif kind == "image":
            data, mime = (
                _field(block, "data", "") or "",
                _field(block, "mime_type", None) or _field(block, "mimeType"),
            )
            if mime in IMAGE_TYPES and len(data) * 3 // 4 <= image_max_bytes and _decode(data) is not None:
                images.append(Image(mime, data))
                pieces.append(f"[image {mime}, {format_size(len(data) * 3 // 4)} — attached]")
            else:
                too_big = len(data) * 3 // 4 > image_max_bytes
                keep_binary(
                    data,
                    mime,
                    "image too large to attach (mcp_image_max_bytes)"
                    if too_big
                    else "image in a format the model is not sent",
                )
        elif kind == "audio":
            keep_binary(
                _field(block, "data", "") or "",
                _field(block, "mime_type", None) or _field(block, "mimeType"),
                "audio",
            )
        elif kind == "resource":
            resource = _field(block, "resource", {}) or {}
            uri = _field(resource, "uri", "") or ""
            mime = _field(resource, "mime_type", None) or _field(resource, "mimeType")
            text = _field(resource, "text", None)
            if text is not None:
                pieces.append(f"[resource {uri}{f' ({mime})' if mime else ''}]\n{text}")
            else:
                blob = _field(resource, "blob", "") or ""
                if (
                    mime in IMAGE_TYPES
                    and len(blob) * 3 // 4 <= image_max_bytes
                    and _decode(blob) is not None
                ):
                    images.append(Image(mime, blob))
                    pieces.append(f"[resource {uri} ({mime}) — image attached]")
                else:
                    keep_binary(blob, mime, f"resource {uri}")
        elif kind == "resource_link":
            label = _field(block, "title", None) or _field(block, "name", "") or ""
            mime = _field(block, "mime_type", None) or _field(block, "mimeType")
            description = _field(block, "description", None)
            pieces.append(
                f"[resource link: {label} — {_field(block, 'uri', '')}"
                + (f" ({mime})" if mime else "")
                + (f" — {description}" if description else "")
                + "]"
            )
        else:
            pieces.append(
                f"[{kind or 'unknown'} content: {json.dumps(_dump(block), ensure_ascii=False)[:2000]}]"
            )

    structured = _field(result, "structured_content", None)
    if structured is None and isinstance(result, Mapping):
        structured = result.get("structuredContent")
    if structured is not None and not any(_same_json(t, structured) for t in texts):
        pieces.append("[structured content]\n" + json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(p for p in pieces if p is not None)
    if not text.strip() and not images:
        text = "(the tool returned no content)"
    is_error = bool(
        _field(result, "is_error", None) or (isinstance(result, Mapping) and result.get("isError"))
    )
    return (error if is_error else ok)(text, images=tuple(images))


def _dump(block: Any) -> Any:
    dump = getattr(block, "model_dump", None)
    return dump(mode="json", by_alias=True, exclude_none=True) if callable(dump) else block


# -- approvals ---------------------------------------------------------------------------------------


def needs_approval(name: str, tool: McpTool | None, mode: str) -> tuple[bool, str]:
    """(ask?, why) for an MCP tool: `never-ask` runs everything; under `auto-read` (and `auto-edit`) a
    tool the server marks read-only (`readOnlyHint`) runs; every other call asks."""
    server = tool.server if tool is not None else server_of(name)
    if mode == "never-ask":
        return False, "approval mode never-ask"
    if tool is not None and tool.read_only and mode in ("auto-read", "auto-edit"):
        return False, f"read-only MCP tool (readOnlyHint from server {server}; approval mode {mode})"
    hint = "" if tool is None or tool.read_only else " and is not marked read-only"
    return True, f"{name} is a tool of MCP server {server}{hint} (approval mode {mode})"
