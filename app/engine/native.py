"""Provider-native context management (`context_engine = "provider"`) turned into bulkhead views.

Server-side compaction shrinks what the model reads, not what the client sends: a gateway that
caps bodies still sees the whole history unless the client drops it. So:

- **A compaction block/item comes back** (Anthropic's `compaction` block past the
  `compact_20260112` threshold; OpenAI's `compaction` item past `compact_threshold`): the
  session commits a new view that starts at the message carrying it — system messages, a notice
  naming the archive keys, the compaction, what follows. Everything it replaced is archived (the
  segment as one entry, and every tool result or text of 1,000+ chars on its own, so `/recall`
  gives it back byte for byte). Receipt `method = "provider"`; PostCompact; a Compaction event.
- **Planned compaction** (preflight, `/compact`) asks the provider to compact on demand
  (Anthropic's `compaction` parameter, OpenAI's `/responses/compact`) and falls back to the
  local pipeline when it cannot, fails or saves nothing. The recovery ladder stays local.
- **Applied context edits** (Anthropic `clear_tool_uses`): the oldest N tool results of the
  request — N as reported — are stubbed locally (originals archived, recallable), that turn's
  bytes-per-token calibration is skipped, the next cache write is booked as an expected rebuild,
  and the totals are kept for `/context` and the Payload panel.

Bedrock Converse has no native compaction — "Neither mechanism is supported by the Converse API"
(https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-compaction.html): the local
pipeline runs, and `config check` says so.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.engine.compaction.context import Archiver
from app.engine.compaction.segment import archive_segment, markers_text
from app.engine.notice_words import notice as notice_of
from app.engine.receipts import make_receipt
from app.model.archive import ArchiveEntry, markers_in, stub_text
from app.model.events import Compaction, CompactionTrigger, ProviderEdits
from app.model.messages import Message, ToolResult
from app.model.notice_facts.compaction import CompactionNotSaved, ProviderEditsNotMirrored
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.host import NativeHost
    from app.engine.sender import StreamResult

ARCHIVE_REASON = "provider"
ARCHIVE_PART_MIN_CHARS = 1000  # a replaced text or tool result this long is archived on its own too
AUTO_WINDOW_SHARE = 0.75  # automatic threshold: 75% of the usable window …
AUTO_CAP_SHARE = 0.60  # … but at most 60% of the byte cap, so the server compacts before preflight must
ANTHROPIC_MIN_TRIGGER = 50_000  # the compact_20260112 trigger's documented minimum (input tokens)
EDITS_FLAG = "provider_edits"
REBUILD_FLAG = "expect_cache_rebuild"


def _notice(count: int, size: int, keys: Sequence[str], sources: Sequence[str], turn: int) -> Message:
    text = (
        f"[bulkhead] The provider compacted the {count} earlier messages ({format_size(size)}) into the "
        f"summary that follows; the originals are archived: {markers_text(keys)} — the recall tool "
        f"gives them back."
    )
    return Message.create(
        "system",
        text,
        origin="notice",
        archive_keys=tuple(dict.fromkeys(keys)),
        source_ids=tuple(sources),
        turn=turn,
    )


def edit_totals(flags: dict[str, Any]) -> dict[str, int]:
    """What the provider's context edits cleared in this session (for /context and the Payload panel)."""
    stored = flags.get(EDITS_FLAG) or {}
    return {
        key: int(stored.get(key, 0))
        for key in ("edits", "tool_results", "tokens", "stubbed", "expected_rebuilds", "rebuild_tokens")
    }


class NativeContext:
    """The engine's side of provider-native context management (one per Engine)."""

    def __init__(self, engine: NativeHost) -> None:
        self.engine = engine

    # -- settings -------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self.engine.settings.context_engine == "provider"

    @property
    def supported(self) -> bool:
        return self.enabled and bool(getattr(self.engine.provider, "native_compaction", ""))

    def threshold(self) -> int | None:
        """Input tokens at which the provider should compact: the configured value, else 75% of the
        usable window, at most 60% of the byte cap in tokens (Anthropic: never below 50,000)."""
        engine, settings = self.engine, self.engine.settings
        if not self.supported:
            return None
        if settings.provider_compact_threshold > 0:
            return settings.provider_compact_threshold
        tokens = int(engine.usable_window_tokens() * AUTO_WINDOW_SHARE)
        cap = engine.cap_info().bytes
        if cap:
            tokens = min(tokens, int(cap * AUTO_CAP_SHARE / engine.bytes_per_token))
        if engine.provider.kind == "anthropic":
            tokens = max(tokens, ANTHROPIC_MIN_TRIGGER)
        return max(1, tokens)

    def prepare(self) -> None:
        """Before building a request: tell the adapter the threshold to send."""
        self.engine.provider.compact_threshold = self.threshold()

    # -- after an answer -------------------------------------------------------------------------
    async def compact(
        self, trigger: CompactionTrigger, instructions: str | None, cancel: asyncio.Event | None = None
    ) -> PipelineResult | None:
        """Planned compaction through the provider (`app.engine.native_on_demand`); None when it cannot
        (the caller compacts locally)."""
        from app.engine.native_on_demand import compact_on_demand

        return await compact_on_demand(self, trigger, instructions, cancel)

    def skip_calibration(self, result: StreamResult) -> bool:
        """The provider read less than was sent (edits, compaction): usage says nothing about bytes/token."""
        return result.edits is not None or any(n.item.get("type") == "compaction" for n in result.natives)

    async def after_answer(self, result: StreamResult, answer: Message) -> None:
        """Mirror what the provider did to this request: a compaction, or applied context edits.
        A provider compaction fires PostCompact (trigger auto); it happened before any PreCompact could."""
        self._book_rebuild(result)
        if answer.compaction is not None:
            if result.edits is not None:
                self._count_edits(result, stubbed=0)
            messages_before = len(self.engine.session.view)
            before = self.engine.measure(self.engine.session.view.messages)
            await self.engine.session.drain()  # a view commit reads the database: our appends first
            keys = self.commit_compaction(answer, trigger="provider", started=time.monotonic())
            if keys is not None:
                after = self.engine.measure(self.engine.session.view.messages)
                await self.post_compact(
                    "provider", before, after, (messages_before, len(self.engine.session.view)), keys
                )
        elif result.edits is not None:
            await self.engine.session.drain()
            self.mirror_edits(result, answer)

    def _book_rebuild(self, result: StreamResult) -> None:
        session = self.engine.session
        if session.flags.get(REBUILD_FLAG) and result.usage and result.usage.cache_write_tokens:
            totals = edit_totals(session.flags)
            totals["expected_rebuilds"] += 1
            totals["rebuild_tokens"] += result.usage.cache_write_tokens
            session.set_flag(EDITS_FLAG, totals)
            session.set_flag(REBUILD_FLAG, False)

    def _count_edits(self, result: StreamResult, stubbed: int) -> dict[str, int]:
        session, edits = self.engine.session, result.edits
        assert edits is not None
        totals = edit_totals(session.flags)
        totals["edits"] += edits.edits
        totals["tool_results"] += edits.cleared_tool_uses
        totals["tokens"] += edits.cleared_input_tokens
        totals["stubbed"] += stubbed
        session.set_flag(EDITS_FLAG, totals)
        session.set_flag(REBUILD_FLAG, True)
        self.engine.emit(
            ProviderEdits(
                edits=edits.edits,
                cleared_tool_uses=edits.cleared_tool_uses,
                cleared_input_tokens=edits.cleared_input_tokens,
                stubbed=stubbed,
                total_edits=totals["edits"],
                total_tool_results=totals["tool_results"],
                total_tokens=totals["tokens"],
            )
        )
        return totals

    # -- applied edits ---------------------------------------------------------------------------
    def mirror_edits(self, result: StreamResult, answer: Message) -> None:
        """Stub the oldest `cleared_tool_uses` tool results of the request, as the server did."""
        engine, session = self.engine, self.engine.session
        edits = result.edits
        assert edits is not None
        view = list(session.view.messages)
        sent = [m for m in view if m.id != answer.id]
        ctx = engine.pass_context(session.turn, engine.max_tokens, target_bytes=None)
        archiver = Archiver(ctx, ARCHIVE_REASON)
        left = edits.cleared_tool_uses
        replaced: dict[str, Message] = {}
        stubbed = 0
        for message in sent:
            if left <= 0:
                break
            if not message.tool_results:
                continue
            parts: list[Any] = []
            changed = False
            for part in message.parts:
                if left > 0 and isinstance(part, ToolResult):
                    left -= 1
                    stub = self._stub(part, message, archiver)
                    if stub is not None:
                        parts.append(stub)
                        changed = True
                        stubbed += 1
                        continue
                parts.append(part)
            if changed:
                replaced[message.id] = message.derive(
                    parts,
                    origin="stub",
                    source_ids=ctx.master_ids(message),
                    archive_keys=tuple(
                        k for p in parts if isinstance(p, ToolResult) for k in markers_in(p.content)
                    ),
                )
        self._count_edits(result, stubbed)
        if not replaced:
            return
        before = engine.measure(view)
        messages = [replaced.get(m.id, m) for m in view]
        entries = archiver.entries
        try:
            new_view = session.commit_view(messages, entries, reason="provider:edits")
        except Exception as exc:  # the store refused: keep the old view, say so
            engine.emit(notice_of(ProviderEditsNotMirrored(error=str(exc))))
            return
        after = engine.measure(messages)
        keys = [e.key for e in entries]
        session.write_receipt(
            make_receipt(
                trigger="provider-edit",
                method="provider",
                level=0,
                messages_before=len(view),
                messages_after=len(messages),
                bytes_before=before,
                bytes_after=after,
                provider_bytes_before=before,
                provider_bytes_after=after,
                outcome="applied",
                elapsed_seconds=0.0,
                archive_keys=keys,
                session_id=session.id,
                cleared_tool_uses=edits.cleared_tool_uses,
                cleared_input_tokens=edits.cleared_input_tokens,
            ),
        )
        engine.emit(
            Compaction(
                trigger="provider-edit",
                method="provider",
                outcome="applied",
                bytes_before=before,
                bytes_after=after,
                messages_before=len(view),
                messages_after=len(messages),
                archive_keys=tuple(keys),
                view_id=new_view.id,
            )
        )
        engine.view_changed("provider-edits")

    @staticmethod
    def _stub(part: ToolResult, message: Message, archiver: Archiver) -> ToolResult | None:
        if part.content.startswith("[Tool result cleared by the provider"):
            return None  # already mirrored
        keys = archiver.stash(part.content, message)
        if keys is None:
            return None
        lines = part.content.count("\n") + 1
        summary = f"[Tool result cleared by the provider — {lines:,} lines, {len(part.content):,} chars]"
        return ToolResult(part.call_id, stub_text(summary, keys), part.is_error)

    # -- compaction → view -----------------------------------------------------------------------
    def _archive(self, replaced: Sequence[Message]) -> tuple[list[ArchiveEntry], list[str], list[str]]:
        """Archive what a compaction replaced: the segment, and each long text or tool result alone.
        Returns (entries, keys the notice names, every key)."""
        engine = self.engine
        ctx = engine.pass_context(engine.session.turn, engine.max_tokens, target_bytes=None)
        archiver = Archiver(ctx, ARCHIVE_REASON)
        named: list[str] = []
        segment = archive_segment(replaced, archiver)
        if segment is not None:
            entry, carried = segment
            named = [entry.key, *carried]
        for message in replaced:
            for part in message.parts:
                content = part.content if isinstance(part, ToolResult) else getattr(part, "text", None)
                if isinstance(content, str) and len(content) >= ARCHIVE_PART_MIN_CHARS:
                    archiver.stash(content, message)
        entries = archiver.entries
        return entries, named, [e.key for e in entries]

    def commit_compaction(
        self,
        anchor: Message,
        *,
        trigger: CompactionTrigger,
        started: float,
        kept: Sequence[Message] = (),
        tail: Sequence[Message] | None = None,
        replaced: Sequence[Message] | None = None,
    ) -> list[str] | None:
        """Commit a view that starts at `anchor` (the message carrying the compaction): the archive keys
        it made, or None when nothing was committed."""
        engine, session = self.engine, self.engine.session
        view = list(session.view.messages)
        if replaced is None:  # the compaction came in an answer: everything before it is replaced
            position = next((i for i, m in enumerate(view) if m.id == anchor.id), None)
            if position is None:
                return None
            replaced = [m for m in view[:position] if m.role != "system"]
            tail = view[position + 1 :]
        system = [m for m in view if m.role == "system" and m.meta.origin != "notice"]
        if not replaced:
            return None
        entries, named, keys = self._archive(replaced)
        # an earlier compaction's notice leaves the view: the keys it named are named again
        named += [
            k for m in view if m.role == "system" and m.meta.origin == "notice" for k in markers_in(m.text)
        ]
        size = sum(len(m.all_text().encode("utf-8", "surrogatepass")) for m in replaced)
        sources = [i for m in replaced for i in ((m.id,) if session.is_master(m) else m.meta.source_ids)]
        notice = _notice(len(replaced), size, named, sources, session.turn)
        messages = [*system, *kept, notice, anchor, *(tail or ())]
        before, after = engine.measure(view), engine.measure(messages)
        try:
            new_view = session.commit_view(messages, entries, reason=f"{trigger}:provider")
        except Exception as exc:  # the store refused: the old view stays, say so
            engine.emit(notice_of(CompactionNotSaved(by_provider=True, error=str(exc))))
            return None
        session.counters.add_compaction(trigger, 0, before - after)
        session.save_counters()
        elapsed = time.monotonic() - started
        session.write_receipt(
            make_receipt(
                trigger=trigger,
                method="provider",
                level=0,
                messages_before=len(view),
                messages_after=len(messages),
                bytes_before=before,
                bytes_after=after,
                provider_bytes_before=before,
                provider_bytes_after=after,
                outcome="applied",
                elapsed_seconds=elapsed,
                archive_keys=keys,
                session_id=session.id,
                provider=engine.provider.kind,
            ),
        )
        engine.emit(
            Compaction(
                trigger=trigger,
                method="provider",
                outcome="applied",
                bytes_before=before,
                bytes_after=after,
                messages_before=len(view),
                messages_after=len(messages),
                archive_keys=tuple(keys),
                view_id=new_view.id,
            )
        )
        engine.view_changed(f"compaction:{trigger}")
        return keys

    async def post_compact(
        self,
        trigger: CompactionTrigger,
        before: int,
        after: int,
        messages: tuple[int, int],
        keys: Sequence[str],
    ) -> None:
        sizes = {
            "bytes_before": before,
            "bytes_after": after,
            "messages_before": messages[0],
            "messages_after": messages[1],
        }
        await self.engine.hooks.post_compact(
            "manual" if trigger == "manual" else "auto", "applied", sizes, list(keys)
        )
