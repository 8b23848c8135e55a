"""The recovery ladder: reactive, transactional, bounded, explained (DESIGN.md §6).

When a provider-origin request fails with a recoverable failure and no output became
visible:

1. payload-related: learn the cap (¾ of the rejected bytes, per endpoint), run the floor
   diagnosis (fail fast when the non-compactable base alone is too big), prepare the
   payload notice (once per session);
2. walk L1 → L2 → L3, one level per attempt, at most `max_recovery_attempts`. Each attempt
   builds a candidate view, rebuilds the real provider request and measures it: a
   candidate that is not smaller than the rejected request is not sent (nor, after a
   payload rejection, one above the learned cap while a further level remains);
3. success commits the candidate view with its archive entries; failure of every attempt
   leaves the previous view active — the master log was never touched.

Every attempt writes a receipt and fires PreCompact/PostCompact with trigger `recovery`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.engine.block_cause import judged_content
from app.engine.cap_guard import cap_label, over_cap
from app.engine.caps import learned_cap_for
from app.engine.compaction.context import PassContext, merge_entries
from app.engine.compaction.pipeline import recovery_candidate
from app.engine.failures import Failure
from app.engine.notice_words import notice as notice_of
from app.engine.payload import FloorDiagnosis, describe_floor, diagnose_floor, reduce_advice
from app.engine.receipts import make_receipt
from app.engine.sender import RequestFailed, StreamResult
from app.model.archive import ArchiveEntry
from app.model.events import CapLearned, Compaction, RecoveryOutcome, RecoveryStep
from app.model.messages import Message
from app.model.notice_facts.recovery import (
    CapAssumed,
    CapLearnedFromRejection,
    FloorNearLimit,
    FloorTooBig,
    WindowLearned,
)
from app.model.prompts import PAYLOAD_NOTICE, PAYLOAD_NOTICE_PREFIXES
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.host import RecoveryHost

TOP_LEVEL = 3


class TurnFailed(Exception):
    """The turn could not get an answer; `message` says why and what to do."""

    def __init__(self, message: str, failure: Failure | None = None, *, visible: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.failure = failure
        self.visible = visible


@dataclass
class _Attempt:
    level: int
    attempt: int
    started: float


class Recovery:
    def __init__(self, engine: RecoveryHost) -> None:
        self.engine = engine

    # -- the ladder -------------------------------------------------------------------------------
    async def recover(self, failed: RequestFailed, *, max_tokens: int, turn: int) -> StreamResult:
        engine, session, settings = self.engine, self.engine.session, self.engine.settings
        failure = failed.failure
        rejected = self._rejected_bytes(failed)
        notice: Message | None = None
        # A 403 that no evidence tells from a content block (app.engine.block_cause): the ladder runs, but
        # the cap is learned only when a smaller request passes; if every smaller resend that keeps the
        # newest messages is refused too, it was the content, and nothing is learned.
        deferred = _undecided_block(failure)
        first_failure, first_rejected, refused_smaller = failure, rejected, 0
        if failure.payload_related and not deferred:
            self._learn_cap(failure, rejected)
            self._check_floor(failure, rejected)
            if not self._notice_present():
                notice = Message.create("user", PAYLOAD_NOTICE, turn=turn, origin="notice")
        elif failure.kind == "context_overflow":
            window = failure.stated_window_tokens
            if window and window < engine.context_window:
                session.set_flag("learned_window", window)
                engine.emit(
                    notice_of(WindowLearned(tokens=window, per_minute=failure.rule_id == "overflow.tpm"))
                )

        base = session.view.messages + ((notice,) if notice else ())
        candidate_messages = base
        entries: list[ArchiveEntry] = []
        bytes_before = rejected
        last = failed
        smallest_over_cap: int | None = None  # the smallest candidate left unsent for being over the cap
        # A failure may allow fewer attempts, from a higher level (a gateway's HTML 400 or 408: one try with
        # fewer messages); by default the whole ladder, L1 first.
        attempts = settings.max_recovery_attempts
        if failure.ladder_limit is not None:
            attempts = min(attempts, failure.ladder_limit)
        for attempt in range(1, attempts + 1):
            level = min(failure.ladder_start + attempt - 1, TOP_LEVEL)
            step = _Attempt(level, attempt, time.monotonic())
            await engine.hooks.pre_compact("recovery", "")
            ctx = self._context(turn, max_tokens, failure, entries)
            chain = recovery_candidate(level, candidate_messages, ctx)
            candidate_messages = chain.messages
            entries = merge_entries(entries, chain.entries)
            request = engine.provider.build(
                candidate_messages, engine.system, engine.tools, max_tokens=max_tokens
            )
            cap_info = engine.cap_info()
            cap = cap_info.bytes
            skip: RecoveryOutcome | None = None
            if request.predicted_bytes >= rejected:
                skip = "not_smaller"
            elif over_cap(request, cap_info):  # nothing predicted over the effective cap is sent
                skip = "over_cap"
                smallest_over_cap = min(smallest_over_cap or request.predicted_bytes, request.predicted_bytes)
            if skip:
                why = (
                    "is not smaller than the rejected request"
                    if skip == "not_smaller"
                    else f"is still above the {cap_label(cap_info)} ({format_size(cap or 0)})"
                )
                engine.emit(
                    RecoveryStep(
                        level=level,
                        attempt=attempt,
                        max_attempts=attempts,
                        bytes_before=rejected,
                        bytes_after=request.predicted_bytes,
                        outcome=skip,
                        kind=failure.kind,
                        reason=f"L{level} candidate ({format_size(request.predicted_bytes)}) {why}; not sent",
                    )
                )
                await self._finish_attempt(
                    step,
                    "skipped",
                    base,
                    candidate_messages,
                    bytes_before,
                    request.predicted_bytes,
                    entries,
                    retry_success=None,
                )
                continue
            engine.emit(
                RecoveryStep(
                    level=level,
                    attempt=attempt,
                    max_attempts=attempts,
                    bytes_before=rejected,
                    bytes_after=request.predicted_bytes,
                    outcome="sending",
                    kind=failure.kind,
                    reason=f"L{level}: {len(base)} → {len(candidate_messages)} messages, "
                    f"{format_size(rejected)} → {format_size(request.predicted_bytes)}",
                )
            )
            try:
                result = await engine.sender.send(request, level=level, attempt=attempt)
            except RequestFailed as again:
                await self._finish_attempt(
                    step,
                    "failed",
                    base,
                    candidate_messages,
                    bytes_before,
                    request.predicted_bytes,
                    entries,
                    retry_success=False,
                )
                last = again
                if again.partial_text:
                    engine.keep_partial(again.partial_text, turn, again.failure)
                    raise TurnFailed(again.failure.reason, again.failure, visible=True) from again
                if again.failure.cause == "content":
                    raise TurnFailed(self._content_message(again.failure), again.failure) from again
                if not again.failure.recoverable:
                    break
                failure = again.failure
                rejected = self._rejected_bytes(again)
                if deferred and _undecided_block(failure):
                    refused_smaller += 1
                elif failure.payload_related:
                    self._learn_cap(failure, rejected)
                    self._check_floor(failure, rejected)
                continue
            if deferred:  # a smaller request passed: the 403 was about size after all
                self._learn_cap(first_failure, first_rejected)
            # Success: the candidate becomes the active view, with its archive entries, in one transaction.
            await session.drain()  # a view commit reads the database: our appends first, off the loop
            view = session.commit_view(candidate_messages, entries, reason=f"recovery:L{level}")
            if notice is not None:
                session.set_flag("payload_notice_injected", True)
            if level == 1:
                session.set_flag("budget_scale", 0.5)
            session.counters.recoveries_ok += 1
            session.counters.add_compaction("recovery", level, rejected - request.predicted_bytes)
            session.save_counters()
            await self._finish_attempt(
                step,
                "applied",
                base,
                candidate_messages,
                bytes_before,
                request.predicted_bytes,
                entries,
                retry_success=True,
            )
            engine.emit(
                RecoveryStep(
                    level=level,
                    attempt=attempt,
                    max_attempts=attempts,
                    bytes_before=bytes_before,
                    bytes_after=request.predicted_bytes,
                    outcome="succeeded",
                    kind=failed.failure.kind,
                    reason=f"recovered at L{level}",
                )
            )
            engine.emit(
                Compaction(
                    trigger="recovery",
                    method=f"L{level}",
                    outcome="applied",
                    bytes_before=bytes_before,
                    bytes_after=request.predicted_bytes,
                    messages_before=len(base),
                    messages_after=len(candidate_messages),
                    level=level,
                    archive_keys=tuple(e.key for e in entries),
                    view_id=view.id,
                )
            )
            engine.view_changed("recovery")
            return result

        session.counters.recoveries_failed += 1
        session.save_counters()
        final = last.failure
        if deferred and refused_smaller and _undecided_block(final):
            content = judged_content(
                final,
                f"{refused_smaller} smaller resend(s) keeping the newest messages were refused too "
                f"(down to {format_size(rejected)} from {format_size(first_rejected)})",
            )
            self._record_content_block(content)
            raise TurnFailed(self._content_message(content), content) from last
        engine.emit(
            RecoveryStep(
                level=min(failure.ladder_start + attempts - 1, TOP_LEVEL),
                attempt=attempts,
                max_attempts=attempts,
                bytes_before=bytes_before,
                bytes_after=None,
                outcome="exhausted",
                kind=final.kind,
                reason=final.reason,
            )
        )
        tried = f"{attempts} attempt" + ("" if attempts == 1 else "s")
        advice = (
            "/retry to try again, /compact to summarise first, or lower max_payload."
            if final.payload_related or final.kind == "context_overflow"
            else "/compact to summarise first, or /retry."
        )
        message = f"Recovery failed after {tried} — {final.reason}. The conversation is unchanged; {advice}"
        if (
            last is failed and smallest_over_cap is not None
        ):  # nothing was sent: every candidate was over the cap
            floor = engine.floor_sizes().total_bytes
            cap_now = engine.cap_info()
            message = (
                f"Recovery failed — {final.reason}; the smallest candidate ({format_size(smallest_over_cap)}) is "
                f"still over the {cap_label(cap_now)} ({format_size(cap_now.bytes or 0)}), and nothing over it "
                f"is sent (the request base alone is {format_size(floor)}). The conversation is unchanged; "
                f"/compact to summarise first, or raise max_payload if the gateway takes more."
            )
        raise TurnFailed(message, final) from last

    # -- pieces -----------------------------------------------------------------------------------
    def _content_message(self, failure: Failure) -> str:
        from app.engine.content_words import content_block_message

        return content_block_message(failure, session_id=self.engine.session.id)

    def _record_content_block(self, failure: Failure) -> None:
        from app.engine.profile_evidence import record_judged_block

        record_judged_block(self.engine.state, self.engine.route.endpoint_id, failure)

    def _rejected_bytes(self, failed: RequestFailed) -> int:
        return (
            failed.failure.rejected_bytes
            or failed.error.request_bytes
            or failed.request.actual_bytes
            or failed.request.predicted_bytes
        )

    def _learn_cap(self, failure: Failure, rejected: int | None) -> None:
        engine = self.engine
        endpoint = engine.route.endpoint_id
        if rejected:
            cap = learned_cap_for(rejected)
            learned = engine.state.learn_cap(
                endpoint, cap, rejected_bytes=rejected, kind=failure.kind, reason=failure.reason
            )
            engine.emit(
                CapLearned(
                    cap_bytes=learned.cap_bytes,
                    rejected_bytes=rejected,
                    endpoint=endpoint,
                    reason=failure.reason,
                )
            )
            engine.emit(
                notice_of(
                    CapLearnedFromRejection(
                        rejected_bytes=rejected, cap_bytes=learned.cap_bytes, endpoint=endpoint
                    )
                )
            )
        elif engine.cap_info().bytes is None:
            assumed = engine.settings.fallback_cap
            engine.session.set_flag("assumed_cap", assumed)
            engine.emit(
                CapLearned(
                    cap_bytes=assumed,
                    rejected_bytes=None,
                    endpoint=endpoint,
                    reason=failure.reason,
                    assumed=True,
                )
            )
            engine.emit(notice_of(CapAssumed(cap_bytes=assumed)))

    def _check_floor(self, failure: Failure, rejected: int | None) -> None:
        engine = self.engine
        floor = engine.floor_sizes()
        # The smallest body this endpoint is known to refuse: this rejection, or one remembered from before.
        remembered = engine.state.learned_cap(engine.route.endpoint_id)
        known = [n for n in (rejected, remembered.rejected_bytes if remembered else None) if n]
        smallest = min(known) if known else None
        diagnosis = diagnose_floor(
            floor.parts, floor.total_bytes, smallest, mcp_servers=dict(floor.mcp_servers)
        )
        cap = engine.cap_info()
        if not diagnosis.fail_fast and cap.bytes and floor.total_bytes >= cap.bytes:
            # nothing over the effective cap is sent: a base at or above it leaves no request to send
            diagnosis = FloorDiagnosis(
                True,
                False,
                f"The non-compactable request base ({format_size(floor.total_bytes)}: "
                f"{describe_floor(floor.parts)}) is over the {cap_label(cap)} ({format_size(cap.bytes)}; "
                f"{cap.detail}), and nothing over it is sent. History compaction cannot help — "
                f"{reduce_advice(floor.parts)}; or raise max_payload if the gateway takes more.",
            )
        if diagnosis.warn:
            engine.emit(
                notice_of(
                    FloorNearLimit(
                        base_bytes=floor.total_bytes, refused_bytes=smallest, diagnosis=diagnosis.message
                    )
                )
            )
        if diagnosis.fail_fast:
            engine.emit(
                notice_of(
                    FloorTooBig(
                        base_bytes=floor.total_bytes,
                        refused_bytes=smallest,
                        cap_bytes=cap.bytes,
                        diagnosis=diagnosis.message,
                    )
                )
            )
            engine.emit(
                RecoveryStep(
                    level=0,
                    attempt=0,
                    max_attempts=engine.settings.max_recovery_attempts,
                    bytes_before=rejected,
                    bytes_after=floor.total_bytes,
                    outcome="refused",
                    kind=failure.kind,
                    reason="the request base alone is too big",
                )
            )
            engine.session.counters.recoveries_failed += 1
            engine.session.save_counters()
            engine.session.write_receipt(
                make_receipt(
                    trigger="recovery",
                    method="floor",
                    level=0,
                    messages_before=len(engine.session.view),
                    messages_after=len(engine.session.view),
                    bytes_before=rejected or 0,
                    bytes_after=rejected or 0,
                    outcome="failed",
                    elapsed_seconds=0.0,
                    retry_success=False,
                    reason=diagnosis.message,
                ),
            )
            raise TurnFailed(diagnosis.message, failure)

    def _notice_present(self) -> bool:
        session = self.engine.session
        if session.flags.get("payload_notice_injected"):
            return True
        return any(
            prefix in m.all_text() for m in session.view.messages for prefix in PAYLOAD_NOTICE_PREFIXES
        )

    def _context(
        self, turn: int, max_tokens: int, failure: Failure, entries: list[ArchiveEntry]
    ) -> PassContext:
        engine = self.engine
        ctx = engine.pass_context(turn, max_tokens, target_bytes=self._target(failure))
        return ctx.with_entries(entries) if entries else ctx

    def _target(self, failure: Failure) -> int:
        """What L3's shrink aims at: under the cap after a payload rejection, half the window otherwise."""
        engine = self.engine
        cap = engine.cap_info().bytes
        window_target = int(
            engine.settings.compact_target * engine.usable_window_tokens() * engine.bytes_per_token
        )
        if failure.payload_related and cap:
            return min(int(cap * engine.settings.preflight_target), window_target)
        return window_target

    async def _finish_attempt(
        self,
        step: _Attempt,
        outcome: str,
        before: tuple[Message, ...],
        after: tuple[Message, ...],
        bytes_before: int,
        bytes_after: int,
        entries: list[ArchiveEntry],
        *,
        retry_success: bool | None,
    ) -> None:
        engine = self.engine
        keys = [e.key for e in entries]
        engine.session.write_receipt(
            make_receipt(
                trigger="recovery",
                method=f"L{step.level}",
                level=step.level,
                messages_before=len(before),
                messages_after=len(after),
                bytes_before=bytes_before,
                bytes_after=bytes_after,
                provider_bytes_before=bytes_before,
                provider_bytes_after=bytes_after,
                outcome=outcome,
                elapsed_seconds=time.monotonic() - step.started,
                archive_keys=keys,
                retry_success=retry_success,
                attempt=step.attempt,
                session_id=engine.session.id,
            ),
        )
        await engine.hooks.post_compact(
            "recovery",
            "failed" if outcome == "failed" else outcome,
            {
                "bytes_before": bytes_before,
                "bytes_after": bytes_after,
                "messages_before": len(before),
                "messages_after": len(after),
            },
            keys,
        )


def _undecided_block(failure: Failure) -> bool:
    """A 403 block whose cause no evidence decided (app.engine.block_cause: size is then only a guess)."""
    return failure.kind == "waf_block" and failure.cause == "unknown"
