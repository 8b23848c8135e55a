"""Provider-native compaction on demand (`/compact` and the preflight with `context_engine = "provider"`): the
view compacted by the provider's own compaction request, turned into a bulkhead view (app.engine.native)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from app.engine.notice_words import notice
from app.model.events import CompactionPhase, CompactionTrigger
from app.model.messages import Message, Native
from app.model.notice_facts.compaction import (
    NativeCompactionEmpty,
    NativeCompactionFailed,
    NativeCompactionOverCap,
    NativeCompactionSavedNothing,
)
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.host import NativeHost


class NativeCompaction(Protocol):
    """What this module uses of `app.engine.native.NativeContext` (which calls it: `NativeContext.compact`)."""

    @property
    def engine(self) -> NativeHost: ...

    @property
    def supported(self) -> bool: ...

    def commit_compaction(
        self,
        anchor: Message,
        *,
        trigger: CompactionTrigger,
        started: float,
        kept: Sequence[Message] = (),
        tail: Sequence[Message] | None = None,
        replaced: Sequence[Message] | None = None,
    ) -> list[str] | None: ...

    async def post_compact(
        self,
        trigger: CompactionTrigger,
        before: int,
        after: int,
        messages: tuple[int, int],
        keys: Sequence[str],
    ) -> None: ...


async def _unless_cancelled(work: Any, cancel: asyncio.Event | None) -> Any:
    """Await `work`, or stop it when `cancel` is set first (None then)."""
    task = asyncio.ensure_future(work)
    if cancel is None:
        return await task
    waiter = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return None
    return task.result()


async def compact_on_demand(
    native: NativeCompaction,
    trigger: CompactionTrigger,
    instructions: str | None,
    cancel: asyncio.Event | None = None,
) -> PipelineResult | None:
    """Planned compaction through the provider. None when it cannot (the caller compacts locally)."""
    from app.engine.cap_guard import OverCap
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.sender import RequestFailed

    engine, session = native.engine, native.engine.session
    if not native.supported or (cancel is not None and cancel.is_set()):
        return None
    view = list(session.view.messages)
    last_prompt = max(
        (i for i, m in enumerate(view) if m.role == "user" and m.meta.origin == "user"), default=None
    )
    split = last_prompt if last_prompt is not None else len(view)
    prefix, tail = view[:split], view[split:]
    replaced = [m for m in prefix if m.role != "system"]
    if not replaced:
        return None
    started = time.monotonic()
    size = format_size(engine.measure(view))
    engine.emit(
        CompactionPhase(
            trigger=trigger,
            phase="start",
            text=f"📦 Asking {engine.provider.kind} to compact {len(replaced)} messages "
            f"({size}; Esc cancels)",
        )
    )
    provider = engine.provider
    try:
        request = provider.build_compaction(
            tuple(prefix), engine.system, engine.tools, instructions=instructions
        )
        sent = await _unless_cancelled(
            engine.sender.call(request, lambda: provider.send_compaction(request)), cancel
        )
        if sent is None:
            return None  # Esc: the local pipeline sees the cancel and reports it
        items, usage = sent
    except NotImplementedError:
        return None
    except (
        OverCap
    ) as over:  # the request carries what it compacts: it cannot be cut to fit, so it is not sent
        engine.emit(
            notice(
                NativeCompactionOverCap(
                    request_bytes=over.request.predicted_bytes,
                    cap_bytes=over.cap.bytes or 0,
                    cap_source=over.cap.source,
                )
            )
        )
        return None
    except RequestFailed as failed:
        from app.engine.betas import beta_refusal, remember_refusal, sent_betas

        refused = beta_refusal(failed.error, sent_betas(failed.request, provider))
        if refused is not None:  # remembered: the next compaction goes local at once
            remember_refusal(engine, provider, refused)
        engine.emit(notice(NativeCompactionFailed(reason=failed.failure.reason)))
        return None
    if usage is not None:
        session.counters.add_usage(usage, None, summarizer=True)
        session.save_counters()
    if not items:
        engine.emit(notice(NativeCompactionEmpty()))
        return None
    anchor = Message.create(
        "assistant",
        [Native(item.api, item.item) for item in items[-1:]],
        turn=session.turn,
        origin="summary",
        source_ids=tuple(m.id for m in replaced if session.is_master(m)),
    )
    # OpenAI's compacted window keeps the user messages before its compaction item.
    kept = (
        [m for m in replaced if m.role == "user" and m.meta.origin == "user"]
        if request.url.endswith("/responses/compact")
        else []
    )
    before = engine.measure(view)
    candidate = [*[m for m in prefix if m.role == "system"], *kept, anchor, *tail]
    if engine.measure(candidate) >= before:
        engine.emit(notice(NativeCompactionSavedNothing()))
        return None
    await engine.session.drain()
    keys = native.commit_compaction(
        anchor, trigger=trigger, started=started, kept=kept, tail=tail, replaced=replaced
    )
    if keys is None:
        return None
    after = engine.measure(session.view.messages)
    engine.emit(
        CompactionPhase(
            trigger=trigger,
            phase="done",
            text=f"✓ Compacted by the provider ({len(view)} → {len(session.view)} msgs, "
            f"{format_size(before)} → {format_size(after)})",
        )
    )
    await native.post_compact(trigger, before, after, (len(view), len(session.view)), keys)
    return PipelineResult(
        messages=session.view.messages,
        entries=[],
        reports=[],
        method="provider",
        level=0,
        changed=True,
        summary_missed=False,
        reached_target=True,
        cancelled=False,
        bytes_before=before,
        bytes_after=after,
    )
