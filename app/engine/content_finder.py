"""Which part of a refused request trips a content-inspecting gateway, and the smallest span inside it.

    parts = request_parts(view_messages, system, tools)        # every text the request carries, labelled
    finder = ContentFinder(send, max_probes=60, on_probe=...)  # send(texts) -> "blocked" | "passed"
    plan = finder.plan(parts)                                  # how many probes at most (say it, then ask)
    finding = await finder.find(parts)                         # Finding(part, start, end, probes) | None

Each probe is a zero-cost request through the route's own SDK, path and headers (the provider's
`probe_texts`: Anthropic's and Bedrock's count-tokens, `max_tokens: 0` for OpenAI), carrying conversation
text to the gateway — which is why the front ends say how many and ask first. The search:

1. the parts (messages, tool results, instructions, tool descriptions, the system prompt), each its own
   content block as the gateway judges each JSON string on its own, bisected: a group that passes is
   dropped, a refused group is split, down to one part;
2. inside that part, the shortest prefix still refused, then the latest start that keeps it refused: the
   span is the text between (a few dozen to a few hundred bytes), widened to whole lines for the stub.

A group that the gateway refuses for its size (a 413) is split too; a probe that fails otherwise (auth,
network) ends the search with that reason.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.model.messages import Message, Text, ToolCall, ToolResult
from app.providers.base import ToolSpec

Verdict = Literal["blocked", "passed"]
DEFAULT_MAX_PROBES = 60


class ProbeFailed(Exception):
    """A probe got an answer that is neither a pass nor a content block (the search cannot go on)."""


@dataclass(frozen=True)
class RequestPart:
    """One text the request carries, where it sits and how a person knows it."""

    label: str  # "turn 3, tool result of read_file src/db.py", "the system prompt", …
    text: str
    message_id: str | None = None  # the view message it is in (None: system prompt, a tool definition)
    index: int = 0  # the part's index within that message
    kind: str = "text"  # text | tool_result | tool_call | system | tool
    newest_prompt: bool = False  # the user's newest prompt: give it back to edit rather than withhold
    pieces: tuple[str, ...] = ()  # the separate JSON strings the wire carries it as (a tool's definition)

    @property
    def wire_texts(self) -> tuple[str, ...]:
        """What a probe of the whole part sends: its separate strings, as the gateway judges each on its own."""
        return self.pieces or (self.text,)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "message_id": self.message_id, "index": self.index, "kind": self.kind}


@dataclass
class Finding:
    part: RequestPart
    start: int  # the (first) refused span, in characters of part.text
    end: int
    probes: int
    line_start: int = 0  # 1-based lines of part.text that hold the span
    line_end: int = 0
    more: list[tuple[int, int]] = field(default_factory=list)  # further refused spans in the same part
    cleared: bool = True  # the part passes once every span's lines are masked

    @property
    def span(self) -> str:
        return self.part.text[self.start : self.end]

    @property
    def spans(self) -> list[tuple[int, int]]:
        return [(self.start, self.end), *self.more]

    @property
    def line_ranges(self) -> list[tuple[int, int]]:
        """The 1-based line ranges holding every span, merged, in order."""
        ranges = sorted(_lines(self.part.text, a, b) for a, b in self.spans)
        merged: list[tuple[int, int]] = []
        for first, last in ranges:
            if merged and first <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
            else:
                merged.append((first, last))
        return merged

    def to_json(self) -> dict[str, Any]:
        return {
            "part": self.part.to_json(),
            "span": {"start": self.start, "end": self.end, "text": self.span},
            "spans": [{"start": a, "end": b, "text": self.part.text[a:b]} for a, b in self.spans],
            "lines": [self.line_start, self.line_end],
            "line_ranges": [list(r) for r in self.line_ranges],
            "cleared": self.cleared,
            "probes": self.probes,
        }


def _call_label(call: ToolCall | None) -> str:
    if call is None:
        return "a tool"
    args = call.args or {}
    what = args.get("path") or args.get("command") or args.get("pattern") or ""
    return f"{call.name} {str(what)[:80]}".strip()


def request_parts(
    messages: Sequence[Message], system: str, tools: Sequence[ToolSpec], *, arguments_as_json: bool = False
) -> list[RequestPart]:
    """Every text a request built from these carries, labelled for a person; empty texts left out.

    A tool call's arguments are what the wire carries: one JSON string on OpenAI's APIs
    (`arguments_as_json`), a structured object elsewhere (each value its own string to the gateway)."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    newest_user = next(
        (m.id for m in reversed(messages) if m.role == "user" and m.text and m.meta.origin == "user"), None
    )
    parts: list[RequestPart] = []
    for message in messages:
        turn = f"turn {message.meta.turn}"
        for index, part in enumerate(message.parts):
            if isinstance(part, Text) and part.text.strip():
                who = {"user": "user prompt", "assistant": "assistant answer"}.get(message.role, message.role)
                if message.meta.origin not in ("user", "model"):
                    who = f"{message.meta.origin} message"
                parts.append(
                    RequestPart(
                        f"{turn}, {who}",
                        part.text,
                        message.id,
                        index,
                        "text",
                        newest_prompt=message.id == newest_user,
                    )
                )
            elif isinstance(part, ToolResult) and part.content.strip():
                call = calls.get(part.call_id)
                parts.append(
                    RequestPart(
                        f"{turn}, tool result of {_call_label(call)}",
                        part.content,
                        message.id,
                        index,
                        "tool_result",
                    )
                )
            elif isinstance(part, ToolCall):
                args = dict(part.args or {})
                text = (
                    json.dumps(args, ensure_ascii=False)
                    if arguments_as_json
                    else "\n".join(str(v) for v in args.values())
                )
                if not text.strip():
                    continue
                parts.append(
                    RequestPart(
                        f"{turn}, tool call {_call_label(part)}", text, message.id, index, "tool_call"
                    )
                )
    if system.strip():
        parts.append(RequestPart("the system prompt (with AGENTS.md / CLAUDE.md)", system, kind="system"))
    for spec in tools:
        # The gateway judges each JSON string of the definition on its own (keys and values), never the schema
        # as one quoted string, nor the strings run together (a PL2 CRS refuses both for what they add up to).
        pieces = (spec.description, *_strings(spec.input_schema))
        parts.append(
            RequestPart(f"the description of tool {spec.name}", "\n".join(pieces), kind="tool", pieces=pieces)
        )
    return parts


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value, keys included, in order."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


MAX_SPANS = 4  # refused spans looked for in one part before the whole part is withheld


def _texts(parts: Sequence[RequestPart]) -> list[str]:
    return [text for part in parts for text in part.wire_texts]


def _mask_lines(text: str, ranges: Sequence[tuple[int, int]]) -> str:
    """`text` with the given 1-based line ranges blanked (lengths kept, so offsets stay valid)."""
    lines = text.split("\n")
    for first, last in ranges:
        for number in range(first - 1, min(last, len(lines))):
            lines[number] = " " * len(lines[number])
    return "\n".join(lines)


def _lines(text: str, start: int, end: int) -> tuple[int, int]:
    return text.count("\n", 0, start) + 1, text.count("\n", 0, max(start, end - 1)) + 1


class ContentFinder:
    def __init__(
        self,
        send: Callable[[Sequence[str]], Awaitable[Verdict]],
        *,
        max_probes: int = DEFAULT_MAX_PROBES,
        on_probe: Callable[[int, str, Verdict], None] | None = None,
    ) -> None:
        self._send = send
        self.max_probes = max_probes
        self.on_probe = on_probe
        self.probes = 0

    def plan(self, parts: Sequence[RequestPart]) -> int:
        """At most how many probes `find` sends for these parts (bounded by max_probes)."""
        longest = max((len(p.text) for p in parts), default=1)
        per_span = 1 + 2 * math.ceil(math.log2(max(2, longest)))  # the part again, then two searches
        estimate = 1 + 2 * math.ceil(math.log2(max(2, len(parts)))) + 3 * per_span
        return min(self.max_probes, estimate)

    async def _probe(self, texts: Sequence[str], what: str) -> Verdict:
        if self.probes >= self.max_probes:
            raise ProbeFailed(f"stopped after {self.probes} probes (content_probe_max)")
        self.probes += 1
        verdict = await self._send(texts)
        if self.on_probe is not None:
            self.on_probe(self.probes, what, verdict)
        return verdict

    async def find(self, parts: Sequence[RequestPart]) -> Finding | None:
        """The refused part and its span, or None when every part passes on its own (the gateway judges
        their combination, or the block is gone)."""
        if not parts:
            return None
        if await self._probe(_texts(parts), f"all {len(parts)} parts") == "passed":
            return None
        group = list(parts)
        while len(group) > 1:
            half = len(group) // 2
            first, second = group[:half], group[half:]
            if await self._probe(_texts(first), f"{len(first)} parts") == "blocked":
                group = first
            elif await self._probe(_texts(second), f"{len(second)} parts") == "blocked":
                group = second
            else:
                break  # each half passes alone: the pair is needed; keep the group and narrow inside it
        part = group[0] if len(group) == 1 else None
        if part is None:
            return None
        start, end = await self._span(part.text)
        line_start, line_end = _lines(part.text, start, end)
        finding = Finding(part, start, end, self.probes, line_start, line_end)
        # The same part may hold more than one refused span: mask each one's lines and look again.
        masked = part.text
        for _ in range(MAX_SPANS - 1):
            masked = _mask_lines(masked, finding.line_ranges)
            if self.probes >= self.max_probes:
                finding.cleared = False
                break
            if await self._probe([masked], "the part, found lines masked") == "passed":
                break
            try:
                more = await self._span(masked)
            except ProbeFailed:
                finding.cleared = False
                break
            finding.more.append(more)
        else:
            finding.cleared = False
        finding.probes = self.probes
        return finding

    async def _span(self, text: str) -> tuple[int, int]:
        """The shortest prefix still refused, then the latest start that keeps it refused."""
        low, high = 1, len(text)  # text[:high] is refused
        while low < high:
            mid = (low + high) // 2
            if await self._probe([text[:mid]], f"first {mid} chars") == "blocked":
                high = mid
            else:
                low = mid + 1
        end = high
        low, high = 0, end - 1  # text[low:end] is refused
        while low < high:
            mid = (low + high + 1) // 2
            if await self._probe([text[mid:end]], f"chars {mid}-{end}") == "blocked":
                low = mid
            else:
                high = mid - 1
        return low, end
