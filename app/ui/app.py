"""The bulkhead App: the chat beside the inspector, driven by the engine's events.

    app = BulkheadApp(settings, route_name=None, resume=None, continue_=False)
    app.run()

The first frame paints before anything slow happens, and pays only for what it draws: the engine
(database, session, route, key lookup) is imported and opened in a thread worker once it is drawn
(`app.ui.engine_link`), the inspector's hidden tabs mount after it, and the provider SDK is imported in a
daemon thread (`app.ui.startup`; quitting never waits for that import). `tests/ui/test_first_frame_imports.py`
lists what the first frame must not import. The engine's events reach the
widgets as `EngineEvent` messages, in order: the chat renders them, the inspector's panels react to
them; once the app is quitting they are dropped. Every I/O path is a named worker with one error
handler, so a failure is a notice or a toast, never a traceback on the screen.

The parts: `MainScreen` (layout), `TurnControl` (prompt, turns, approvals, commands), the action
table and its handlers (`app.ui.actions`, `*_actions.py`), `reports.py`, `FileMentions`,
`InspectorControl`, `Copying`. One `activity` reactive says what runs ("" | turn | compact | probe);
`busy` is `bool(activity)`.

Outside text (model, tools, files, HTTP, hooks) never reaches the terminal as it came: each engine
event becomes display data (`app.textsafe.display_data`) where it turns into an `EngineEvent`;
what widgets read from the store is made safe where they read it; toasts never parse markup.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from app.config import ConfigError, Settings
from app.sizes import format_size
from app.state import State
from app.textsafe import display, display_line
from app.ui import (  # noqa: F401 - they register handlers
    approval_mode,
    blocked_actions,
    session_actions,
    turn_actions,
    view_actions,
)
from app.ui.bindings import APP_BINDINGS
from app.ui.chat import Chat
from app.ui.copying import Copying
from app.ui.engine_link import EngineLink, read_only_notice
from app.ui.file_mentions import FileMentions
from app.ui.inspector_control import InspectorControl
from app.ui.main_screen import MainScreen
from app.ui.palette import BulkheadCommands
from app.ui.prompt import PromptArea, PromptBox, PromptHistory, history_path
from app.ui.startup import SDK_MODULES, collect_from_now, styles_path
from app.ui.textual_ext import terminal_keys
from app.ui.textual_ext.collector import tune_gc
from app.ui.textual_ext.strip_caches import make_strip_caches_lazy
from app.ui.turns import INTERRUPT_QUIT_WINDOW_S, ApprovalAsked, TurnControl
from app.ui.widgets.inspector import Inspector

__all__ = ["ApprovalAsked", "BulkheadApp", "SDK_MODULES", "read_only_notice"]


class BulkheadApp(EngineLink, TurnControl, FileMentions, InspectorControl, Copying, App[int]):
    """bulkhead: chat on the left, the live inspector on the right."""

    CSS_PATH = str(styles_path())
    TITLE = "bulkhead"
    COMMANDS = App.COMMANDS | {BulkheadCommands}
    HELP = """\
## bulkhead

A chat client that survives gateways, WAFs and context overflows — and shows why. The inspector
on the right shows every request's size against the cap, the recovery ladder, compactions, the
archive (Enter recalls a segment) and every request with the evidence of a rejection.
"""

    BINDINGS = APP_BINDINGS

    activity: reactive[str] = reactive("", init=False)  # "" | turn | compact | probe: what runs now

    def __init__(
        self,
        settings: Settings,
        *,
        route_name: str | None = None,
        resume: str | None = None,
        continue_: bool = False,
        workspace: str | Path | None = None,
        state: State | None = None,
        store=None,
        clock: Callable[[], float] = time.time,
        keymap: dict[str, str] | None = None,
        cursor_blink: bool = True,
        inspector: Inspector | None = None,
        ready_notices: tuple[str, ...] = (),
        fork: bool = False,
        read_only: bool = False,
        model: str | None = None,
        ask_workspace: bool = True,
        initial_prompt: str = "",
        open_session: Callable[..., Awaitable[Any]] | None = None,
    ) -> None:
        super().__init__()
        # how a session opens (app.engine.api.ui_session.open_ui_session; a test hands a fake's)
        self.open_session = open_session
        self.initial_prompt = initial_prompt  # `bulkhead "…"`: sent as if typed once the prompt is there
        self.model_override = model  # --model: this run's model on the first route
        # Resuming a session of another folder asks where its tools run (not when --workspace said so).
        self.ask_workspace = ask_workspace
        self.folder_notice = ""  # said once at the next session's start: the app moved to another folder
        self.settings = settings
        self.route_name = route_name
        self.resume = resume
        self.continue_ = continue_
        self.fork = fork
        self.read_only = read_only
        self.workspace = Path(workspace or settings.workspace or Path.cwd()).expanduser()
        self.started_in = self.workspace  # the top bar names the folder once the app works in another one
        self.state = state or State()
        self.store = store
        self.clock = clock
        self.keymap_overrides = keymap
        self.cursor_blink = cursor_blink
        self._inspector = inspector or Inspector(id="inspector", clock=clock)
        self.ready_notices = ready_notices
        self.session = None  # app.engine.api.ui_session.UiSession, once open (app.ui.engine_link)
        self._approvals = {}  # call id -> the future of its card (app.ui.turns)
        self.compact_cancel: asyncio.Event | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._quitting = False
        self._last_interrupt = -INTERRUPT_QUIT_WINDOW_S
        self._theme_ready = False
        self.history = PromptHistory(history_path(self.workspace))
        self.engine_ready = asyncio.Event()
        self.open_error = ""  # why the session could not open ("" while it opens or once it has)
        self.exit_session: tuple[str, int] | None = None  # (id, messages) of the session open at quit
        self.exit_error = ""  # the session's last writes failed at quit (a full disk): printed after the TUI
        self._waiting: list[str] = []  # messages sent before the session was ready, sent once it is
        self._early_keys: list[events.Event] | None = []  # input that came before the prompt had the focus
        self.custom_commands: list = []  # app.engine.api.custom_commands.CustomCommand, from Markdown files
        self._command_problems: list[str] = []

    # -- layout ---------------------------------------------------------------------------------------------
    def get_default_screen(self) -> MainScreen:
        return MainScreen(history=self.history, workspace=self.workspace, inspector=self._inspector)

    def _q(self, selector: str, expect_type: type[Widget] = Widget):
        """query_one on the main screen, whichever screen (help, sessions, palette) is on top."""
        if not self.screen_stack:  # not started yet, or shutting down
            raise NoMatches(f"no screen to find {selector!r} on")
        return self.screen_stack[0].query_one(selector, expect_type)

    @property
    def chat(self) -> Chat:
        return self._q("#chat", Chat)

    @property
    def prompt(self) -> PromptArea:
        return self._q("#prompt", PromptArea)

    @property
    def prompt_box(self) -> PromptBox:
        return self._q("#prompt-box", PromptBox)

    @property
    def inspector(self) -> Inspector:
        return self._inspector

    @property
    def busy(self) -> bool:
        """A turn, a compaction or a probe runs (the guard of everything that changes the conversation)."""
        return bool(self.activity)

    @property
    def running(self) -> str:
        """What runs: "" | turn | compact | probe (the same as `activity`)."""
        return self.activity

    def on_mount(self) -> None:
        tune_gc()
        make_strip_caches_lazy()  # before the first frame: every line drawn is a Strip
        self._apply_theme()

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Textual's, into the working folder when there is no Downloads folder (`app.ui.screenshots`)."""
        from app.ui.screenshots import screenshot_folder

        folder = path or str(screenshot_folder(self.workspace))
        return super().deliver_screenshot(filename, folder, time_format)

    def main_screen_mounted(self) -> None:
        """The main screen's widgets are there (`MainScreen.on_mount`): wire the prompt, open the session."""
        self._apply_keymap()
        prompt = self.prompt
        prompt.cursor_blink = self.cursor_blink
        prompt.slash_arguments = self.slash_arguments
        prompt.wants_files = self.want_files
        prompt.slash_extra = self.custom_completions
        prompt.focus()
        self.call_later(self._replay_early_keys)
        if (
            self.initial_prompt
        ):  # through the prompt: a message waits for the session, a command runs once it is open
            prompt.set_text(self.initial_prompt)
            if not self.initial_prompt.lstrip().startswith("/"):
                self.initial_prompt = ""
                self.call_later(prompt.action_submit)
        # After the first frame: the engine's thread imports and opens while the screen is drawn otherwise, and
        # the two share one interpreter lock (the first frame came ~60-100 ms later).
        self.call_after_refresh(collect_from_now)
        self.call_after_refresh(
            self.open_engine,
            resume=self.resume,
            continue_=self.continue_,
            route_name=self.route_name,
            fork=self.fork,
            read_only=self.read_only,
            model=self.model_override,
        )

    # -- themes and keys --------------------------------------------------------------------------------------
    def _apply_theme(self) -> None:
        wanted = self.settings.theme or self.state.get("theme")
        if isinstance(wanted, str) and wanted:
            if wanted in self.available_themes:
                self.theme = wanted
            elif self.settings.theme:
                self.notify(
                    f"theme {wanted!r} (config.toml) is not a known theme; using {self.theme}",
                    severity="warning",
                )
        self.theme_changed_signal.subscribe(self, self._persist_theme)
        self._theme_ready = True

    def _persist_theme(self, theme) -> None:
        if not self._theme_ready:
            return
        try:
            self.state.set("theme", theme.name)
        except OSError as exc:
            self.notify(f"could not remember the theme: {exc}", severity="warning")

    def _apply_keymap(self) -> None:
        """User key overrides: the `[keys]` table of config.toml (binding id → key). Alt+Enter and
        Alt+digit are taught to Textual's reader first (`app.ui.textual_ext.terminal_keys`)."""
        terminal_keys.install()
        keymap = self.keymap_overrides if self.keymap_overrides is not None else dict(self.settings.keys)
        if keymap:
            self.set_keymap(keymap)
        if keymap.get("prompt.newline"):  # the prompt inserts newlines itself (in order with the text)
            self.prompt.newline_keys = frozenset(
                k.strip() for k in keymap["prompt.newline"].split(",") if k.strip()
            )

    # -- input ----------------------------------------------------------------------------------------------
    @property
    def quitting(self) -> bool:
        """The app is on its way out (Ctrl+Q, `exit()`), or its screens are already gone."""
        if self._quitting or self._exit or self._closing or self._closed:
            return True
        try:
            return not self.screen_stack
        except Exception:  # the mode's stack is gone: shut down
            return True

    async def on_event(self, event: events.Event) -> None:
        # Keys typed while the app shuts down would reach Textual's key handling after the last
        # screen is gone (ScreenStackError): drop input once quitting.
        if isinstance(event, events.InputEvent) and self.quitting:
            return
        if (
            self._early_keys is not None
            and isinstance(event, events.Key | events.Paste)
            and not event.is_forwarded
        ):
            self._early_keys.append(event)  # typed before the prompt could take it: replayed once it can
            return
        if isinstance(event, events.Key) and self._types_into_prompt(event):
            with contextlib.suppress(NoMatches):
                self.screen.set_focus(self.prompt)  # now: the key below reaches it, in order
        await super().on_event(event)

    def _types_into_prompt(self, event: events.Key) -> bool:
        """A printable key typed on the main screen outside a text field, that no key of the focused area
        claims (the chat's approval letters while a call waits, a panel's own keys), goes to the prompt:
        nothing typed is ever taken for a command, nor lost in a panel (`app.ui.focus_rules`)."""
        from app.ui.focus_rules import goes_to_prompt

        return goes_to_prompt(self, event)

    async def _replay_early_keys(self) -> None:
        """Keys that arrived before the prompt had the focus (typed while bulkhead started), in order.

        A key typed before the terminal left line mode comes as the line discipline left it: Enter
        as a line feed, which would read as Ctrl+J (a newline) — those are Enter."""
        early, self._early_keys = self._early_keys or [], None
        with contextlib.suppress(NoMatches):
            self.set_focus(self.prompt)
        for event in early:
            if isinstance(event, events.Key) and event.key == "ctrl+j":
                event = events.Key("enter", "\r")
            await super().on_event(event)

    # -- actions ----------------------------------------------------------------------------------------------
    def action_approval_cycle(self) -> None:
        """Shift+Tab in the prompt: the next approval mode (`app.ui.approval_mode`)."""
        approval_mode.cycle(self)

    def action_focus_chat(self) -> None:
        self.chat.focus()

    def action_jump_latest(self) -> None:
        self.chat.action_jump_latest()

    def action_find(self) -> None:
        """Ctrl+F: the prompt holds `/find ` (the last query again, to step to the next older match)."""
        self.prefill_prompt(f"/find {self.chat.find_query}".rstrip() + " ")

    def action_help(self) -> None:
        view_actions.open_help(self)

    def submit_initial_command(self) -> None:
        """`bulkhead "/approval auto-edit"`: the slash command runs when the session has opened (as if typed then),
        unless the prompt was edited meanwhile."""
        command, self.initial_prompt = self.initial_prompt, ""
        if command and self.prompt.text == command:
            self.prompt.action_submit()

    def prefill_prompt(self, text: str) -> None:
        self.prompt.set_text(text)
        self.prompt.focus()

    def chat_last_answer(self) -> str:
        with contextlib.suppress(Exception):
            answer = self.chat.last_answer()
            return answer.raw if answer else ""
        return ""

    def has_archive(self) -> bool:
        """Whether this session's archive holds anything (the session knows it: no database read)."""
        if self.session is None:
            return False
        with contextlib.suppress(Exception):
            return self.session.has_archive()
        return False

    def slash_arguments(self, command: str) -> list[tuple[str, str]]:
        """What `/model`, `/recall` and `/mcp` can take, for the prompt's completion list."""
        if command == "/mcp":
            statuses = self.session.mcp_statuses() if self.session is not None else []
            return [(f"restart {s.name}", f"{s.state} · {len(s.tools)} tools") for s in statuses]
        if command == "/model":
            current = self.session.info().route if self.session else ""
            return [
                (name, f"{route.provider} · {route.model}" + (" (in use)" if name == current else ""))
                for name, route in sorted(self.settings.routes.items())
            ]
        if command == "/recall" and self.session is not None:
            # The session keeps them in memory (no database read on the UI loop, so per keystroke is fine).
            return [
                (
                    k.key,
                    display_line(f"{k.reason} · {format_size(k.bytes)} · {' '.join(k.head.split())[:40]}"),
                )
                for k in self.session.recall_keys()
            ]
        return []

    # -- the inspector's intents: carried out here, through the busy guard ------------------------------------
    def on_archive_recall_requested(self, message) -> None:
        if self.session is None:
            return
        if self.busy:
            self.notify("A turn is running — recall after it (Esc cancels it).", severity="warning")
            return
        self.session.recall(message.key)
        with contextlib.suppress(NoMatches):
            self.screen.set_focus(self.prompt)  # it is in the conversation: ask about it

    def on_rewind_requested(self, message) -> None:
        if self.session is not None and not self.busy:
            self.run_command("rewind")

    # -- toasts and errors -------------------------------------------------------------------------------------
    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast (widgets' `notify` lands here): its words may quote a provider, a file or an
        exception, so they are made safe and never parsed as markup (`[@click=…]` stays text)."""
        super().notify(
            display(str(message)),
            title=display_line(str(title)),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state != WorkerState.ERROR:
            return
        error = worker.error
        name = worker.name or "task"
        if worker.group == "turn":
            self.activity = ""
        if worker.group == "engine" and error is not None:
            await self.engine_failed(error)
            return
        text = f"{name} failed: {type(error).__name__}: {error}"
        from app.store import StoreError

        if isinstance(
            error, ConfigError | StoreError
        ):  # worded for the user already: what happened, what to do
            text = f"{error}"
        self.notify(text[:300], title="error", severity="error", timeout=10)
        with contextlib.suppress(Exception):
            await self.chat.add_notice(
                text + "  (Ctrl+O, then Ctrl+C copies this)", level="error", code="error", title="error"
            )

    async def action_quit(self) -> None:
        if self._quitting:
            return
        self._quitting = True  # from here engine events and input are dropped
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.workers.cancel_group(self, "turn")
        session = self.session
        if session is not None:
            info = session.info()
            self.exit_session = (info.id, info.messages)  # for the exit hint
            self.session = None
            self.drop_approvals()
            try:
                await asyncio.wait_for(session.close("exit"), timeout=5)
            except Exception as exc:  # quitting goes on; a save that failed is said on the terminal
                from app.store import StoreError

                if isinstance(exc, StoreError):
                    self.exit_error = str(exc)
        code = 2 if session is None and self.open_error else 0  # no session is open: exit 2, as -p does
        self.exit(code, return_code=code)
