"""The turn loop, and the Engine both front ends drive.

    engine = Engine(settings, session, route, provider, state=State(), approver=...)
    await engine.start()
    result = await engine.submit("fix the failing test")

A turn: UserPromptSubmit hook → the user message joins the master log → at each boundary
the preflight (byte cap, context window) may compact → the request is built from the
active view, sent and streamed → tool calls run (hooks, approvals) and their results are
appended → repeat until the model stops; an answer cut at max_tokens is continued with
doubled max_tokens (at most `max_token_escalations` times). A recoverable provider
failure before any visible output goes to the recovery ladder; after visible output the
partial answer is kept, marked partial, and nothing is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import random
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.config import Route, Settings
from app.engine.betas import retry_without_betas
from app.engine.budget import Budget
from app.engine.cap_guard import OverCap
from app.engine.chat_fit import fit_under_cap
from app.engine.checkpoints import Checkpoints, Restored
from app.engine.compaction.context import PassContext
from app.engine.compactor import Compactor
from app.engine.context_report import ContextReport
from app.engine.describe import describe
from app.engine.failures import PAYLOAD_KINDS, Failure
from app.engine.fallback import FallbackChain
from app.engine.history import History
from app.engine.hooks import HookRunner
from app.engine.instructions import Instructions, join_system
from app.engine.mcp_link import McpLink
from app.engine.memory.worker import MemoryWorker
from app.engine.native import NativeContext
from app.engine.payload import (
    CapInfo,
    FloorSizes,
    heaviest_servers,
    preflight,
)
from app.engine.permissions import Permissions
from app.engine.profile_evidence import (
    StreamQuirks,
    apply_profile,
    confirm_workspace_gateways,
    on_failure,
    workspace_gateway_notices,
)
from app.engine.records import TurnResult
from app.engine.recovery import Recovery, TurnFailed
from app.engine.resets import SizeEvidence
from app.engine.retry import RetryPolicy
from app.engine.sender import RequestFailed, Sender, StreamResult, leftover_drafts
from app.engine.session import Session
from app.engine.tool_runner import Approver, ToolRunner
from app.engine.user_rules import build_rules
from app.engine.workspace_rules import confirm_rule_files, load_permissions
from app.engine.workspace_rules import start_notices as rule_start_notices
from app.model.events import (
    AnswerFinished,
    Event,
    Notice,
    Rejection,
    TurnFinished,
    TurnOutcome,
    TurnStarted,
    ViewChanged,
)
from app.model.messages import Image, Message, Native, Text, ToolCall
from app.model.prompts import CONTINUATION, INTERRUPTED_TURN, SYSTEM_PROMPT
from app.model.tools import ToolSpec
from app.providers.base import Provider, Request
from app.providers.catalog import model_limits
from app.providers.factory import make_provider
from app.sizes import format_size
from app.state import State
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.checkpoints import Snapshot
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.compaction.summarize import ContextEngine
    from app.mcp.deferral import DeferralPlan
    from app.mcp.manager import Ask as McpAsk
    from app.mcp.manager import McpManager
    from app.mcp.toolset import McpToolset

MAX_TOOL_ROUNDS = 50  # tool round trips in one turn before bulkhead stops and asks the user
# Events kept in the store, so a resumed session's inspector can show them again.
STORED_EVENTS = frozenset(
    {
        "rejection",
        "cap_learned",
        "recovery",
        "compaction",
        "hook",
        "notice",
        "provider_edits",
        "fallback",
        "fallback_answered",
        "memory_queued",
        "memory_distilled",
    }
)


ANSWER_SEPARATOR = "\n\n"  # between the assistant messages of one turn (text, tool calls, more text)


def join_answers(texts: Sequence[str]) -> str:
    """The turn's answer: its assistant messages' texts, apart (a message with no text is skipped; one
    message is returned as it is)."""
    parts = [text for text in texts if text.strip()]
    if len(parts) <= 1:
        return parts[0] if parts else "".join(texts)
    return ANSWER_SEPARATOR.join(text.strip("\n") for text in parts)


class Engine:
    def __init__(
        self,
        settings: Settings,
        session: Session,
        route: Route,
        provider: Provider,
        *,
        state: State | None = None,
        approver: Approver | None = None,
        hooks: HookRunner | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
        tools: Sequence[ToolSpec] | None = None,
        workspace: Path | None = None,
        mcp: McpManager | None = None,
    ) -> None:
        from app.engine.tool_choice import offered_tools

        self.settings = settings
        self.session = session
        if not session.read_only:
            session.start_writer()  # its disk writes leave the event loop (app.engine.writer); close() drains
        self.state = state or State()
        self.sleep = sleep
        self.workspace = Path(workspace or settings.workspace or session.workspace or Path.cwd()).expanduser()
        self.base_system = session.system_prompt or SYSTEM_PROMPT
        self.instructions = Instructions("")
        self.system = self.base_system  # + the project instructions, once loaded (load_instructions)
        self.builtin_tools: tuple[ToolSpec, ...] = tuple(
            offered_tools(settings, route) if tools is None else tools
        )
        self.mcp = mcp
        self.mcp_tools: McpToolset | None = None
        self.budget_epoch = 0  # moves whenever the MCP share of the cap may have (views, caps, routes)
        if mcp is not None:
            from app.mcp.toolset import McpToolset

            self.mcp_tools = McpToolset(mcp, settings, flags=session.flags, set_flag=session.set_flag)
        self.budget: Budget = Budget(self)  # window, caps, sizes, floor, calibration, reports
        self.mcp_link: McpLink = McpLink(self)  # MCP tools in requests, the servers, context_engine
        if mcp is not None:
            mcp.subscribe(self.mcp_link.changed)
        self.hooks: HookRunner = hooks or HookRunner(
            settings.hooks,
            session_id=session.id,
            transcript_path=session.transcript_path,
            cwd=self.workspace,
            on_run=self.emit,
            on_start=self.emit,
            before_run=functools.partial(session.drain, quiet=True),  # a hook reads transcript_path
        )
        self.retry_policy = RetryPolicy.from_settings(settings, rng)
        self.recovery = Recovery(self)
        self.compactor: Compactor = Compactor(self)
        self.native: NativeContext = NativeContext(self)
        self.tool_cancel = asyncio.Event()
        # the parts (each sees the engine through a protocol of app.engine.host)
        self.runner: ToolRunner = ToolRunner(self, approver)  # hooks, rules, approvals, checkpoints
        self.history: History = History(self)  # /compact, /rewind, /undo, /memory, /recall
        self.checkpoints = Checkpoints(session.folder, max_bytes=settings.checkpoint_max_bytes)
        self.turn_running = session.turn
        self._instructions_changed = False
        self.lock = asyncio.Lock()
        self.closing = False
        self._use_route(route, provider)
        self.fallback = FallbackChain(self)  # app.engine.fallback: the next route when this one cannot answer
        self.memory = MemoryWorker(
            self
        )  # app.engine.memory: facts distilled; compactions queue what they drop
        self.load_instructions()
        self.permissions: Permissions = load_permissions(settings, self.workspace, self.state)

    def _use_route(self, route: Route, provider: Provider) -> None:
        """Derive everything that depends on the route: limits, the sender, cached sizes."""
        self.route = route
        self.provider = provider
        limits = model_limits(route.provider, route.model)
        # A configured max_output_tokens (the route's, else an explicit global one) wins over the catalog's
        # guess: for a model the catalog does not know, it is also the ceiling of the escalations.
        configured = route.max_output_tokens or (
            self.settings.max_output_tokens if "max_output_tokens" in self.settings.sources else None
        )
        cap = limits.max_output_tokens
        if configured and (limits.source == "default" or configured > cap):
            cap = configured
        self.model_output_cap = cap
        self.max_tokens = min(configured or self.settings.max_output_tokens, cap)
        self.catalog_window = route.context_window or self.settings.context_window or limits.context_window
        self.sender = self._make_sender(provider, route.name)
        apply_profile(provider, self.state)  # betas this endpoint refused are not sent again
        self._summarizer: tuple[Provider, Sender] | None = None
        self.budget.forget_floor()
        self.mcp_link.forget_plan()
        self.budget_epoch += 1
        self.native.prepare()  # the provider's compaction threshold depends on the route's window and cap

    async def switch_route(self, route: Route, provider: Provider) -> None:
        """`/model ROUTE`: continue this session on another route (the old provider is closed)."""
        async with self.lock:
            old = self.provider
            self._use_route(route, provider)
            self.session.set_route(route.name, route.provider, route.model)
            await self.fallback.reset(route, provider, old)
        with contextlib.suppress(Exception):
            await old.aclose()
        self.emit(Notice(f"now using route {route.name} ({route.provider} · {route.model})", code="route"))
        self.view_changed("route")

    # -- events ---------------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        if event.type == "cap_learned":
            self.budget_epoch += 1  # the MCP share of the cap moved
        if event.type in STORED_EVENTS:
            self.session.record_event(event)
        else:
            self.session.emit(event)

    # -- limits -----------------------------------------------------------------------------------

    # -- tools (built-in + MCP, deferred when they crowd the payload) -----------------------------

    # -- MCP ----------------------------------------------------------------------------------------

    async def confirm_workspace_rules(self, ask=None) -> str | None:
        """Ask (`ask(files)` → "allow" | "deny" | None) about the workspace's rule files whose allow rules
        wait for approval (`app.engine.workspace_rules`); front ends call it after their first frame."""
        return await confirm_rule_files(self.permissions, ask, self.emit)

    async def confirm_workspace_gateways(self, ask=None) -> str | None:
        """Ask (`ask(gateways_file)` → "allow" | "deny" | None) about the workspace's `.bulkhead/gateways.toml`
        when it waits for an answer (`app.engine.profile_evidence`); front ends call it after their first frame."""
        return await confirm_workspace_gateways(self, ask)

    def load_instructions(self) -> Instructions:
        """(Re)read AGENTS.md / CLAUDE.md into the system prompt (at start, after /memory and /init)."""
        from app.engine.instructions import load_instructions

        self.instructions = load_instructions(self.workspace, max_bytes=self.settings.instructions_max_bytes)
        self.system = join_system(
            join_system(self.base_system, self.instructions.text), self.memory.prompt_section()
        )
        self.budget.forget_floor()
        return self.instructions

    def _announce_instructions(self) -> None:
        """One notice naming the instruction files in the system prompt, and one per problem (a refused
        import, the size cut)."""
        loaded = self.instructions
        if loaded.files:

            def name(file) -> str:
                shown = display_line(file.shown or file.path.name)
                return {"global": f"global {shown}", "import": f"{shown} (imported)"}.get(file.scope, shown)

            listed = ", ".join(f"{name(f)} {format_size(f.bytes)}" for f in loaded.files)
            in_request = dict((p.label, p.bytes) for p in self.floor_sizes().parts).get(
                "instructions", loaded.bytes
            )
            self.emit(
                Notice(
                    f"project instructions in the system prompt: {listed} — "
                    f"{format_size(in_request)} of every request",
                    code="instructions",
                )
            )
        for problem in loaded.problems:
            self.emit(Notice(display_line(problem), level="warn", code="instructions"))

    def pass_context(self, turn: int, max_tokens: int, *, target_bytes: int | None) -> PassContext:
        store, session = self.session.store, self.session

        def lookup(key: str) -> str | None:
            entry = store.archive_get(key, session.id, strict=True)
            return entry.content if entry else None

        return PassContext(
            settings=self.settings,
            turn=turn,
            budget_scale=float(session.flags.get("budget_scale", 1.0)),
            session_folder=session.folder,
            archive_lookup=lookup,
            measure=lambda messages: self.measure(messages, max_tokens),
            target_bytes=target_bytes,
            is_master=session.is_master,
            repeatable_tools=self.mcp.read_only_tools() if self.mcp is not None else frozenset(),
        )

    # -- providers --------------------------------------------------------------------------------
    def _make_sender(self, provider: Provider, route_name: str) -> Sender:
        return Sender(
            self.session,
            provider,
            route=route_name,
            emit=self.emit,
            retry_policy=self.retry_policy,
            drop_threshold=self.settings.drop_payload_min_bytes,
            on_rejection=self._on_rejection,
            sleep=self.sleep,
            size_evidence=self._size_evidence(provider.route),
            user_rules=build_rules(self.settings.classifier_rules),
            floor_bytes=(lambda: self.floor_sizes().total_bytes) if provider is self.provider else None,
            cap=functools.partial(self.route_cap, provider.route),
            on_stream=StreamQuirks(self.state, provider.route.endpoint_id),
        )

    def _size_evidence(self, route: Route) -> SizeEvidence:
        """What this route's endpoint has shown about body sizes: a remembered payload cap is a refusal, and this
        session's own requests on the route say what it took before (a resumed session, a `-c -p` run, judges a
        reset with the same evidence as the session that is still open — for every SDK)."""
        evidence = SizeEvidence()
        learned = self.state.learned_cap(route.endpoint_id)
        if learned is not None and learned.kind in PAYLOAD_KINDS and learned.rejected_bytes:
            evidence.refused(learned.rejected_bytes)
        try:
            accepted, refused = self.session.store.route_sizes(self.session.id, route.name, route.provider)
        except Exception:  # noqa: BLE001 - evidence is a help, never a reason to fail a turn
            accepted, refused = None, None
        evidence.accepted(accepted)
        evidence.refused(refused)
        return evidence

    def summarizer(self) -> tuple[Provider, Sender]:
        """The summarizer route's provider (compact_model, else the session's) and a sender for it."""
        if self._summarizer is None:
            name = self.settings.compact_model
            if name and name != self.route.name:
                from app.secrets import get_api_key

                route = self.settings.route(name)
                provider = make_provider(
                    route, self.settings, get_api_key(route.provider, route.api_key_env).value
                )
                self._summarizer = (provider, self._make_sender(provider, route.name))
            else:
                self._summarizer = (self.provider, self.sender)
        return self._summarizer

    def summarizer_window(self) -> int:
        provider, _ = self.summarizer()
        if provider is self.provider:
            return self.context_window
        return (
            provider.route.context_window
            or model_limits(provider.route.provider, provider.route.model).context_window
        )

    async def _on_rejection(self, failure: Failure, request: Request) -> None:
        self.emit(
            Rejection(
                kind=failure.kind,
                bytes=failure.rejected_bytes or request.actual_bytes,
                reason=failure.reason,
                status=failure.status,
                evidence=tuple(failure.evidence),
                payload_related=failure.payload_related,
                recoverable=failure.recoverable,
                cause=failure.cause,
                incident_id=failure.incident_id,
            )
        )
        route = self.route if request.route == self.route.name else self.settings.routes.get(request.route)
        if route is not None:  # what the refusal shows about the endpoint goes to its profile
            on_failure(self.state, route.endpoint_id, failure)
        await self.hooks.request_rejected(
            failure.kind,
            list(failure.evidence),
            failure.rejected_bytes or request.actual_bytes,
            self.cap_info().bytes,
        )

    # -- lifecycle --------------------------------------------------------------------------------
    async def start(self, *, resumed: bool = False) -> None:
        """Fire SessionStart and keep any answer a crash left half-written (marked partial)."""
        with contextlib.suppress(OSError):
            self.state.migrate()  # e.g. forget caps an older bulkhead learned from a 431
        self._purge_content_cap()
        from app.state import take_damage_notices

        for sentence in take_damage_notices():  # a damaged state.toml was put aside: said once
            self.emit(Notice(display_line(sentence), level="warn", code="state"))
        drafts = [] if self.session.read_only else leftover_drafts(self.session.folder)
        for message_id, path in drafts:
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8")
                # A crash between committing an answer and deleting its draft leaves a draft already kept.
                if text.strip() and not self.session.is_master_id(message_id):
                    self.session.append(
                        Message.create(
                            "assistant", text, message_id=message_id, turn=self.session.turn, partial=True
                        )
                    )
                    self.emit(
                        Notice(
                            "The previous answer was cut off by a crash; what arrived is kept, "
                            "marked partial.",
                            level="warn",
                            code="partial",
                        )
                    )
                # after the partial answer is committed: in order, on the session's writer
                self.session.writer.submit(
                    functools.partial(_unlink_quietly, path), what="draft", required=False
                )
        await self.session.drain()
        await self.hooks.session_start("resume" if resumed else "startup")
        self._announce_instructions()
        for problem in self.permissions.problems:
            self.emit(Notice(display_line(problem), level="warn", code="permissions"))
        for level, text in workspace_gateway_notices(self):  # a team's .bulkhead/gateways.toml, on trust
            self.emit(Notice(display_line(text), level=level, code="gateways"))
        for notice in rule_start_notices(self.permissions):
            self.emit(notice)
        self.view_changed("start", predicted=self.budget.start_bytes())
        self.memory.after_turn()  # a segment a crash left queued is read now, in the background (the TUI)

    def _purge_content_cap(self) -> None:
        """Forget this endpoint's cap when an older bulkhead learned it from a content block (issue 36)."""
        from app.engine.cap_purge import purge_stale_cap

        route = self.route
        try:
            said = purge_stale_cap(
                self.state,
                self.session.store,
                route.endpoint_id,
                url_prefix=route.endpoint_url if route.provider == "bedrock" else route.base_url,
                floor_bytes=self.floor_sizes().total_bytes,
            )
        except (OSError, sqlite3.Error):
            return
        if said:
            self.emit(Notice(said, level="info", code="cap_forgotten"))

    async def close(self, reason: str = "exit") -> None:
        """End the session here: SessionEnd, MCP and the provider closed, every queued write on disk (a held
        failure is raised, after the lease is released), the lease released."""
        try:
            with contextlib.suppress(Exception):  # a size not kept is measured at the next open
                self.keep_view_size()
            await self.hooks.session_end(reason)
            self.closing = True
            if self.mcp is not None:
                with contextlib.suppress(Exception):
                    await self.mcp.close()
            with contextlib.suppress(Exception):
                await self.memory.close()
            with contextlib.suppress(Exception):
                await self.fallback.aclose()
            with contextlib.suppress(Exception):
                await self.provider.aclose()
        finally:
            try:
                await self.session.stop_writer()  # nothing queued is dropped; writes go inline from here
            finally:
                self.session.release_lease()  # another bulkhead may write it now

    # -- turns ------------------------------------------------------------------------------------
    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult:
        """Run one user turn to its end. Never raises for provider failures: see TurnResult.

        `typed`: the part of `prompt` the user typed, the only text whose `@paths` are attached
        (`bulkhead -p` passes its argument: text piped in is data, never a mention). None: all of it.
        """
        async with self.lock:
            verdict = await self.hooks.user_prompt_submit(prompt)
            if verdict.blocked:
                self.emit(
                    Notice(
                        f"Prompt blocked by a UserPromptSubmit hook: {verdict.reason}",
                        level="warn",
                        code="hook_block",
                    )
                )
                return TurnResult("blocked", error=verdict.reason)
            self._close_interrupted_turn()
            turn = self.session.turn + 1
            typed_text = prompt if typed is None else typed
            parts: list = [Text(prompt), *images, *(await self.runner.prompt_images(typed_text))]
            if verdict.additional_context:
                parts.append(Text(f"\n\n[hook context]\n{verdict.additional_context}"))
            self.session.append(Message.create("user", parts, turn=turn))
            self.emit(TurnStarted(turn=turn, prompt=prompt))
            result = await self._run_turn(turn, mentions=self.runner.mentions(typed_text))
            await self.session.drain()  # the turn is on disk when it is over (raises a held failure)
            return result

    def _close_interrupted_turn(self) -> None:
        """A turn killed before the model answered (Esc, a crash) leaves its prompt last in the view; the
        next prompt would be sent merged with it, and the model would carry out both. Say it got no answer."""
        view = self.session.view.messages
        last = next((m for m in reversed(view) if m.role != "system"), None)
        if last is None or last.role == "assistant":
            return
        self.session.append(
            Message.create("assistant", INTERRUPTED_TURN, turn=self.session.turn, origin="notice")
        )
        self.emit(
            Notice(
                "the previous request got no answer (it was interrupted); the model is told so, and "
                "your new prompt is sent on its own",
                code="interrupted",
            )
        )

    async def retry(self) -> TurnResult:
        """`/retry`: ask again for the last answer — failed, partial or complete — from the current view.

        A failed turn is sent again as it stands; a partial answer is dropped from the view and asked
        for again; a complete one is regenerated from the prompt that asked for it (the view goes back
        to just after that prompt and its @attachments, so tools run again). The master log keeps
        every earlier answer."""
        async with self.lock:
            view = self.session.view.messages
            if not view:
                return TurnResult("failed", error="nothing to retry yet")
            last = view[-1]
            await self.session.drain()  # commit_view reads the database: our appends first, off the loop
            if last.role == "assistant" and last.meta.partial:
                self.session.commit_view(view[:-1], [], reason="retry")
            elif last.role == "assistant":
                cut = retry_point(view)
                if cut is None:
                    return TurnResult("failed", error="no prompt of yours in the view to ask again")
                self.session.commit_view(view[:cut], [], reason="retry")
                self.emit(
                    Notice(
                        "asking again for the last answer (the previous one stays in the session's log)",
                        code="retry",
                    )
                )
            turn = self.session.turn
            self.emit(TurnStarted(turn=turn, prompt="/retry"))
            result = await self._run_turn(turn)
            await self.session.drain()
            return result

    async def _run_turn(self, turn: int, mentions: Sequence[ToolCall] = ()) -> TurnResult:
        self.fallback.turn_started()  # on the chain's first route again, unless fallback_sticky
        await self.memory.yield_to_turn()  # no background memory read competes with the turn's requests
        max_tokens = self.max_tokens
        escalations = 0
        answer: list[str] = []  # one entry per assistant message; a continuation extends the last one
        continuing = False
        self.turn_running = turn  # the turn file changes are checkpointed under
        self.tool_cancel.clear()
        from app.tools.budget import TurnBudget

        budget = TurnBudget(
            max(1, int(self.settings.turn_budget_chars * float(self.session.flags.get("budget_scale", 1.0))))
        )
        stop_hook_active = False
        try:
            await self.mcp_link.await_ready()
            if mentions:  # attached as if the model had read them, before it answers
                self.session.append(Message.create("assistant", list(mentions), turn=turn, origin="mention"))
                await self.runner.run_tools(mentions, turn, budget, by_user=True)
            for _round in range(MAX_TOOL_ROUNDS):
                await self._boundary(turn, max_tokens)
                result = await self.fallback.request(turn, max_tokens)  # along the fallback chain if need be
                max_tokens = min(max_tokens, self.model_output_cap)  # the route that answered may allow less
                if partials := self.fallback.take_partials():  # kept from a route that failed mid-answer
                    answer.extend(partials)
                    continuing = True
                if continuing and answer:
                    answer[-1] += result.text
                else:
                    answer.append(result.text)
                continuing = False
                cut = result.stop_reason == "max_tokens" and not result.tool_calls
                can_escalate = (
                    escalations < self.settings.max_token_escalations and max_tokens < self.model_output_cap
                )
                message = self._commit_answer(result, turn, partial=cut and not can_escalate)
                await self.native.after_answer(result, message)
                if result.tool_calls:
                    await self.runner.run_tools(result.tool_calls, turn, budget)
                    continue
                if cut and can_escalate:
                    escalations += 1
                    max_tokens = min(max_tokens * 2, self.model_output_cap)
                    self.emit(
                        Notice(
                            f"answer cut at the token limit — continuing with max_tokens {max_tokens:,} "
                            f"({escalations}/{self.settings.max_token_escalations})",
                            code="escalation",
                        )
                    )
                    self.session.append(Message.create("user", CONTINUATION, turn=turn, origin="notice"))
                    continuing = True
                    continue
                if cut:
                    self.emit(
                        Notice(
                            "answer cut at the token limit again; it is kept, marked partial",
                            level="warn",
                            code="partial",
                        )
                    )
                self.emit(AnswerFinished(message_id=message.id, stop_reason=result.stop_reason, partial=cut))
                verdict = await self.hooks.stop(stop_hook_active)
                if verdict.additional_context and not stop_hook_active:
                    # A Stop hook said "not done yet" (Claude Code's decision: block): one more round.
                    stop_hook_active = True
                    self.session.append(
                        Message.create(
                            "user", f"[Stop hook] {verdict.additional_context}", turn=turn, origin="notice"
                        )
                    )
                    continue
                break
            else:
                self.emit(
                    Notice(
                        f"stopped after {MAX_TOOL_ROUNDS} tool rounds in one turn; say how to continue",
                        level="warn",
                        code="tool_rounds",
                    )
                )
            self.emit(TurnFinished(turn=turn, outcome="answered"))
            return TurnResult("answered", join_answers(answer))
        except TurnFailed as failed:
            self.emit(Notice(failed.message, level="error", code="turn_failed"))
            outcome: TurnOutcome = "partial" if failed.visible else "failed"
            self.emit(TurnFinished(turn=turn, outcome=outcome, error=failed.message))
            return TurnResult(outcome, join_answers(answer), failed.message, failed.failure)
        except asyncio.CancelledError:
            if self.sender.streamed_text:
                self.keep_partial(self.sender.streamed_text, turn, None)
            self.emit(TurnFinished(turn=turn, outcome="cancelled"))
            raise
        finally:
            if self._instructions_changed:
                self._instructions_changed = False
                self.load_instructions()
                self._announce_instructions()
            self.view_changed("turn")
            with contextlib.suppress(Exception):
                self.keep_view_size()
            self.memory.after_turn()  # the memory worker reads a few turns behind, in the background

    async def _boundary(self, turn: int, max_tokens: int) -> None:
        """Before each request: compact against the byte cap or the window, or warn once."""
        self.native.prepare()
        predicted = self.measure(self.session.view.messages, max_tokens)
        decision = preflight(
            predicted,
            self.cap_info(),
            settings=self.settings,
            context_window=self.context_window,
            max_output_tokens=max_tokens,
            bytes_per_token=self.bytes_per_token,
            warned_no_cap=bool(self.session.flags.get("no_cap_warned")),
        )
        if decision.action == "warn":
            self.session.set_flag("no_cap_warned", True)
            self.emit(Notice(decision.message, level="warn", code="no_cap_warning"))
        elif decision.action == "compact":
            sizes = self.floor_sizes()
            floor = sizes.total_bytes
            if decision.target_bytes is not None and floor >= decision.target_bytes:
                from app.engine.payload import FLOOR_LABELS, describe_floor

                shown = [part for part in sizes.parts if part.label in FLOOR_LABELS]
                biggest = max(shown, key=lambda part: part.bytes).label if shown else "system prompt"
                servers = heaviest_servers(dict(sizes.mcp_servers))
                heavy = f"; the heaviest {servers}" if servers else ""
                self.emit(
                    Notice(
                        f"{decision.message.split(' — ')[0]} — but the request base alone "
                        f"({format_size(floor)}: {describe_floor(sizes.parts)}{heavy}) is above the "
                        f"compaction target ({format_size(decision.target_bytes)}): compacting history "
                        f"cannot help; reduce the biggest part, {biggest}",
                        level="warn",
                        code="floor",
                    )
                )
                return
            self.emit(Notice(decision.message, code="preflight"))
            await self.compactor.run(trigger=decision.trigger, target_bytes=decision.target_bytes)

    async def _request(self, turn: int, max_tokens: int) -> StreamResult:
        request = self.provider.build(
            self.session.view.messages, self.system, self.tools, max_tokens=max_tokens
        )
        try:
            try:
                result = await self.sender.send(request)
            except OverCap as over:  # never sent: compact until it fits (or the turn says why it cannot)
                request = await fit_under_cap(self, over, max_tokens)
                result = await self.sender.send(request)
            except RequestFailed as failed:  # a gateway that refuses or strips a beta: once more without it
                retried = await retry_without_betas(self, failed, request, max_tokens)
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
                    content_block_message(failed.failure, session_id=self.session.id), failed.failure
                ) from failed
            if failed.failure.recoverable:
                result = await self.recovery.recover(failed, max_tokens=max_tokens, turn=turn)
            elif (repaired := await self._without_images(failed, max_tokens)) is not None:
                result = repaired
            elif failed.failure.transient:  # the sender's retries ran out
                from app.engine.failures import give_up_advice

                retries = self.sender.retry_policy.max_attempts
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
        self.budget.calibrate(result)
        return result

    async def _without_images(self, failed: RequestFailed, max_tokens: int) -> StreamResult | None:
        """A 400 about an image with images in the view: stub them (`app.engine.image_repair`), say so, and
        send once more. None when it does not apply; raises the new failure if the retry fails too."""
        from app.engine.image_repair import names_an_image, stub_images

        said = " ".join([str(failed.error), failed.failure.reason, *failed.failure.evidence])
        if not names_an_image(failed.error.status, said):
            return None
        messages, count = stub_images(self.session.view.messages)
        if not count:
            return None
        await self.session.drain()
        self.session.commit_view(messages, [], reason="image_repair")
        self.emit(
            Notice(
                f"the provider could not read {'an image' if count == 1 else f'{count} images'} in the "
                f"conversation ({display_line(failed.failure.reason)}); replaced by a stub in the view (the log "
                f"keeps the original) and sent again",
                level="warn",
                code="image",
            )
        )
        self.view_changed("image_repair")
        request = self.provider.build(
            self.session.view.messages, self.system, self.tools, max_tokens=max_tokens
        )
        try:
            return await self.sender.send(request)
        except RequestFailed as again:
            raise TurnFailed(
                f"{again.failure.reason} — even with the images removed", again.failure
            ) from again

    def _commit_answer(self, result: StreamResult, turn: int, *, partial: bool) -> Message:
        parts: list = [Native(n.api, n.item) for n in result.natives]
        parts += [Text(result.text)] if result.text else []
        parts += [ToolCall(c.id, c.name, c.args) for c in result.tool_calls]
        if not parts:
            parts = [Text("")]
        message = self.session.append(
            Message.create(
                "assistant", parts, message_id=self.sender.draft.message_id, turn=turn, partial=partial
            )
        )
        self.sender.draft.clear()
        return message

    def keep_partial(self, text: str, turn: int, failure: Failure | None) -> None:
        """Keep what became visible of a failed answer, marked partial (never retried)."""
        self.session.append(
            Message.create(
                "assistant", text, message_id=self.sender.draft.message_id, turn=turn, partial=True
            )
        )
        self.sender.draft.clear()
        self.sender.forget_streamed_text()

    # -- tools ------------------------------------------------------------------------------------

    # -- tools (app.engine.tool_runner) ----------------------------------------------------------------
    def mark_instructions_changed(self) -> None:
        self._instructions_changed = True  # reloaded when the turn ends (/init writes AGENTS.md)

    @property
    def approver(self) -> Approver | None:
        return self.runner.approver

    @property
    def can_ask(self) -> bool:
        return self.runner.can_ask

    # -- limits and sizes (app.engine.budget) ------------------------------------------------------------
    @property
    def context_window(self) -> int:
        return self.budget.context_window

    def usable_window_tokens(self) -> int:
        return self.budget.usable_window_tokens()

    @property
    def bytes_per_token(self) -> float:
        return self.budget.bytes_per_token

    def configured_cap(self) -> tuple[int | None, str]:
        return self.budget.configured_cap()

    def cap_info(self) -> CapInfo:
        return self.budget.cap_info()

    def route_cap(self, route: Route) -> CapInfo:
        return self.budget.route_cap(route)

    def cap_detail(self, cap: CapInfo | None = None) -> str:
        return self.budget.cap_detail(cap)

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int:
        return self.budget.measure(messages, max_tokens)

    def keep_view_size(self) -> None:
        self.budget.keep_view_size()

    def warm_sizes(self) -> Callable[[], None] | None:
        return self.budget.warm_sizes()

    def floor_sizes(self) -> FloorSizes:
        return self.budget.floor_sizes()

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged:
        """Tell the panels about the next request; `predicted`: its size, when just measured."""
        return self.budget.view_changed(reason, predicted=predicted)

    def reset_cap(self) -> bool:
        return self.budget.reset_cap()

    def context_report(self) -> ContextReport:
        """What `/context` and the Payload panel show about the next request."""
        return self.budget.context_report()

    # -- MCP (app.engine.mcp_link) ----------------------------------------------------------------------
    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What every request declares: the built-in tools, then the MCP part of the deferral plan."""
        return self.mcp_link.tools

    def mcp_budgets(self) -> tuple[int, int | None]:
        return self.mcp_link.budgets()

    def mcp_plan(self) -> DeferralPlan | None:
        return self.mcp_link.plan()

    async def start_mcp(self, *, ask: McpAsk | None = None, allow_project: bool = False) -> None:
        """Start the MCP servers in the background (front ends call this after their first frame)."""
        await self.mcp_link.start(ask=ask, allow_project=allow_project)

    def context_engine(self) -> ContextEngine | None:
        return self.mcp_link.context_engine()

    # -- user commands (app.engine.history) ------------------------------------------------------------
    async def approve_restores(self, snapshots: Sequence[Snapshot], command: str) -> set[str]:
        return await self.runner.approve_restores(snapshots, command)

    async def compact(
        self, instructions: str | None = None, cancel: asyncio.Event | None = None
    ) -> PipelineResult | None:
        """`/compact [instructions]`: a guided summary of the older history."""
        return await self.history.compact(instructions, cancel)

    def rewind(self) -> bool:
        return self.history.rewind()

    async def undo(self) -> list[Restored]:
        return await self.history.undo()

    def rewind_points(self) -> list[tuple[Message, int]]:
        return self.history.rewind_points()

    def view_before(self, message_id: str) -> list[Message]:
        return self.history.view_before(message_id)

    async def rewind_to(self, message_id: str, *, files: bool) -> tuple[Message, list[Restored]]:
        return await self.history.rewind_to(message_id, files=files)

    def remember(self, text: str) -> Path:
        return self.history.remember(text)

    def recall_into_view(self, key_text: str) -> Message | None:
        return self.history.recall_into_view(key_text)

    # -- limits, again ----------------------------------------------------------------------------


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


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


def describe_event(event: Event) -> str:
    """One line for stderr / logs: the presenter's words (`app.engine.describe`), else the event's fields."""
    description = describe(event)
    if description is not None:
        return f"{event.type}: {description.text}"
    data = event.to_json()
    data.pop("type", None)
    return f"{event.type}: " + json.dumps(data, ensure_ascii=False, default=str)[:300]
