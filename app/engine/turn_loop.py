"""The turn loop: a prompt (or `/retry`) run to its answer.

A turn: UserPromptSubmit hook → the user message joins the master log → at each boundary the preflight
(byte cap, context window) may compact → the request is built from the active view, sent and streamed → tool
calls run (hooks, approvals) and their results are appended → repeat until the model stops; an answer cut at
max_tokens is continued with doubled max_tokens (at most `max_token_escalations` times). A recoverable provider
failure before any visible output goes to the recovery ladder; after visible output the partial answer is
kept, marked partial, and nothing is retried.

It sees the engine only through `LoopHost` (app.engine.host).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.engine.betas import retry_without_betas
from app.engine.cap_guard import OverCap
from app.engine.chat_fit import fit_under_cap
from app.engine.notice_words import notice
from app.engine.payload import preflight
from app.engine.records import TurnResult
from app.engine.recovery import TurnFailed
from app.engine.sender import RequestFailed, StreamResult
from app.model.events import AnswerFinished, TurnFinished, TurnOutcome, TurnStarted
from app.model.messages import Image, Message, Native, Part, Text, ToolCall
from app.model.notice_facts.turn import (
    AnswerContinued,
    AnswerCutKept,
    FloorAboveTarget,
    ImagesStubbed,
    InterruptedTurnClosed,
    NoCapWarned,
    PreflightCompacting,
    PromptBlocked,
    RetryAsking,
    ToolRoundsStopped,
    TurnFailure,
)
from app.model.prompts import CONTINUATION, INTERRUPTED_TURN

if TYPE_CHECKING:
    from app.engine.failures import Failure
    from app.engine.host import LoopHost

MAX_TOOL_ROUNDS = 50  # tool round trips in one turn before bulkhead stops and asks the user
ANSWER_SEPARATOR = "\n\n"  # between the assistant messages of one turn (text, tool calls, more text)


def join_answers(texts: Sequence[str]) -> str:
    """The turn's answer: its assistant messages' texts, apart (a message with no text is skipped; one
    message is returned as it is)."""
    parts = [text for text in texts if text.strip()]
    if len(parts) <= 1:
        return parts[0] if parts else "".join(texts)
    return ANSWER_SEPARATOR.join(text.strip("\n") for text in parts)


class TurnLoop:
    def __init__(self, host: LoopHost) -> None:
        self.host = host

    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult:
        """Run one user turn to its end. Never raises for provider failures: see TurnResult.

        `typed`: the part of `prompt` the user typed, the only text whose `@paths` are attached
        (`bulkhead -p` passes its argument: text piped in is data, never a mention). None: all of it.
        """
        async with self.host.lock:
            verdict = await self.host.hooks.user_prompt_submit(prompt)
            if verdict.blocked:
                self.host.emit(notice(PromptBlocked(reason=verdict.reason)))
                return TurnResult("blocked", error=verdict.reason)
            self._close_interrupted_turn()
            turn = self.host.session.turn + 1
            typed_text = prompt if typed is None else typed
            parts: list[Part] = [Text(prompt), *images, *(await self.host.prompt_images(typed_text))]
            if verdict.additional_context:
                parts.append(Text(f"\n\n[hook context]\n{verdict.additional_context}"))
            self.host.session.append(Message.create("user", parts, turn=turn))
            self.host.emit(TurnStarted(turn=turn, prompt=prompt))
            result = await self.run_turn(turn, mentions=self.host.mentions(typed_text))
            await self.host.session.drain()  # the turn is on disk when it is over (raises a held failure)
            return result

    def _close_interrupted_turn(self) -> None:
        """A turn killed before the model answered (Esc, a crash) leaves its prompt last in the view; the
        next prompt would be sent merged with it, and the model would carry out both. Say it got no answer.
        Only a request is unanswered: bulkhead's own notes last in the view (/undo's, a summary left last by
        /rewind, a /recall) asked the model nothing, and nothing failed (issue 40)."""
        view = self.host.session.view.messages
        last = next((m for m in reversed(view) if m.role != "system"), None)
        if last is None or not awaits_answer(last):
            return
        self.host.session.append(
            Message.create("assistant", INTERRUPTED_TURN, turn=self.host.session.turn, origin="notice")
        )
        self.host.emit(notice(InterruptedTurnClosed()))

    async def retry(self) -> TurnResult:
        """`/retry`: ask again for the last answer — failed, partial or complete — from the current view.

        A failed turn is sent again as it stands; a partial answer is dropped from the view and asked
        for again; a complete one is regenerated from the prompt that asked for it (the view goes back
        to just after that prompt and its @attachments, so tools run again). The master log keeps
        every earlier answer."""
        async with self.host.lock:
            view = self.host.session.view.messages
            if not view:
                return TurnResult("failed", error="nothing to retry yet")
            last = view[-1]
            await self.host.session.drain()  # commit_view reads the database: our appends first, off the loop
            if last.role == "assistant" and last.meta.partial:
                self.host.session.commit_view(view[:-1], [], reason="retry")
            elif last.role == "assistant":
                cut = retry_point(view)
                if cut is None:
                    return TurnResult("failed", error="no prompt of yours in the view to ask again")
                self.host.session.commit_view(view[:cut], [], reason="retry")
                self.host.emit(notice(RetryAsking()))
            turn = self.host.session.turn
            self.host.emit(TurnStarted(turn=turn, prompt="/retry"))
            result = await self.run_turn(turn)
            await self.host.session.drain()
            return result

    async def run_turn(self, turn: int, mentions: Sequence[ToolCall] = ()) -> TurnResult:
        self.host.fallback.turn_started()  # on the chain's first route again, unless fallback_sticky
        await self.host.memory.yield_to_turn()  # no background memory read competes with the turn's requests
        max_tokens = self.host.max_tokens
        escalations = 0
        answer: list[str] = []  # one entry per assistant message; a continuation extends the last one
        continuing = False
        self.host.turn_running = turn  # the turn file changes are checkpointed under
        self.host.tool_cancel.clear()
        from app.tools.budget import TurnBudget

        budget = TurnBudget(
            max(
                1,
                int(
                    self.host.settings.turn_budget_chars
                    * float(self.host.session.flags.get("budget_scale", 1.0))
                ),
            )
        )
        stop_hook_active = False
        try:
            await self.host.await_mcp()
            if mentions:  # attached as if the model had read them, before it answers
                self.host.session.append(
                    Message.create("assistant", list(mentions), turn=turn, origin="mention")
                )
                await self.host.run_tools(mentions, turn, budget, by_user=True)
            for _round in range(MAX_TOOL_ROUNDS):
                await self.boundary(turn, max_tokens)
                result = await self.host.fallback.request(
                    turn, max_tokens
                )  # along the fallback chain if need be
                max_tokens = min(
                    max_tokens, self.host.model_output_cap
                )  # the route that answered may allow less
                if partials := self.host.fallback.take_partials():  # kept from a route that failed mid-answer
                    answer.extend(partials)
                    continuing = True
                if continuing and answer:
                    answer[-1] += result.text
                else:
                    answer.append(result.text)
                continuing = False
                cut = result.stop_reason == "max_tokens" and not result.tool_calls
                can_escalate = (
                    escalations < self.host.settings.max_token_escalations
                    and max_tokens < self.host.model_output_cap
                )
                message = self._commit_answer(result, turn, partial=cut and not can_escalate)
                await self.host.native.after_answer(result, message)
                if result.tool_calls:
                    await self.host.run_tools(result.tool_calls, turn, budget)
                    continue
                if cut and can_escalate:
                    escalations += 1
                    max_tokens = min(max_tokens * 2, self.host.model_output_cap)
                    self.host.emit(
                        notice(
                            AnswerContinued(
                                max_tokens=max_tokens,
                                escalation=escalations,
                                escalations_max=self.host.settings.max_token_escalations,
                            )
                        )
                    )
                    self.host.session.append(Message.create("user", CONTINUATION, turn=turn, origin="notice"))
                    continuing = True
                    continue
                if cut:
                    self.host.emit(notice(AnswerCutKept(escalations=escalations)))
                self.host.emit(
                    AnswerFinished(message_id=message.id, stop_reason=result.stop_reason, partial=cut)
                )
                verdict = await self.host.hooks.stop(stop_hook_active)
                if verdict.additional_context and not stop_hook_active:
                    # A Stop hook said "not done yet" (Claude Code's decision: block): one more round.
                    stop_hook_active = True
                    self.host.session.append(
                        Message.create(
                            "user", f"[Stop hook] {verdict.additional_context}", turn=turn, origin="notice"
                        )
                    )
                    continue
                break
            else:
                self.host.emit(notice(ToolRoundsStopped(rounds=MAX_TOOL_ROUNDS)))
            self.host.emit(TurnFinished(turn=turn, outcome="answered"))
            return TurnResult("answered", join_answers(answer))
        except TurnFailed as failed:
            self.host.emit(
                notice(
                    TurnFailure(
                        explanation=failed.message,
                        partial=failed.visible,
                        failure_kind=failed.failure.kind if failed.failure is not None else None,
                        status=failed.failure.status if failed.failure is not None else None,
                    )
                )
            )
            outcome: TurnOutcome = "partial" if failed.visible else "failed"
            self.host.emit(TurnFinished(turn=turn, outcome=outcome, error=failed.message))
            return TurnResult(outcome, join_answers(answer), failed.message, failed.failure)
        except asyncio.CancelledError:
            if self.host.sender.streamed_text:
                self.keep_partial(self.host.sender.streamed_text, turn, None)
            self.host.emit(TurnFinished(turn=turn, outcome="cancelled"))
            raise
        finally:
            if self.host.take_instructions_changed():
                self.host.load_instructions()
                self.host.announce_instructions()
            self.host.view_changed("turn")
            with contextlib.suppress(Exception):
                self.host.keep_view_size()
            self.host.memory.after_turn()  # the memory worker reads a few turns behind, in the background

    async def boundary(self, turn: int, max_tokens: int) -> None:
        """Before each request: compact against the byte cap or the window, or warn once."""
        self.host.native.prepare()
        predicted = self.host.measure(self.host.session.view.messages, max_tokens)
        decision = preflight(
            predicted,
            self.host.cap_info(),
            settings=self.host.settings,
            context_window=self.host.context_window,
            max_output_tokens=max_tokens,
            bytes_per_token=self.host.bytes_per_token,
            warned_no_cap=bool(self.host.session.flags.get("no_cap_warned")),
        )
        if decision.action == "warn":
            self.host.session.set_flag("no_cap_warned", True)
            self.host.emit(notice(NoCapWarned(predicted_bytes=predicted, explanation=decision.message)))
        elif decision.action == "compact":
            sizes = self.host.floor_sizes()
            floor = sizes.total_bytes
            if decision.target_bytes is not None and floor >= decision.target_bytes:
                from app.engine.payload import FLOOR_LABELS

                shown = [part for part in sizes.parts if part.label in FLOOR_LABELS]
                self.host.emit(
                    notice(
                        FloorAboveTarget(
                            trigger=decision.trigger,
                            over=decision.message.split(" — ")[0],
                            floor_bytes=floor,
                            target_bytes=decision.target_bytes,
                            parts=tuple(part.label for part in shown),
                            part_bytes=tuple(part.bytes for part in shown),
                            servers=tuple(name for name, _ in sizes.mcp_servers),
                            server_bytes=tuple(size for _, size in sizes.mcp_servers),
                        )
                    )
                )
                return
            self.host.emit(
                notice(
                    PreflightCompacting(
                        trigger=decision.trigger,
                        predicted_bytes=predicted,
                        target_bytes=decision.target_bytes,
                        explanation=decision.message,
                    )
                )
            )
            await self.host.compactor.run(trigger=decision.trigger, target_bytes=decision.target_bytes)

    async def request(self, turn: int, max_tokens: int) -> StreamResult:
        request = self.host.provider.build(
            self.host.session.view.messages, self.host.system, self.host.tools, max_tokens=max_tokens
        )
        try:
            try:
                result = await self.host.sender.send(request)
            except OverCap as over:  # never sent: compact until it fits (or the turn says why it cannot)
                request = await fit_under_cap(self.host, over, max_tokens)
                result = await self.host.sender.send(request)
            except RequestFailed as failed:  # a gateway that refuses or strips a beta: once more without it
                retried = await retry_without_betas(self.host, failed, request, max_tokens)
                if retried is None:
                    raise
                request, result = retried
        except OverCap as over:
            raise TurnFailed(f"Not sent: {over.message}.") from over
        except RequestFailed as failed:
            if failed.partial_text:
                self.keep_partial(failed.partial_text, turn, failed.failure)
                raise TurnFailed(
                    f"{failed.failure.reason} — the answer so far is kept, marked partial; "
                    f"/retry to ask again",
                    failed.failure,
                    visible=True,
                ) from failed
            if failed.failure.cause == "content":  # recorded in the endpoint's profile at the rejection
                from app.engine.content_words import content_block_message

                raise TurnFailed(
                    content_block_message(failed.failure, session_id=self.host.session.id), failed.failure
                ) from failed
            if failed.failure.recoverable:
                result = await self.host.recovery.recover(failed, max_tokens=max_tokens, turn=turn)
            elif (repaired := await self._without_images(failed, max_tokens)) is not None:
                result = repaired
            elif failed.failure.transient:  # the sender's retries ran out
                from app.engine.failures import give_up_advice

                retries = self.host.sender.retry_policy.max_attempts
                tried = (
                    f"still failing after {retries} {'retry' if retries == 1 else 'retries'}"
                    if retries
                    else "not retried (retry_max_attempts = 0)"
                )
                raise TurnFailed(
                    f"{failed.failure.reason} — {tried}: {give_up_advice(failed.failure, request.url)}",
                    failed.failure,
                ) from failed
            else:
                from app.engine.failures import describe_action

                action = describe_action(failed.failure).removeprefix("fail: ")
                raise TurnFailed(f"{failed.failure.reason} — {action}", failed.failure) from failed
        self.host.calibrate(result)
        return result

    async def _without_images(self, failed: RequestFailed, max_tokens: int) -> StreamResult | None:
        """A 400 about an image with images in the view: stub them (`app.engine.image_repair`), say so, and
        send once more. None when it does not apply; raises the new failure if the retry fails too."""
        from app.engine.image_repair import names_an_image, stub_images

        said = " ".join([str(failed.error), failed.failure.reason, *failed.failure.evidence])
        if not names_an_image(failed.error.status, said):
            return None
        messages, count = stub_images(self.host.session.view.messages)
        if not count:
            return None
        await self.host.session.drain()
        self.host.session.commit_view(messages, [], reason="image_repair")
        self.host.emit(
            notice(ImagesStubbed(images=count, reason=failed.failure.reason, status=failed.failure.status))
        )
        self.host.view_changed("image_repair")
        request = self.host.provider.build(
            self.host.session.view.messages, self.host.system, self.host.tools, max_tokens=max_tokens
        )
        try:
            return await self.host.sender.send(request)
        except RequestFailed as again:
            raise TurnFailed(
                f"{again.failure.reason} — even with the images removed", again.failure
            ) from again

    def _commit_answer(self, result: StreamResult, turn: int, *, partial: bool) -> Message:
        parts: list[Part] = [Native(n.api, n.item) for n in result.natives]
        parts += [Text(result.text)] if result.text else []
        parts += [ToolCall(c.id, c.name, c.args) for c in result.tool_calls]
        if not parts:
            parts = [Text("")]
        message = self.host.session.append(
            Message.create(
                "assistant", parts, message_id=self.host.sender.draft.message_id, turn=turn, partial=partial
            )
        )
        self.host.sender.draft.clear()
        return message

    def keep_partial(self, text: str, turn: int, failure: Failure | None) -> None:
        """Keep what became visible of a failed answer, marked partial (never retried)."""
        self.host.session.append(
            Message.create(
                "assistant", text, message_id=self.host.sender.draft.message_id, turn=turn, partial=True
            )
        )
        self.host.sender.draft.clear()
        self.host.sender.forget_streamed_text()


def retry_point(view: Sequence[Message]) -> int | None:
    """Where the view is cut to regenerate its last answer: just after the user's last prompt and the
    @attachments that came with it (None when the view holds no prompt of the user's)."""
    prompt = next(
        (i for i in range(len(view) - 1, -1, -1) if view[i].role == "user" and view[i].meta.origin == "user"),
        None,
    )
    if prompt is None:
        return None
    cut = prompt + 1
    if cut < len(view) and view[cut].role == "assistant" and view[cut].meta.origin == "mention":
        cut += 1
        while cut < len(view) and view[cut].role == "tool":
            cut += 1
    return cut


def awaits_answer(message: Message) -> bool:
    """Was `message` sent for the model to answer: a prompt (with its @mentions), tool results, or the
    request to continue a cut answer? An assistant message and bulkhead's notes are not."""
    if message.role == "tool":
        return True
    if message.role != "user":
        return False
    return message.meta.origin in ("user", "mention") or message.text == CONTINUATION
