"""The app's side of the session: open it in a worker, bring its events in, switch or reopen it.

The app holds a `UiSession` (`app.engine.api.ui_session`, the front door's session with what the TUI needs)
and nothing else of the engine. It opens off the event loop (database, session, route, key lookup) so the
first frame never waits; a session held by another bulkhead asks what to do (`LeaseScreen`); a session that
cannot open says why in the chat and keeps what was typed. Session events reach the widgets as
`EngineEvent` messages, made safe for display at this one door (`app.textsafe.display_data`); an approval a
tool call waits for (`ApprovalRequested`) becomes a card in the chat, answered by `session.approve(call_id,
…)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import ScreenStackError
from textual.css.query import NoMatches
from textual.widgets import Static

from app import heap
from app.config import ConfigError
from app.model.events import (
    ApprovalRequested,
    CompactionPhase,
    Event,
    HookRun,
    HookStarted,
    McpServerChanged,
    SessionStarted,
    TextDelta,
    TurnFinished,
    ViewChanged,
)
from app.redact import StreamRedactor, redact_data
from app.textsafe import display_data, display_line
from app.ui.app_host import AppMixin
from app.ui.chat_history import entries_from_messages
from app.ui.messages import EngineEvent
from app.ui.panel_source import panel_source
from app.ui.startup import prewarm_in_background

if TYPE_CHECKING:
    from app.engine.api.ui_session import UiSession


def read_only_notice(session_id: str) -> str:
    return (
        f"This session is open read-only: another bulkhead is writing it. Browse and copy freely; to go on, "
        f"fork it (`bulkhead --resume {session_id} --fork`) or pick another session with F5."
    )


class EngineLink(AppMixin):
    """Mixed into `BulkheadApp`: opening, starting, switching and closing the session."""

    session: UiSession | None
    open_session: Callable[..., Any] | None  # how a session opens (a test hands a fake's)
    _unsubscribe: Callable[[], None] | None
    app: Any
    store: Any  # app.store.Store, once opened
    workspace: Path  # where the tools run (the app's)
    started_in: Path
    resume: str | None
    folder_notice: str

    @work(group="engine", exclusive=True, exit_on_error=False, name="open engine")
    async def open_engine(
        self,
        *,
        resume: str | None,
        continue_: bool,
        route_name: str | None,
        fork: bool = False,
        read_only: bool = False,
        model: str | None = None,
        folder_asked: bool = False,
    ) -> None:
        from app.lease import SessionHeld

        if resume and not read_only and not folder_asked and self.ask_workspace:
            row = await asyncio.to_thread(self._session_of_another_folder, resume)
            if row is not None:  # its tools would run here: ask where first
                self._ask_folder(row, route_name, fork, model)
                return
        from app.engine.api.ui_session import open_ui_session

        opener = self.open_session or open_ui_session
        try:
            session = await opener(
                self.settings,
                route_name=route_name,
                resume=resume,
                continue_=continue_,
                workspace=self.workspace,
                store=self.store,
                state=self.state,
                fork=fork,
                read_only=read_only,
                what="the TUI",
                model=model,
                head_later=True,  # a long session's older messages are decoded once it is on screen
            )
        except SessionHeld as held:  # one writer per session: ask what to do instead
            self._session_held(held, route_name)
            return
        resumed = session.info().resumed
        try:
            source, history = await asyncio.to_thread(self._prepare_show, session, resumed)
        except BaseException:
            with contextlib.suppress(Exception):
                await session.close("error")
            raise
        await self._engine_opened(session, resumed, source, history)

    def _prepare_show(self, session: UiSession, resumed: bool):
        """What costs the length of the session, done in a thread before the session is shown: the
        inspector's report (measuring the view, which warms the provider's payload cache for the engine's
        own measure) and the resumed history as chat entries (no widget built)."""
        self._command_problems = self.refresh_custom_commands()
        source = panel_source(session)
        history = entries_from_messages(session.history()) if resumed else None
        if resumed:
            heap.release()  # what loading and measuring a long session freed goes back to the system
        return source, history

    def _session_of_another_folder(self, session_id: str):
        """The store's row of `session_id` when it was started in another folder (else None)."""
        from app.model.session_folders import elsewhere
        from app.store import Store

        if self.store is None:
            self.store = Store()
        row = self.store.find_session(session_id)
        return row if row is not None and elsewhere(row.workspace, self.workspace) else None

    def _ask_folder(self, row, route_name: str | None, fork: bool, model: str | None) -> None:
        """A session of another folder: ask where its tools run, then open it there (Esc: a new session here)."""
        from app.ui.screens.folder import FolderScreen

        def chosen(choice: str | None) -> None:
            if choice is None:
                self.resume = None
                self.open_engine(resume=None, continue_=False, route_name=route_name, model=model)
                return
            if choice == "its":
                self.move_to_workspace(row.workspace)
            self.open_engine(
                resume=row.id,
                continue_=False,
                route_name=route_name,
                fork=fork,
                model=model,
                folder_asked=True,
            )

        self.push_screen(
            FolderScreen(row.id, row.title, row.workspace, self.workspace, back_label="A new session here"),
            callback=chosen,
        )

    def move_to_workspace(self, folder) -> None:
        """Work in `folder` from now on: the tools (the next engine opens there), `@` files, the prompt's
        history, custom commands and project rules. The next session's start says so."""
        from app.model.session_folders import shown_folder
        from app.ui.prompt import PromptHistory, history_path

        self.folder_notice = (
            f"working in {shown_folder(str(folder))}, the session's own folder: its tools, @ files, commands "
            f"and project rules are there (bulkhead was started in {shown_folder(str(self.workspace))})"
        )
        self.workspace = Path(folder)
        self.history = PromptHistory(history_path(self.workspace))
        with contextlib.suppress(NoMatches):
            prompt = self.prompt
            prompt.workspace = self.workspace
            prompt.prompt_history = self.history
            prompt.file_matcher = None  # listed again for the new folder at the next `@`
        self.files_stale = True

    def _session_held(self, held, route_name: str | None) -> None:
        from app.ui.screens.lease import LeaseScreen

        def chosen(choice: str | None) -> None:
            if choice == "read-only":
                self.open_engine(
                    resume=held.session_id, continue_=False, route_name=route_name, read_only=True
                )
            elif choice == "fork":
                self.open_engine(resume=held.session_id, continue_=False, route_name=route_name, fork=True)
            elif choice == "take-over" and held.stale_foreign:
                from app.store import Store

                store = Store()
                try:
                    store.break_lease(held.session_id, held.holder)  # the user says that bulkhead is gone
                finally:
                    store.close()
                self.open_engine(resume=held.session_id, continue_=False, route_name=route_name)
            else:
                self.open_engine(resume=None, continue_=False, route_name=route_name)

        self.push_screen(LeaseScreen(held), callback=chosen)

    async def _engine_opened(self, session: UiSession, resumed: bool, source=None, history=None) -> None:
        self.session = session
        from app.ui.engine_questions import fallback_asker

        session.set_fallback_asker(fallback_asker(self))  # a partial answer moves on only if you say so
        records = session.records()
        if records is not None:
            self.store = records.store  # the next session opens on it, F5 lists the sessions from it
        self._live_redactor = StreamRedactor()  # one per session: the answer being streamed
        self._unsubscribe = session.subscribe(self._on_bus)
        if source is None:
            self.show_session_in_inspector()
        else:
            with contextlib.suppress(NoMatches):
                self.inspector.show_session(source)
        with self.batch_update():  # one layout and frame for all of it, not one half-mounted on the way
            await self._show_start(session, resumed, history)
        self.update_topbar()
        from app.ui.approval_mode import show_mode

        show_mode(self)
        self._start_engine()

    async def _show_start(self, session: UiSession, resumed: bool, history) -> None:
        """The resumed history, then what this start says (under it, where it happened)."""
        chat = self.chat
        if resumed:
            if session.head_waiting():  # opened from its end: the older entries come once it is drawn
                chat.expect_older()
            await chat.render_history(session.history(), entries=history, fill_now=False)
        said = session.opening_notices()
        for note in said.route:
            await chat.add_notice(
                note, code="lab" if said.lab else "route", title="lab model" if said.lab else "route"
            )
        for note in said.session:
            await chat.add_notice(note, code="session", title="session")
        for note in self.ready_notices:
            await chat.add_notice(note, code="app")
        if self.folder_notice:
            await chat.add_notice(self.folder_notice, code="folder", title="folder")
            self.folder_notice = ""
        for problem in self._command_problems:
            await chat.add_notice(
                display_line(problem), level="warn", code="commands", title="custom command"
            )
        if resumed:
            info = session.info()
            await chat.add_notice(
                f"resumed “{info.title or info.id}” — {info.messages} messages",
                code="resume",
                title="session",
            )
            if info.read_only:
                await chat.add_notice(
                    read_only_notice(info.id), level="warn", code="read_only", title="read-only"
                )

    def show_session_in_inspector(self) -> None:
        """Give the inspector the open session's source (the panels never see the session)."""
        if self.session is not None:
            with contextlib.suppress(NoMatches):
                self.inspector.show_session(panel_source(self.session))

    @work(group="engine-start", exit_on_error=False, name="start engine")
    async def _start_engine(self) -> None:
        session = self.session
        assert session is not None
        try:
            await session.start()
        except BaseException:
            decode = self._head_decoder()  # the chat's older entries come all the same
            if decode is not None:
                threading.Thread(target=decode, name="decode the session's head", daemon=True).start()
            raise
        finally:
            with contextlib.suppress(NoMatches):
                self.chat.fill_window()  # the resumed history above the view: after what the user waits for
        self.engine_ready.set()
        self.call_after_refresh(self._import_sdk_when_drawn, session.info().provider, session.warm_sizes())
        self.refresh_bindings()
        self._confirm_rules(session)  # the workspace's rule files and gateways file, when they wait for a yes
        if session.has_mcp():
            self._start_mcp(session)
        self.send_waiting()
        self.submit_initial_command()

    def _import_sdk_when_drawn(self, provider: str, warm: Callable[[], None] | None = None) -> None:
        """Import the route's SDK (0.6–1.6 s of CPU) in a thread once the session is on screen: it shares the
        GIL with everything the loop does, and drawing a resumed history alongside it took twice as long.
        Before it, in that thread, a long session's older messages (`_head_decoder`); after it, `warm`
        (`Engine.warm_sizes`): the view measured."""
        with contextlib.suppress(NoMatches):
            if self.chat.filling:  # the resumed window is still going in
                self.call_after_refresh(self._import_sdk_when_drawn, provider, warm)
                return
        prewarm_in_background(provider, then=warm, first=self._head_decoder())

    def _head_decoder(self) -> Callable[[], None] | None:
        """For a long session opened from its end (`app.engine.head_later`): decoding its older messages, to run
        in a thread now that it is on screen — before the import's `gc.freeze`, which then keeps them out of
        the collector's scans — and handing them to the chat as entries (PageUp, /find and Home reach them)."""
        session, chat = self.session, self.chat
        coming = chat.older_coming
        if session is None or coming is None:
            return None

        def decode() -> None:
            try:
                entries = entries_from_messages(session.load_head())
            except Exception as exc:  # said in the chat; whatever needs them says it again
                with contextlib.suppress(Exception):
                    self.call_from_thread(_awaited(self._head_unreadable), coming, exc)
                return
            heap.release()  # what decoding freed goes back to the system, as after the open
            with contextlib.suppress(Exception):  # the app is closing
                self.call_from_thread(_awaited(chat.add_older), coming, entries)

        return decode

    async def _head_unreadable(self, coming, exc: Exception) -> None:
        with contextlib.suppress(NoMatches):
            await self.chat.add_older(coming, [])
            await self.chat.add_notice(
                f"This session's older messages could not be read ({display_line(str(exc))}): the last ones are "
                f"shown, and what needs the whole conversation (a request, /export) stops with the same error. "
                f"Copy what you need from the screen; resume it again once the disk or database is repaired.",
                level="error",
                code="session",
                title="session",
            )

    @work(group="mcp", exit_on_error=False, name="start MCP servers")
    async def _start_mcp(self, session: UiSession) -> None:
        """After the first frame: the SDK is imported in a thread, the servers start in the background."""
        await session.start_mcp(ask=self.ask_mcp_trust)

    @work(group="rules", exit_on_error=False, name="ask about the workspace's rule and gateway files")
    async def _confirm_rules(self, session: UiSession) -> None:
        await session.confirm_workspace_files(self.ask_rules_trust, self.ask_gateways_trust)

    async def _ask_trust(self, screen) -> str | None:
        """One trust question (app.ui.screens.trust): "allow" | "deny" | None (not now)."""
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

        def answered(result: str | None) -> None:
            if not future.done():
                future.set_result(result)

        self.push_screen(screen, callback=answered)
        return await future

    async def ask_rules_trust(self, files) -> str | None:
        """Ask once whether the allow rules of this workspace's rule files may be in force."""
        from app.ui.screens.rules_trust import RulesTrustScreen

        return await self._ask_trust(RulesTrustScreen(files, str(self.workspace)))

    async def ask_gateways_trust(self, found) -> str | None:
        """Ask once whether this workspace's `.bulkhead/gateways.toml` may be read."""
        from app.ui.screens.gateways_trust import GatewaysTrustScreen

        return await self._ask_trust(GatewaysTrustScreen([found], str(found.path)))

    async def ask_mcp_trust(self, specs) -> str | None:
        """Ask once whether this workspace's `.mcp.json` servers may start ("allow" | "deny" | None)."""
        from app.config_mcp import PROJECT_FILE
        from app.ui.screens.mcp_trust import McpTrustScreen

        return await self._ask_trust(McpTrustScreen(specs, str(self.workspace / PROJECT_FILE)))

    # -- events -------------------------------------------------------------------------------------------
    def _on_bus(self, event: Event) -> None:
        if self._quitting or self._exit:
            return
        if isinstance(event, ApprovalRequested):  # a card in the chat (app.ui.turns), not a line
            if rest := self._live_redactor.flush():
                self.post_message(EngineEvent(display_data(TextDelta(rest))))
            self.approval_requested(event)
            return
        # The one door engine text comes in by: every known secret replaced (a key the provider streams back
        # is hidden as it arrives, even split across deltas), then made safe for the terminal.
        if isinstance(event, TextDelta):
            shown = self._live_redactor.feed(event.text)
            if shown:
                self.post_message(EngineEvent(display_data(TextDelta(shown))))
            return
        if rest := self._live_redactor.flush():
            self.post_message(EngineEvent(display_data(TextDelta(rest))))
        self.post_message(EngineEvent(display_data(redact_data(event))))

    async def on_engine_event(self, message: EngineEvent) -> None:
        if self.quitting:  # events still queued when the user quit: nothing left to draw them on
            return
        try:
            await self._render_event(message.event)
        except NoMatches:  # a widget is gone: the app is closing
            pass
        except ScreenStackError:
            if not self.quitting:
                raise

    async def _render_event(self, event: Event) -> None:
        try:
            self.inspector.dispatch(event)
        except Exception as exc:  # a panel bug must not stop the chat
            self.log.error(f"inspector failed on {event.type}: {exc!r}")
        await self.chat.handle(event)
        if isinstance(event, CompactionPhase) and self.busy:
            self.prompt_box.busy_text = event.text
        elif (
            isinstance(event, HookStarted) and self.busy
        ):  # a slow hook is named while it runs (Esc stops it)
            self.prompt_box.busy_text = (
                f"running the {event.event} hook {display_line(event.command)[:60]} — Esc stops it"
            )
        elif (
            isinstance(event, HookRun) and self.busy and self.prompt_box.busy_text.startswith("running the ")
        ):
            self.prompt_box.busy_text = "thinking"
        elif isinstance(event, SessionStarted | ViewChanged | McpServerChanged):
            self.update_topbar()
        elif isinstance(event, TurnFinished):
            self.files_stale = True

    def update_topbar(self) -> None:
        session = self.session
        if session is None:
            return
        info = session.info()
        lab = " · lab (offline)" if info.provider == "lab" else ""
        title = f" · {info.title}" if info.title else ""  # the first prompt's words
        read_only = " · READ-ONLY" if info.read_only else ""
        if self.workspace != self.started_in:  # moved to a resumed session's own folder
            from app.model.session_folders import shown_folder

            read_only += f" · in {shown_folder(str(self.workspace), 30)}"
        mcp = ""
        statuses = session.mcp_statuses()
        if statuses:
            ready = sum(1 for s in statuses if s.state == "ready")
            mcp = f" · MCP {ready}/{len(statuses)}"
        self._q("#topbar", Static).update(
            display_line(f"bulkhead · {info.route} ({info.model}){lab}{mcp}{read_only}{title}")
        )

    # -- switching, failing, reopening ------------------------------------------------------------------------
    @work(group="session-switch", exclusive=True, exit_on_error=False, name="switch session")
    async def switch_session(self, session_id: str | None, *, folder_asked: bool = False) -> None:
        """Resume `session_id` here, or (None: /new, /clear) start a fresh session on the same route.
        `folder_asked`: the user said where a session of another folder runs its tools (`FolderScreen`)."""
        old = self.session
        old_id = ""
        route_name = model = None
        previous = ""
        if old is not None:
            info = old.info()
            old_id = info.id
            if (
                session_id is None
            ):  # stay on the route and model in use (an implicit route has no config name)
                route_name = info.route if info.route in self.settings.routes else self.route_name
                model = info.model
                previous = f"“{info.title}” ({info.id})" if info.title else info.id
            if self._unsubscribe is not None:
                self._unsubscribe()
            self.session = None
            with contextlib.suppress(Exception):
                await old.close("resume" if session_id else "clear")
        elif session_id is None:
            route_name, model = self.route_name, self.model_override
        await self.chat.clear_all()
        self.engine_ready.clear()
        self.resume, self.continue_ = session_id, False
        self.files_stale = True
        if previous:
            await self.chat.add_notice(
                f"new session — the previous one, {previous}, stays resumable (F5, or "
                f"bulkhead --resume {old_id})",
                code="new",
                title="session",
            )
        self.reopen(route_name=route_name, model=model, folder_asked=folder_asked)

    async def engine_failed(self, error: BaseException) -> None:
        """The session could not open (a route without a key, `--resume` of an unknown id, a database
        that cannot be read): say why and what to do — never wait in silence."""
        from app.engine.api.sessions import SessionNotFound

        if isinstance(error, SessionNotFound):
            self.resume, self.continue_ = None, False  # /model then opens a new session on that route
        reason = (
            str(error)
            if isinstance(error, ConfigError | SessionNotFound)
            else f"{type(error).__name__}: {error}"
        )
        self.open_error = reason
        self._q("#topbar", Static).update("bulkhead · no session — the session could not open (see the chat)")
        routes = ", ".join(sorted(self.settings.routes)) or "none configured"
        self.return_waiting()
        with contextlib.suppress(NoMatches):
            await self.chat.add_notice(
                f"The session could not open: {reason}\nWhat to do: fix it and /model ROUTE (routes: {routes}) to "
                f"open it on a route, /sessions to open another session, or Ctrl+Q to quit (exit code 2). "
                f"What you typed stays in the prompt.",
                level="error",
                code="session",
                title="no session",
            )

    def reopen(self, *, route_name: str | None, model: str | None = None, folder_asked: bool = False) -> None:
        self.open_error = ""
        self._q("#topbar", Static).update("bulkhead · opening the session…")
        self.open_engine(
            resume=self.resume,
            continue_=self.continue_,
            route_name=route_name,
            model=model,
            folder_asked=folder_asked,
        )


def _awaited(callback: Callable[..., Any]) -> Callable[..., Any]:
    """`callback` as `App.call_from_thread` takes it (its type variable cannot be solved for a coroutine
    function returning None)."""
    return callback
