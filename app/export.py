"""Session exports: Markdown for people, JSON for tools. (HAR lives in `app.har`.)

Exports read only what the store holds, and the store never holds a secret: request
headers are redacted before they are recorded, known secret values wherever they appear —
and once more here, on the way out (`app.redact`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from app.engine.session import Session
from app.model.messages import Image, Text, ToolCall, ToolResult
from app.redact import redact_headers, redact_known, redact_value
from app.textsafe import display


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def to_markdown(session: Session) -> str:
    """The session for people to read. Everything in it may have come from outside (prompts, answers,
    tool output, file names), so it goes through `display()`: a `cat` of the file is safe."""
    lines = [
        f"# {session.title or 'bulkhead session'}",
        "",
        f"- session: `{session.id}`",
        f"- route: {session.route} ({session.provider} · {session.model})",
        f"- started: {_when(session.created_at)}",
        f"- messages: {len(session.master)}",
        "",
    ]
    for message in session.master:
        label = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}[message.role]
        if message.meta.origin == "notice":
            label = "Notice"
        elif message.meta.origin == "mention":
            label = "Attached by the user (@)"
        suffix = " _(partial — the stream was cut short)_" if message.meta.partial else ""
        lines += [f"## {label}{suffix}", ""]
        for part in message.parts:
            if isinstance(part, Text):
                lines += [part.text, ""]
            elif isinstance(part, ToolCall):
                lines += [
                    f"**tool call** `{part.name}`",
                    "",
                    "```json",
                    json.dumps(dict(part.args), ensure_ascii=False, indent=2),
                    "```",
                    "",
                ]
            elif isinstance(part, ToolResult):
                fence = "````" if "```" in part.content else "```"
                title = "tool error" if part.is_error else "tool result"
                lines += [f"**{title}**", "", fence, part.content, fence, ""]
            elif isinstance(part, Image):
                lines += [f"_[image {part.media_type}, {len(part.data) * 3 // 4} bytes]_", ""]
    return display(redact_known("\n".join(lines).rstrip() + "\n"))


def to_json(session: Session) -> dict[str, Any]:
    return redact_value(
        {
            "id": session.id,
            "title": session.title,
            "route": session.route,
            "provider": session.provider,
            "model": session.model,
            "created_at": session.created_at,
            "messages": [m.to_dict() for m in session.master],
            "view": [m.id for m in session.view.messages],
            "derived": [m.to_dict() for m in session.view.messages if not session.is_master(m)],
            "counters": session.counters.to_dict(),
            "requests": [_redacted(record) for record in session.store.list_requests(session.id)],
        },
        urls=False,
    )


def _redacted(record: dict[str, Any]) -> dict[str, Any]:
    """A request record with secret headers hidden, even one stored by an older bulkhead."""
    return redact_value(
        {
            **record,
            **{
                key: redact_headers(record.get(key))
                for key in ("request_headers", "response_headers")
                if key in record
            },
        }
    )
