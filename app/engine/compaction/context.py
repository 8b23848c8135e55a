"""What every pass receives (PassContext) and returns (PassResult with a Report).

A pass is a pure function `pass(messages, ctx) -> PassResult`. It never mutates a message
(they are frozen), never touches the store and never emits events: the caller (turn loop,
recovery controller, `/compact`) decides whether to commit the new view together with the
archive entries, in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from app.config import Settings
from app.model.archive import (
    ArchiveEntry,
    defang_markers,
    make_entry,
    markers_in,
)
from app.model.messages import Image, Message, Text, ToolCall, ToolResult

Messages = tuple[Message, ...]

# Origins of messages a compaction made; every other message (without source ids) is a master message.
DERIVED_ORIGINS = frozenset({"notice", "summary", "stub"})


def _no_lookup(key: str) -> str | None:
    return None


def default_is_master(message: Message) -> bool:
    """A message is a master message when nothing derived it (no source ids, not a notice/summary/stub)."""
    return not message.meta.source_ids and message.meta.origin not in DERIVED_ORIGINS


class JsonMeasure:
    """Bytes of the messages as compact JSON, cached per message id (messages are immutable).

    The stand-in for a provider's predicted request size when none is given: what matters to the
    passes is that it grows with content and is cheap to call repeatedly.
    """

    def __init__(self, overhead: int = 64, max_cached: int = 200_000) -> None:
        self.overhead = overhead
        self.max_cached = max_cached
        self._cache: dict[str, int] = {}

    def size_of(self, message: Message) -> int:
        size = self._cache.get(message.id)
        if size is None:
            body = {"role": message.role, "parts": message.to_dict()["parts"]}  # what a request carries
            size = len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
            if len(self._cache) >= self.max_cached:
                self._cache.clear()
            self._cache[message.id] = size
        return size

    def __call__(self, messages: Iterable[Message]) -> int:
        return self.overhead + sum(self.size_of(m) + 1 for m in messages)


default_measure = JsonMeasure()


@dataclass(frozen=True)
class PassContext:
    """Everything a pass may read. Immutable; `with_entries` gives a copy that can look up new entries."""

    settings: Settings = field(default_factory=Settings)
    turn: int = 0  # the current turn (age of a message = turn - message.meta.turn)
    budget_scale: float = 1.0  # 0.5 at recovery L1, for this session only
    session_folder: Path | None = None  # where budget enforcement spills full tool outputs
    archive_lookup: Callable[[str], str | None] = _no_lookup
    measure: Callable[[Messages], int] = default_measure  # provider-predicted request bytes of a view
    target_bytes: int | None = None  # what the view must fit in (None: no size goal)
    is_master: Callable[[Message], bool] | None = None
    # Read-only tools (MCP tools marked readOnlyHint): a later identical call supersedes an earlier result.
    repeatable_tools: frozenset[str] = frozenset()

    # -- helpers ------------------------------------------------------------------------------
    def master(self, message: Message) -> bool:
        return (self.is_master or default_is_master)(message)

    def master_ids(self, message: Message) -> tuple[str, ...]:
        """The master ids a message stands for: itself if it is one, else its source ids."""
        if self.master(message):
            return (message.id,)
        return tuple(message.meta.source_ids)

    def lookup(self, key: str) -> str | None:
        try:
            return self.archive_lookup(key)
        except Exception:  # a lookup that fails is a lookup that found nothing
            return None

    def with_entries(self, entries: Iterable[ArchiveEntry]) -> PassContext:
        """A copy whose `archive_lookup` also finds `entries` (those made earlier in the same run)."""
        known = {e.key: e.content for e in entries}
        if not known:
            return self
        previous = self.archive_lookup

        def lookup(key: str) -> str | None:
            found = known.get(key)
            return found if found is not None else previous(key)

        return replace(self, archive_lookup=lookup)

    def scaled(self, value: int) -> int:
        return max(1, int(value * self.budget_scale))


@dataclass(frozen=True)
class Report:
    """What a pass did, for the turn line, the compaction panel and receipts.

    `line` is the human text (e.g. `🗜 microcompact: 3 truncated, 2 summarized, 1.7 MB freed`),
    empty when the pass changed nothing. `ok` is False when a pass could not do its job
    (a summary rejected by the quality gate, a shrink that could not reach the target); `detail`
    says why.
    """

    name: str
    line: str = ""
    changed: bool = False
    counts: Mapping[str, int] = field(default_factory=dict)
    bytes_freed: int = 0
    ok: bool = True
    detail: str = ""
    engine: str = ""  # the summary pass: who wrote the summary ("local", "mcp:NAME"), and any fallback
    route: str = ""  # the summary pass: the route asked, when it is not the first one offered (and why)


@dataclass(frozen=True)
class PassResult:
    messages: Messages
    entries: list[ArchiveEntry]
    report: Report

    @property
    def changed(self) -> bool:
        return self.report.changed


def unchanged(messages: Messages, name: str, *, ok: bool = True, detail: str = "") -> PassResult:
    return PassResult(tuple(messages), [], Report(name=name, ok=ok, detail=detail))


def same_view(a: Iterable[Message], b: Iterable[Message]) -> bool:
    return [m.id for m in a] == [m.id for m in b]


def merge_entries(*groups: Iterable[ArchiveEntry]) -> list[ArchiveEntry]:
    """Entries in order, one per key (content-addressed: a key names one content); source ids merged."""
    by_key: dict[str, ArchiveEntry] = {}
    for group in groups:
        for entry in group:
            known = by_key.get(entry.key)
            if known is None:
                by_key[entry.key] = entry
            elif not set(entry.source_ids) <= set(known.source_ids):
                ids = tuple(dict.fromkeys(known.source_ids + entry.source_ids))
                by_key[entry.key] = replace(known, source_ids=ids)
    return list(by_key.values())


class Archiver:
    """Collects the archive entries one pass makes, applying DESIGN.md §3.

    `stash(content, message)` answers the keys a cut of `content` must name, or None when the
    content must not be cut (an entry too large to store):

    - content without markers is archived as is;
    - content that holds markers is never archived as is. If it belongs to a master message (an
      original that quotes a marker) a defanged copy is archived; the markers themselves are
      carried forward: the returned keys include them, so the lossier stub names them again.
    """

    def __init__(self, ctx: PassContext, reason: str) -> None:
        self.ctx = ctx
        self.reason = reason
        self._entries: dict[str, ArchiveEntry] = {}

    def stash(self, content: str, message: Message) -> list[str] | None:
        carried = markers_in(content)
        sources = self.ctx.master_ids(message)
        if not carried:
            entry = make_entry(content, self.reason, sources)
            if entry is None:
                return None
            self._add(entry)
            return [entry.key]
        if not self.ctx.master(message):
            return carried
        entry = make_entry(defang_markers(content), self.reason, sources)
        if entry is None:
            return None
        self._add(entry)
        return [entry.key, *carried]

    def stash_segment(self, text: str, sources: tuple[str, ...]) -> ArchiveEntry | None:
        """Archive an already rendered (marker-free) segment as one entry."""
        entry = make_entry(text, self.reason, sources)
        if entry is not None:
            self._add(entry)
        return entry

    def _add(self, entry: ArchiveEntry) -> None:
        known = self._entries.get(entry.key)
        if known is None:
            self._entries[entry.key] = entry
        elif not set(entry.source_ids) <= set(known.source_ids):
            self._entries[entry.key] = replace(
                known, source_ids=tuple(dict.fromkeys(known.source_ids + entry.source_ids))
            )

    def get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        return entry.content if entry is not None else None

    @property
    def entries(self) -> list[ArchiveEntry]:
        return list(self._entries.values())


# -- reading message content -----------------------------------------------------------------------


def args_text(call: ToolCall) -> str:
    return json.dumps(dict(call.args), ensure_ascii=False)


def part_string(part: Any) -> str:
    """The string a part carries (text, result content, call arguments as JSON, image data)."""
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ToolResult):
        return part.content
    if isinstance(part, ToolCall):
        return args_text(part)
    if isinstance(part, Image):
        return part.data
    return ""


def part_strings(message: Message) -> list[str]:
    """Every string a message carries (text, results, call arguments as JSON, image data)."""
    return [part_string(p) for p in message.parts]


def content_bytes(message: Message) -> int:
    return sum(utf8_len(s) for s in part_strings(message))


def keys_named(parts: Iterable[Any]) -> tuple[str, ...]:
    """Every archive key the markers in `parts` name, in order."""
    keys: list[str] = []
    for part in parts:
        if isinstance(part, Text):
            keys.extend(markers_in(part.text))
        elif isinstance(part, ToolResult):
            keys.extend(markers_in(part.content))
        elif isinstance(part, ToolCall):
            keys.extend(markers_in(args_text(part)))
    return tuple(dict.fromkeys(keys))


def message_keys(message: Message) -> tuple[str, ...]:
    return keys_named(message.parts)


def derive(message: Message, ctx: PassContext, parts: Iterable[Any], **meta: Any) -> Message:
    """A derived message for `message`: new id, source ids = master ids, archive keys = keys it names."""
    parts = tuple(parts)
    meta.setdefault("origin", "stub")
    meta.setdefault("archive_keys", keys_named(parts))
    meta.setdefault("source_ids", ctx.master_ids(message))
    return message.derive(parts, **meta)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def is_protected(message: Message) -> bool:
    """Recall output and messages the model asked to keep whole: no pass cuts them."""
    return message.meta.preserve_verbatim or message.meta.origin == "recall"
