"""What a provider stream may produce: clean events, or a ProviderError — nothing else.

`check_clean` is the contract the engine's Sender relies on: it appends `TextChunk.text` to
strings, adds `Usage` numbers to counters and stores `ToolCallChunk.args` as JSON. A chunk
with a wrong type inside is as bad as a stray exception: the turn crashes later, further
from the cause.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.providers.base import EditsChunk, NativeChunk, StopChunk, TextChunk, ToolCallChunk, UsageChunk

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def problems_of(events: Sequence[object]) -> list[str]:
    """Everything unclean about a finished stream's events (empty when clean)."""
    problems: list[str] = []
    for index, event in enumerate(events):
        if isinstance(event, TextChunk):
            if not isinstance(event.text, str):
                problems.append(f"event {index}: TextChunk.text is {type(event.text).__name__}")
        elif isinstance(event, ToolCallChunk):
            if not isinstance(event.id, str) or not event.id:
                problems.append(f"event {index}: ToolCallChunk.id is {event.id!r}")
            if not isinstance(event.name, str):
                problems.append(f"event {index}: ToolCallChunk.name is {type(event.name).__name__}")
            if not isinstance(event.args, dict):
                problems.append(f"event {index}: ToolCallChunk.args is {type(event.args).__name__}")
        elif isinstance(event, UsageChunk):
            for name in USAGE_FIELDS:
                value = getattr(event.usage, name)
                if not isinstance(value, int) or isinstance(value, bool):
                    problems.append(f"event {index}: usage.{name} is {value!r}")
        elif isinstance(event, StopChunk):
            if not isinstance(event.reason, str) or not isinstance(event.raw, str):
                problems.append(f"event {index}: StopChunk fields are {event.reason!r}, {event.raw!r}")
        elif isinstance(event, NativeChunk):  # kept in the master log and replayed: a dict with a type
            if not isinstance(event.item, dict) or not isinstance(event.item.get("type"), str):
                problems.append(f"event {index}: NativeChunk.item is {event.item!r}")
            else:
                try:
                    json.dumps(event.item)
                except (TypeError, ValueError):
                    problems.append(f"event {index}: NativeChunk.item is not JSON")
        elif isinstance(event, EditsChunk):
            for name in ("edits", "cleared_tool_uses", "cleared_input_tokens"):
                value = getattr(event, name)
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    problems.append(f"event {index}: EditsChunk.{name} is {value!r}")
        else:
            problems.append(f"event {index}: unknown event type {type(event).__name__}")
    stops = [i for i, e in enumerate(events) if isinstance(e, StopChunk)]
    if stops != [len(events) - 1]:
        problems.append(
            f"a finished stream ends with exactly one StopChunk (StopChunks at {stops} of {len(events)})"
        )
    return problems


def check_clean(events: Sequence[object]) -> None:
    problems = problems_of(events)
    assert not problems, "\n".join(problems)
