"""A session through the front door (`app.engine.api`): what a front end (the TUI, `bulkhead -p`, an ACP agent,
a recovery proxy) may do with a session and what it gets back.

    session = await open_session(settings, resume=..., on_event=show)
    result = await session.submit("fix the failing test")
    await session.close()

`SessionApi` is a Protocol: the engine implements it (`EngineSession`, over `app.engine.turn.Engine`), a test
can hand a front end a fake. Every value it returns is a frozen dataclass of this module (or of `app.model`):
a front end needs no other module of the engine. This module imports no engine internals at import time
(the first frame of the TUI pays only for what it draws); `open_session` brings the engine in.

Approvals go by tool call id: a tool call that needs the user's answer emits `ApprovalRequested` (with the
`call_id` of the `ToolCallStarted` it belongs to) and waits until `approve(call_id, answer)`. A front end
with nobody to ask (`bulkhead -p` without a terminal) opens the session with `answers_approvals=False`: such
a call is then denied at once, and the engine says how to be asked.

A front end that runs one turn and exits (`bulkhead -p`) opens it the same way:

    session = await open_session(settings, start=False, on_event=show,
                                 answers_approvals=tty is not None, background_memory=False)
    said = session.opening_notices()                 # the route's and the session's, before the start's
    await session.start()
    await session.confirm_workspace_files(ask_rules, ask_gateways)
    await session.start_mcp(ask, wait=False)         # the turn waits for the servers within mcp_tools_wait
    result = await session.submit(prompt, typed=prompt)
    await session.read_queued_memory()               # what a compaction queued, read before the exit
    await session.close()
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine.api.protocol import AskGateways, AskMcp, AskRules, ProbeSeen, SessionApi, Subscriber
from app.engine.context_report import ContextReport
from app.engine.records import (
    ANSWERS,
    Answer,
    ApprovalRequest,
    ArchiveItem,
    ArchivePage,
    CompactResult,
    CustomCommandInfo,
    OpeningNotices,
    PermissionRule,
    PermissionsView,
    RestoredFile,
    RewindPoint,
    RewindResult,
    RouteModelsView,
    SessionInfo,
    TurnResult,
)
from app.model.events import ApprovalRequested

if TYPE_CHECKING:
    from app.config import Settings
    from app.engine.blocked import BlockedPlan, BlockedReport
    from app.engine.content_finder import Finding
    from app.engine.turn import Engine
    from app.engine.withhold import WithholdOutcome
    from app.model.messages import Image

__all__ = [
    "ANSWERS",
    "Answer",
    "ApprovalRequest",
    "ArchiveItem",
    "ArchivePage",
    "AskGateways",
    "AskMcp",
    "AskRules",
    "CompactResult",
    "ContextReport",
    "CustomCommandInfo",
    "EngineSession",
    "OpeningNotices",
    "PermissionRule",
    "PermissionsView",
    "ProbeSeen",
    "RestoredFile",
    "RewindPoint",
    "RewindResult",
    "RouteModelsView",
    "SessionApi",
    "SessionInfo",
    "Subscriber",
    "TurnResult",
    "open_session",
]


# -- the engine's implementation -----------------------------------------------------------------------------
class EngineSession:
    """`SessionApi` over an `Engine`: adapts its methods' shapes, keeps the running turn (to cancel it) and
    the approvals waiting for an answer, by call id."""

    def __init__(
        self,
        engine: Engine,
        *,
        notices: Sequence[str] = (),
        resumed: bool = False,
        choice: Any = None,
        answers_approvals: bool = True,
    ) -> None:
        self.engine = engine
        self.choice = choice  # app.engine.bootstrap.RouteChoice: the route it opened on
        self._notices = tuple(notices)
        self._resumed = resumed
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future[Any]]] = {}
        self._turn: asyncio.Task[TurnResult] | None = None
        if answers_approvals:  # else nobody is asked: a call that needs an answer is denied, and told why
            engine.runner.ask_call = self._ask

    # -- opening ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start a session opened with `open_session(..., start=False)`: its start notices, hooks, rules."""
        await self.engine.start(resumed=self._resumed)

    def opening_notices(self) -> OpeningNotices:
        choice = self.choice
        if choice is None:
            return OpeningNotices()
        return OpeningNotices(tuple(choice.notices), tuple(choice.session_notices), bool(choice.lab))

    async def confirm_workspace_files(
        self, ask_rules: AskRules | None, ask_gateways: AskGateways | None
    ) -> None:
        """Ask about the workspace's rule files and gateways file, when they wait for a yes (None: nobody to
        ask — their allow rules and caps stay out of force, and the engine says how to allow them)."""
        await self.engine.confirm_workspace_rules(ask=ask_rules)
        await self.engine.confirm_workspace_gateways(ask=ask_gateways)

    def has_mcp(self) -> bool:
        """MCP servers are configured (the user's, or the workspace's `.mcp.json`, still to be trusted)."""
        return self.engine.mcp is not None

    async def start_mcp(
        self, ask: AskMcp | None = None, *, allow_project: bool = False, wait: bool = True
    ) -> None:
        """Start the MCP servers. `ask` is asked about a workspace's `.mcp.json` servers not allowed yet;
        `allow_project` starts them without asking or remembering (`-p --yes`, this run only); `wait=False`
        returns at once: a turn waits for the servers only where it needs their tools, within
        `mcp_tools_wait`."""
        if self.engine.mcp is not None:
            await self.engine.start_mcp(ask=ask, allow_project=allow_project, wait=wait)

    # -- approvals ----------------------------------------------------------------------------------------
    async def _ask(self, request: ApprovalRequest) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        call_id = request.call_id
        self._waiting[call_id] = (request, future)
        try:
            self.engine.emit(
                ApprovalRequested(
                    call_id=call_id,
                    name=request.name,
                    args=dict(request.args),
                    why=request.why,
                    remember=request.remember,
                    why_not=request.why_not,
                )
            )
            return await future
        finally:
            self._waiting.pop(call_id, None)

    def approve(self, call_id: str, answer: Answer | bool, *, reason: str = "") -> bool:
        """Answer the approval of tool call `call_id` (True/"once", "session", "project"; False/"deny";
        a denial with a `reason` tells the model why). False when no call of that id waits (answered
        already, cancelled, or never asked)."""
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting[1].done():
            return False
        word = "once" if answer is True else "deny" if answer is False else answer
        if word not in ANSWERS:
            raise ValueError(
                f"an approval answer is one of {sorted(ANSWERS)} (or True/False), not {answer!r}"
            )
        if word == "deny" and reason.strip():
            from app.tools.approval import Denial

            waiting[1].set_result(Denial(reason))
            return True
        waiting[1].set_result(word)
        return True

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        return tuple(request for request, future in self._waiting.values() if not future.done())

    # -- commands -----------------------------------------------------------------------------------------
    async def _run(self, work: Any) -> TurnResult:
        task: asyncio.Task[TurnResult] = asyncio.ensure_future(work)
        self._turn = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and not (current is not None and current.cancelling()):
                return TurnResult("cancelled")  # cancel() ended the turn; the caller goes on
            task.cancel()  # the caller was cancelled (Ctrl+C in -p): the turn winds down first (its answer
            await asyncio.wait({task})  # so far kept, marked partial), then the caller's cancellation goes on
            raise
        finally:
            if self._turn is task:
                self._turn = None

    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult:
        return await self._run(self.engine.submit(prompt, images, typed=typed))

    async def retry(self) -> TurnResult:
        return await self._run(self.engine.retry())

    def cancel(self) -> bool:
        """Stop the running turn (a running tool is stopped, an answer so far is kept, marked partial)."""
        task = self._turn
        if task is None or task.done():
            return False
        self.engine.tool_cancel.set()
        task.cancel()
        return True

    async def compact(
        self, instructions: str | None = None, *, cancel: asyncio.Event | None = None
    ) -> CompactResult:
        """`/compact [instructions]`; setting `cancel` stops it (the view is then unchanged)."""
        result = await self.engine.compact(instructions, cancel)
        if result is None:
            return CompactResult(ran=False)
        return CompactResult(
            ran=True,
            changed=result.changed,
            method=result.method,
            bytes_before=result.bytes_before,
            bytes_after=result.bytes_after,
            cancelled=result.cancelled,
        )

    async def rewind_to(self, message_id: str, *, files: bool) -> RewindResult:
        prompt, restored = await self.engine.rewind_to(message_id, files=files)
        return RewindResult(prompt.id, prompt.text, tuple(_restored(r) for r in restored))

    async def undo(self) -> tuple[RestoredFile, ...]:
        return tuple(_restored(r) for r in await self.engine.undo())

    def undo_compaction(self) -> bool:
        """`/rewind compact`: the view before the last compaction (False: there was none)."""
        return self.engine.rewind()

    def rename(self, title: str) -> str:
        """Give the session a title; the title stored (ValueError: nothing is left of it once cleaned)."""
        return self.engine.session.rename(title)

    def recall(self, key_text: str) -> bool:
        return self.engine.recall_into_view(key_text) is not None

    def remember(self, text: str) -> str:
        return str(self.engine.remember(text))

    async def switch_route(self, route_name: str, *, model: str | None = None) -> SessionInfo:
        from app.engine.bootstrap import choose_route, with_model
        from app.providers.factory import make_provider

        engine = self.engine
        choice = await asyncio.to_thread(
            lambda: with_model(choose_route(engine.settings, route_name), engine.state, model)
        )
        provider = make_provider(choice.route, engine.settings, choice.api_key)
        await engine.switch_route(choice.route, provider)
        self._notices = tuple(choice.notices)
        self.choice = choice
        return self.info()

    async def read_queued_memory(self) -> None:
        """Read what compactions queued for the memory worker now (a session opened with
        `background_memory=False` reads nothing behind the conversation: `-p` calls this before it exits).
        A failure is said (a `memory` notice) and the segment stays queued for the next session."""
        await self.engine.memory.drain_queue()

    async def close(self, reason: str = "exit") -> None:
        self.cancel()
        for _request, future in list(self._waiting.values()):
            if not future.done():
                future.set_result("deny")
        await self.engine.close(reason)

    # -- queries ------------------------------------------------------------------------------------------
    def report(self) -> ContextReport:
        return self.engine.context_report()

    async def rewind_points(self) -> tuple[RewindPoint, ...]:
        points = await asyncio.to_thread(self.engine.rewind_points)
        return tuple(RewindPoint(m.id, m.meta.turn, m.text, changed) for m, changed in points)

    def permissions(self) -> PermissionsView:
        engine = self.engine
        return PermissionsView(
            approval=engine.settings.approval,
            rules=tuple(PermissionRule(*row) for row in engine.permissions.listing()),
            problems=tuple(engine.permissions.problems),
        )

    async def archive_page(self, query: str = "", limit: int = 100) -> ArchivePage:
        store, session_id = self.engine.session.store, self.engine.session.id
        if query.strip():
            entries = await asyncio.to_thread(store.archive_search, query, session_id, limit)
        else:
            entries = await asyncio.to_thread(store.archive_list, session_id, limit)
        items = tuple(ArchiveItem(e.key, e.reason, e.bytes, e.created_at, e.content) for e in entries)
        return ArchivePage(items, query=query, limit=limit)

    async def custom_commands(self, reserved: Iterable[str] = ()) -> tuple[CustomCommandInfo, ...]:
        from app.engine.custom_commands import discover

        found, _problems = await asyncio.to_thread(discover, self.engine.workspace, reserved=tuple(reserved))
        return tuple(CustomCommandInfo(c.name, c.source, c.description, c.argument_hint) for c in found)

    async def models(self) -> tuple[RouteModelsView, ...]:
        from app.engine.model_list import list_route_models
        from app.secrets import get_api_key

        settings = self.engine.settings
        routes = list(settings.routes.values()) or [self.engine.route]

        async def one(route: Any) -> RouteModelsView:
            key = None
            if route.provider in ("anthropic", "openai"):
                key = (await asyncio.to_thread(get_api_key, route.provider, route.api_key_env)).value
            listed = await list_route_models(route, settings, key, timeout=settings.model_list_timeout)
            current = self.engine.route.model if route.name == self.engine.route.name else route.model
            ids = tuple(choice.model for choice in listed.models)
            return RouteModelsView(route.name, route.provider, current, ids, listed.error)

        return tuple(await asyncio.gather(*(one(route) for route in routes)))

    def info(self) -> SessionInfo:
        engine, session = self.engine, self.engine.session
        return SessionInfo(
            id=session.id,
            title=session.title or "",
            route=engine.route.name,
            provider=engine.route.provider,
            model=engine.route.model,
            workspace=str(engine.workspace),
            read_only=session.read_only,
            turn=session.turn,
            notices=self._notices,
            resumed=self._resumed,
            messages=session.master_len(),
            in_view=session.view_len(),
        )

    # -- refused content (`/blocked`, `bulkhead probe --content`) -----------------------------------------
    def blocked_plan(self) -> BlockedPlan:
        """What finding the refused text would send: the request's parts, at most how many probes, and the
        question to ask before any is sent."""
        from app.engine.blocked import blocked_plan

        return blocked_plan(self.engine)

    async def find_offline(self, *, paranoia: int | None = None) -> BlockedReport:
        """The session's request judged by the local Core Rule Set (nothing is sent): at `paranoia`, or at
        the lowest of PL1-PL4 that refuses it. A report without a finding says why."""
        from app.engine.blocked import find_offline

        return await find_offline(self.engine, paranoia=paranoia)

    async def find_blocked(self, on_probe: ProbeSeen) -> BlockedReport:
        """Find the refused text with live probes through the route (ask first: `blocked_plan().question`);
        `on_probe` sees each probe as it is answered."""
        from app.engine.blocked import find_blocked

        return await find_blocked(self.engine, on_probe=on_probe)

    def withhold(self, finding: Finding) -> WithholdOutcome:
        """Withhold a finding from the model: the span replaced, the original archived — or, in a prompt
        not answered yet, `take_back` names the prompt to take back (`rewind_to`) and send again."""
        from app.engine.withhold import withhold

        return withhold(self.engine.session, finding)

    # -- the event stream ---------------------------------------------------------------------------------
    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        return self.engine.session.bus.subscribe(callback)


def _restored(restored: Any) -> RestoredFile:
    return RestoredFile(restored.path, str(restored.action), restored.detail)


async def open_session(
    settings: Settings,
    *,
    route_name: str | None = None,
    resume: str | None = None,
    continue_: bool = False,
    workspace: Path | None = None,
    read_only: bool = False,
    fork: bool = False,
    model: str | None = None,
    what: str = "",
    on_event: Subscriber | None = None,
    store: Any = None,
    state: Any = None,
    head_later: bool = False,
    start: bool = True,
    answers_approvals: bool = True,
    background_memory: bool = True,
    factory: Callable[..., EngineSession] | None = None,
) -> EngineSession:
    """Open (or resume) a session and start it: the store is read off the event loop; `on_event` is
    subscribed before the start, so it sees the start's notices. Raises `app.lease.SessionHeld` when another
    bulkhead writes the session (open it `read_only` or `fork` it instead).

    `store`/`state`: the front end's own (`app.store.Store`, `app.state.State`), shared; `head_later`: a long
    session's older messages are decoded later (`UiSession.load_head`); `start=False`: the caller starts it
    (`start()`) once it has shown what it needs to (`opening_notices()`); `answers_approvals=False`: nobody
    is there to answer an `ApprovalRequested` (`-p` without a terminal) — a call that needs an answer is
    denied at once, and the engine says how to be asked; `background_memory=False`: the memory worker reads
    nothing behind the conversation, the front end calls `read_queued_memory()` before it closes (`-p`);
    `factory`: an `EngineSession` subclass (the TUI's)."""
    from app.engine.bootstrap import open_engine

    engine, choice, resumed = await asyncio.to_thread(
        lambda: open_engine(
            settings,
            route_name=route_name,
            resume=resume,
            continue_=continue_,
            workspace=workspace,
            read_only=read_only,
            fork=fork,
            what=what or "a front end",
            model=model,
            store=store,
            state=state,
            head_later=head_later,
        )
    )
    engine.memory.background = background_memory
    session = (factory or EngineSession)(
        engine, notices=choice.notices, resumed=resumed, choice=choice, answers_approvals=answers_approvals
    )
    if on_event is not None:
        session.subscribe(on_event)
    if not start:
        return session
    try:
        await engine.start(resumed=resumed)
    except BaseException:
        with contextlib.suppress(Exception):
            await engine.close("error")
        raise
    return session
