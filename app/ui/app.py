"""The bulkhead App: the chat beside the inspector, driven by the engine's events.

    app = BulkheadApp(settings, route_name=None, resume=None, continue_=False)
    app.run()

The first frame paints before anything slow happens: the engine (database, session, route,
key lookup) is opened in a thread worker, and the provider SDK is imported in a daemon thread
(quitting never waits for that import). The engine's events reach the widgets as `EngineEvent`
messages, in order: the chat renders them, the inspector's panels react to them; once the app is
quitting they are dropped. Every I/O path is a named worker with one error handler, so a failure
is a notice or a toast, never a traceback on the screen.

Outside text (model, tools, files, HTTP, hooks) never reaches the terminal as it came: each engine
event becomes display data (`app.textsafe.display_data`) where it turns into an `EngineEvent`;
what widgets read from the store is made safe where they read it; toasts never parse markup.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import App, ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from app.config import ConfigError, Settings, config_path
from app.fsutil import atomic_write
from app.model.events import (
    CompactionPhase,
    Event,
    McpServerChanged,
    SessionStarted,
    TurnFinished,
    ViewChanged,
)
from app.sizes import SizeError, format_size, parse_size
from app.state import State
from app.textsafe import display, display_data, display_line
from app.ui import terminal_keys
from app.ui.chat import Chat
from app.ui.chat_items import ToolBlock
from app.ui.clipboard import CopyResult, system_copy
from app.ui.commands import BY_ID, BulkheadCommands, SlashError, module_available, parse_slash
from app.ui.messages import EngineEvent
from app.ui.prompt import PromptArea, PromptBox, PromptHistory, history_path

PANEL_KEYS = 7  # alt+1 … alt+7 (ctrl+1 … ctrl+7 where the terminal reports them); ctrl+t steps through them
DEFAULT_PANELS = ("payload", "ladder", "compaction", "archive", "requests", "hooks", "cost")
SDK_MODULES = {"anthropic": "anthropic", "lab": "anthropic", "openai": "openai", "bedrock": "boto3"}
NARROW_COLUMNS = 110  # a terminal narrower than this starts with the inspector hidden (F2 shows it)
INSPECTOR_MIN_COLUMNS = 80  # the chat and the inspector need 40 columns each (styles/app.tcss min-width)
INTERRUPT_QUIT_WINDOW_S = 2.0  # a second Ctrl+C on an empty, idle prompt within this quits
GC_YOUNG_THRESHOLD = 5_000  # allocations between young collections (Python's default: 700); see tune_gc


def styles_path() -> Path:
    """`styles/app.tcss` in a checkout, or `app/styles/app.tcss` in an installed wheel."""
    here = Path(__file__).resolve()
    for folder in (here.parents[2] / "styles", here.parents[1] / "styles"):
        if (folder / "app.tcss").is_file():
            return folder / "app.tcss"
    return here.parents[2] / "styles" / "app.tcss"


def prewarm_sdk(provider: str) -> None:
    """Import the route's SDK now (0.6–1.6 s) so the first request does not wait, then freeze what is alive.

    Freezing (`gc.freeze`) moves the objects alive now — the app's and the SDK's modules, classes and
    tables, ~175,000 of them, which live as long as the process — out of the cyclic collector's reach.
    With them in, every full collection took 60–190 ms, a stall the user sees while an answer streams.
    """
    name = SDK_MODULES.get(provider)
    if name:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    gc.freeze()


def tune_gc() -> None:
    """Fewer cyclic collections: a young-generation threshold of `GC_YOUNG_THRESHOLD` allocations.

    A streamed answer allocates fast (frames, strips, events); at the default (700) the collector ran
    a full collection every second or so while streaming, each 50–110 ms here — the largest stalls
    left once answers stopped mounting widgets. Young collections get a little longer (≈1–4 ms).
    """
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def prewarm_in_background(provider: str) -> threading.Thread | None:
    """`prewarm_sdk` in a daemon thread: quitting does not wait for it (a worker thread would be joined)."""
    name = SDK_MODULES.get(provider)
    if not name or name in sys.modules:
        return None
    thread = threading.Thread(target=lambda: prewarm_sdk(provider), name=f"import {name}", daemon=True)
    thread.start()
    return thread


class ApprovalAsked(Message):
    """The engine's approver awaits `future`; the chat's tool block resolves it."""

    def __init__(self, name: str, args: dict, why: str, future: asyncio.Future[bool]) -> None:
        super().__init__()
        self.name = name
        self.args = args
        self.why = why
        self.future = future


def read_only_notice(session_id: str) -> str:
    return (f"This session is open read-only: another bulkhead is writing it. Browse and copy freely; to go on, "
            f"fork it (`bulkhead --resume {session_id} --fork`) or pick another session with F5.")


class BulkheadApp(App[int]):
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

    _view = Binding.Group("View")
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", tooltip="Quit bulkhead (the terminal is restored)", priority=True,
                id="app.quit"),
        Binding("f1,alt+h", "help", "Help", tooltip="Help for the focused pane, every key and command", id="app.help"),
        Binding("escape", "cancel", "Cancel", tooltip="Cancel the running turn or compaction", priority=True,
                show=False, id="app.cancel"),
        Binding("ctrl+c", "interrupt", "Interrupt", priority=True, show=False, id="app.interrupt",
                tooltip="Cancel the running turn; else copy the selection or clear the prompt; twice quits"),
        Binding("ctrl+o,f6", "focus_chat", "Chat", tooltip="Move into the chat to copy or fold (Esc returns)",
                id="app.chat"),
        Binding("ctrl+end,alt+down", "jump_latest", "Latest", tooltip="Jump to the newest output and follow it",
                show=False, id="app.latest"),
        Binding("f2,ctrl+backslash", "toggle_inspector", "Inspector", tooltip="Hide or show the inspector",
                group=_view, id="app.inspector"),
        Binding("f3,alt+w", "widen_inspector", "Wide", tooltip="Widen or narrow the inspector", group=_view,
                id="app.widen"),
        Binding("f5,alt+s", "command('sessions')", "Sessions", tooltip="Browse sessions and resume one",
                id="app.sessions"),
        Binding("ctrl+t", "next_panel", "Panels", tooltip="Show the inspector and move to its next panel",
                group=_view, id="app.next_panel"),
        *(Binding(f"alt+{n},ctrl+{n}", f"panel({n})", f"Panel {n}", show=False,
                  tooltip=f"Show and focus inspector panel {n} ({name})", id=f"app.panel{n}")
          for n, name in enumerate(DEFAULT_PANELS[:PANEL_KEYS], start=1)),
    ]

    busy: reactive[bool] = reactive(False, init=False)

    def __init__(self, settings: Settings, *, route_name: str | None = None, resume: str | None = None,
                 continue_: bool = False, workspace: str | Path | None = None, state: State | None = None,
                 store=None, clock: Callable[[], float] = time.time, keymap: dict[str, str] | None = None,
                 cursor_blink: bool = True, inspector_factory: Callable[[], Widget] | None = None,
                 ready_notices: tuple[str, ...] = (), fork: bool = False, read_only: bool = False,
                 model: str | None = None) -> None:
        super().__init__()
        self.model_override = model  # --model: this run's model on the first route
        self.settings = settings
        self.route_name = route_name
        self.resume = resume
        self.continue_ = continue_
        self.fork = fork
        self.read_only = read_only
        self.workspace = Path(workspace or settings.workspace or Path.cwd()).expanduser()
        self.state = state or State()
        self.store = store
        self.clock = clock
        self.keymap_overrides = keymap
        self.cursor_blink = cursor_blink
        self.inspector_factory = inspector_factory
        self.ready_notices = ready_notices
        self.engine = None
        self.choice = None
        self.running = ""  # "turn" | "compact" while busy
        self._compact_cancel: asyncio.Event | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._quitting = False
        self._last_interrupt = -INTERRUPT_QUIT_WINDOW_S
        self._narrow: bool | None = None  # which side of NARROW_COLUMNS the terminal was last on
        self._recall_keys: tuple[tuple[str, str] | None, list[tuple[str, str]]] = (None, [])  # (session, view)
        self._theme_ready = False
        self.history = PromptHistory(history_path(self.workspace))
        self._files_listing = False  # the workspace's files are being listed (for @ completion)
        self._files_stale = False  # a turn ran since they were listed: tools may have made files
        self.last_copy: CopyResult | None = None
        self.engine_ready = asyncio.Event()
        self.open_error = ""  # why the session could not open ("" while it opens or once it has)
        self.exit_session: tuple[str, int] | None = None  # (id, messages) of the session open at quit
        self._waiting: list[str] = []  # messages sent before the session was ready, sent once it is
        self._early_keys: list[events.Event] | None = []  # input that came before the prompt had the focus
        self.custom_commands: list = []  # app.engine.custom_commands.CustomCommand, from Markdown files
        self._command_problems: list[str] = []

    # -- layout ---------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("bulkhead · opening the session…", id="topbar", markup=False)
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield Chat(id="chat")
                yield Static("↓ new output below — End (in the chat) or Alt+↓ jumps to it and follows",
                             id="new-output", markup=False)
                yield PromptBox(history=self.history, workspace=Path(self.workspace), id="prompt-box")
            yield self._make_inspector()
        yield Footer(id="footer")

    def _make_inspector(self) -> Widget:
        if self.inspector_factory is not None:
            return self.inspector_factory()
        from app.ui.widgets.inspector import Inspector

        return Inspector(id="inspector", clock=self.clock)

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
    def inspector(self) -> Widget:
        return self._q("#inspector")

    def on_mount(self) -> None:
        tune_gc()
        self._apply_theme()
        self._apply_keymap()
        prompt = self.prompt
        prompt.cursor_blink = self.cursor_blink
        prompt.slash_arguments = self.slash_arguments
        prompt.wants_files = self.want_files
        prompt.slash_extra = self.custom_completions
        prompt.focus()
        self._q("#new-output").display = False
        self._q("#completions").display = False
        self._q("#busy").display = False
        self.call_later(self._replay_early_keys)
        self._open_engine(resume=self.resume, continue_=self.continue_, route_name=self.route_name,
                          fork=self.fork, read_only=self.read_only, model=self.model_override)

    # -- themes and keys --------------------------------------------------------------------------------------
    def _apply_theme(self) -> None:
        wanted = self.settings.theme or self.state.get("theme")
        if isinstance(wanted, str) and wanted:
            if wanted in self.available_themes:
                self.theme = wanted
            elif self.settings.theme:
                self.notify(f"theme {wanted!r} (config.toml) is not a known theme; using {self.theme}",
                            severity="warning")
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
        Alt+digit are taught to Textual's reader first (`app.ui.terminal_keys`)."""
        terminal_keys.install()
        keymap = self.keymap_overrides if self.keymap_overrides is not None else dict(self.settings.keys)
        if keymap:
            self.set_keymap(keymap)
        if keymap.get("prompt.newline"):  # the prompt inserts newlines itself (in order with the text)
            self.prompt.newline_keys = frozenset(k.strip() for k in keymap["prompt.newline"].split(",") if k.strip())

    # -- the engine -------------------------------------------------------------------------------------------
    @work(thread=True, group="engine", exclusive=True, exit_on_error=False, name="open engine")
    def _open_engine(self, *, resume: str | None, continue_: bool, route_name: str | None, fork: bool = False,
                     read_only: bool = False, model: str | None = None) -> None:
        from app.engine.bootstrap import open_engine
        from app.lease import SessionHeld

        try:
            engine, choice, resumed = open_engine(self.settings, route_name=route_name, resume=resume,
                                                  continue_=continue_, workspace=self.workspace,
                                                  approver=self.approve_tool, store=self.store, state=self.state,
                                                  fork=fork, read_only=read_only, what="the TUI", model=model)
        except SessionHeld as held:  # one writer per session: ask what to do instead
            self.call_from_thread(self._session_held, held, route_name)
            return
        prewarm_in_background(choice.route.provider)
        self._command_problems = self.refresh_custom_commands()
        self.call_from_thread(self._engine_opened, engine, choice, resumed)

    def _session_held(self, held, route_name: str | None) -> None:
        from app.ui.screens.lease import LeaseScreen

        def chosen(choice: str | None) -> None:
            if choice == "read-only":
                self._open_engine(resume=held.session_id, continue_=False, route_name=route_name, read_only=True)
            elif choice == "fork":
                self._open_engine(resume=held.session_id, continue_=False, route_name=route_name, fork=True)
            else:
                self._open_engine(resume=None, continue_=False, route_name=route_name)

        self.push_screen(LeaseScreen(held), callback=chosen)

    async def _engine_opened(self, engine, choice, resumed: bool) -> None:
        self.engine = engine
        self.choice = choice
        self.store = engine.session.store
        self._unsubscribe = engine.session.bus.subscribe(self._on_bus)
        bind = getattr(self.inspector, "bind_engine", None)
        if callable(bind):
            bind(engine)
        chat = self.chat
        for note in choice.notices:
            await chat.add_notice(note, code="lab" if choice.lab else "route",
                                  title="lab model" if choice.lab else "route")
        for note in self.ready_notices:
            await chat.add_notice(note, code="app")
        for problem in self._command_problems:
            await chat.add_notice(display_line(problem), level="warn", code="commands", title="custom command")
        if resumed:
            session = engine.session
            await chat.add_notice(f"resumed “{session.title or session.id}” — {len(session.master)} messages",
                                  code="resume", title="session")
            await chat.render_history(session.master)
            if session.read_only:
                await chat.add_notice(read_only_notice(session.id), level="warn", code="read_only",
                                      title="read-only")
        self._update_topbar()
        self._start_engine(resumed)

    @work(group="engine-start", exit_on_error=False, name="start engine")
    async def _start_engine(self, resumed: bool) -> None:
        engine = self.engine
        await engine.start(resumed=resumed)
        self.engine_ready.set()
        self.refresh_bindings()
        if engine.mcp is not None:
            self._start_mcp(engine)
        self._send_waiting()

    @work(group="mcp", exit_on_error=False, name="start MCP servers")
    async def _start_mcp(self, engine) -> None:
        """After the first frame: the SDK is imported in a thread, the servers start in the background."""
        await engine.start_mcp(ask=self.ask_mcp_trust)

    async def ask_mcp_trust(self, specs) -> str | None:
        """Ask once whether this workspace's `.mcp.json` servers may start ("allow" | "deny" | None)."""
        from app.mcp.config import PROJECT_FILE
        from app.ui.screens.mcp_trust import McpTrustScreen

        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

        def answered(result: str | None) -> None:
            if not future.done():
                future.set_result(result)

        self.push_screen(McpTrustScreen(specs, str(self.workspace / PROJECT_FILE)), callback=answered)
        return await future

    def _on_bus(self, event: Event) -> None:
        if not (self._quitting or self._exit):
            self.post_message(EngineEvent(display_data(event)))  # the one door engine text comes in by

    @property
    def quitting(self) -> bool:
        """The app is on its way out (Ctrl+Q, `exit()`), or its screens are already gone."""
        if self._quitting or self._exit or self._closing or self._closed:
            return True
        try:
            return not self.screen_stack
        except Exception:  # noqa: BLE001 - the mode's stack is gone: shut down
            return True

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

    async def on_event(self, event: events.Event) -> None:
        # Keys typed while the app shuts down would reach Textual's key handling after the last
        # screen is gone (ScreenStackError): drop input once quitting.
        if isinstance(event, events.InputEvent) and self.quitting:
            return
        if self._early_keys is not None and isinstance(event, events.Key | events.Paste) and not event.is_forwarded:
            self._early_keys.append(event)  # typed before the prompt could take it: replayed once it can
            return
        await super().on_event(event)

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

    async def _render_event(self, event: Event) -> None:
        dispatch = getattr(self.inspector, "dispatch", None)
        if callable(dispatch):
            try:
                dispatch(event)
            except Exception as exc:  # noqa: BLE001 - a panel bug must not stop the chat
                self.log.error(f"inspector failed on {event.type}: {exc!r}")
        await self.chat.handle(event)
        if isinstance(event, CompactionPhase) and self.busy:
            self.prompt_box.busy_text = event.text
        elif isinstance(event, SessionStarted | ViewChanged | McpServerChanged):
            self._update_topbar()
        elif isinstance(event, TurnFinished):
            self._files_stale = True

    def _update_topbar(self) -> None:
        engine = self.engine
        if engine is None:
            return
        session, route = engine.session, engine.route
        lab = " · lab (offline)" if route.provider == "lab" else ""
        title = f" · {session.title}" if session.title else ""  # the first prompt's words
        read_only = " · READ-ONLY" if session.read_only else ""
        mcp = ""
        if engine.mcp is not None and engine.mcp.connections:
            statuses = engine.mcp.statuses()
            ready = sum(1 for s in statuses if s.state == "ready")
            mcp = f" · MCP {ready}/{len(statuses)}"
        self._q("#topbar", Static).update(
            display_line(f"bulkhead · {route.name} ({route.model}){lab}{mcp}{read_only}{title}"))

    # -- the workspace's files, for @ completion ------------------------------------------------------------
    def want_files(self) -> None:
        """The prompt completes an `@`: list the workspace's files in a worker when there is no list yet,
        or it is older than `mention_index_ttl`, or a turn ran since (the prompt meanwhile uses the old one)."""
        if self._files_listing:
            return
        matcher = self.prompt.file_matcher
        if (matcher is not None and not self._files_stale
                and self.clock() - matcher.index.built_at < self.settings.mention_index_ttl):
            return
        self._files_listing, self._files_stale = True, False
        if matcher is None:
            self.prompt.files_status = "listing the workspace's files…"
        self._list_files()

    @work(thread=True, group="file-index", exclusive=True, exit_on_error=False, name="list workspace files")
    def _list_files(self) -> None:
        from app.engine.file_index import FuzzyPaths, build_file_index

        def progress(count: int) -> None:
            with contextlib.suppress(Exception):  # the app may be closing
                self.call_from_thread(self._files_progress, count)

        matcher = None
        try:
            index = build_file_index(self.workspace, max_files=self.settings.mention_index_max_files,
                                     progress=progress, now=self.clock)
            matcher = FuzzyPaths(index)
        finally:
            with contextlib.suppress(Exception):
                self.call_from_thread(self._files_listed, matcher)

    def _files_progress(self, count: int) -> None:
        with contextlib.suppress(NoMatches):
            if self.prompt.file_matcher is None:
                self.prompt.files_status = f"listing the workspace's files… {count:,} so far"
                if self.prompt.typing_mention():
                    self.prompt.refresh_completions()

    def _files_listed(self, matcher) -> None:
        self._files_listing = False
        with contextlib.suppress(NoMatches):
            prompt = self.prompt
            if matcher is None:
                prompt.files_status = "could not list the workspace's files"
                return
            index = matcher.index
            prompt.file_matcher = matcher
            prompt.files_status = (f"{index.files:,} files" + (" (git)" if index.source == "git" else "")
                                   + (f" — the first {index.files:,} only (mention_index_max_files)"
                                      if index.truncated else ""))
            if prompt.typing_mention():  # what was typed meanwhile gets the fuzzy list now
                prompt.refresh_completions()

    # -- turns ------------------------------------------------------------------------------------------------
    def watch_busy(self, busy: bool) -> None:
        if not self.screen_stack or not self.screen_stack[0].query("#prompt-box"):
            return
        self.prompt_box.busy = busy
        if busy:
            self.prompt_box.busy_text = "compacting" if self.running == "compact" else "thinking"
        self.refresh_bindings()

    @on(PromptArea.Submitted)
    def _on_submitted(self, event: PromptArea.Submitted) -> None:
        """The prompt has handed over its text. Nothing typed is lost: what cannot run now goes back
        into the prompt, and a message sent while the session opens waits and is sent when it is ready."""
        text = event.text.strip()
        if text.startswith("#") and "\n" not in text:  # `# always run make check`: remember it (as Claude Code)
            if not self.run_command("memory", text[1:].strip(), typed=True):
                event.prompt.restore(event.text)
            return
        if text.startswith("/") and not text.startswith("//"):
            try:
                action_id, arg = parse_slash(text)
            except SlashError as exc:
                custom = self.custom_command(text)
                if custom is not None:
                    if not self.run_custom(custom, text.partition(" ")[2]):
                        event.prompt.restore(event.text)
                    return
                event.prompt.restore(event.text)
                self._command_notice(str(exc), level="warn")
                return
            if not self.run_command(action_id, arg, typed=True):
                event.prompt.restore(event.text)
            return
        message = text[1:] if text.startswith(("//", "\\#")) else event.text  # `//x`, `\#x`: sent as typed
        if self.engine is None:
            if self.open_error:
                event.prompt.restore(event.text)
                self._command_notice(f"no session is open ({self.open_error}) — /model ROUTE opens one, /sessions "
                                     f"another; your message is back in the prompt", level="error", code="session")
                return
            self._waiting.append(message)
            self._show_waiting()
            return
        if self.engine.session.read_only:
            event.prompt.restore(event.text)
            self.notify(read_only_notice(self.engine.session.id), severity="warning", timeout=8)
            return
        if self.busy:
            event.prompt.restore(event.text)
            self.notify("A turn is running — Esc cancels it; your prompt is kept.", severity="warning")
            return
        self.send(message)

    def _show_waiting(self) -> None:
        count = len(self._waiting)
        self.prompt_box.waiting = (f"opening the session… {'your message is' if count == 1 else f'{count} messages are'}"
                                   f" sent as soon as it is ready" if count else "")

    def _send_waiting(self) -> None:
        """Send the next message typed while the session was opening (one per turn, in order)."""
        if not self._waiting or self.engine is None or self.busy or self.quitting:
            return
        message = self._waiting.pop(0)
        self._show_waiting()
        self.send(message)

    def _return_waiting(self) -> None:
        """The session did not open: the messages that waited go back into the prompt, unsent."""
        if self._waiting:
            prompt = self.prompt
            for message in reversed(self._waiting):
                prompt.restore(message)
            self._waiting.clear()
        self._show_waiting()

    def send(self, prompt: str) -> Worker:
        self.running = "turn"
        self.busy = True
        return self._turn(prompt)

    @work(group="turn", exclusive=True, exit_on_error=False, name="turn")
    async def _turn(self, prompt: str, retry: bool = False) -> None:
        try:
            result = await (self.engine.retry() if retry else self.engine.submit(prompt))
        finally:
            self.busy = False
            self.running = ""
            if self._waiting:
                self.call_later(self._send_waiting)
        if result.outcome == "failed" and retry and result.failure is None:  # /retry had nothing to ask again
            self._command_notice(f"/retry: {result.error}", level="warn")
        elif result.outcome == "failed":
            failure = result.failure
            retryable = bool(failure and (failure.recoverable or getattr(failure, "retryable", False)))
            self.notify(result.error[:300] + (" — /retry asks again" if retryable else ""),
                        title="turn failed", severity="error", timeout=8)
        elif result.outcome == "partial":
            self.notify("The answer was cut short; it is kept, marked partial — /retry asks again.",
                        severity="warning")

    def action_cancel(self) -> None:
        if not self.busy or self.engine is None or len(self.screen_stack) > 1:
            raise SkipAction()  # Esc then closes the palette / help / sessions screen, or leaves the chat
        self.engine.tool_cancel.set()
        if self.running == "compact" and self._compact_cancel is not None:
            self._compact_cancel.set()
            self.prompt_box.busy_text = "cancelling the compaction"
            return
        self.workers.cancel_group(self, "turn")

    async def action_interrupt(self) -> None:
        """Ctrl+C as in other terminal agents: cancel what runs; else copy the selection, else clear
        the prompt (↑ brings it back); on an empty, idle prompt a second press within 2 s quits."""
        if len(self.screen_stack) > 1:
            raise SkipAction()  # the palette, help or sessions screen handles its own Ctrl+C
        if self.busy and self.engine is not None:
            self.action_cancel()
            return
        selected = self.screen.get_selected_text()
        if not selected and isinstance(self.focused, PromptArea):
            selected = self.focused.selected_text
        if selected:
            self.copy(selected, "the selection")
            return
        prompt = self.prompt
        if prompt.text.strip():
            self.history.add(prompt.text)
            prompt.set_text("")
            self.notify("Prompt cleared — ↑ brings it back", timeout=3)
            return
        now = time.monotonic()
        if now - self._last_interrupt <= INTERRUPT_QUIT_WINDOW_S:
            await self.action_quit()
            return
        self._last_interrupt = now
        self.notify("Press Ctrl+C again to quit (or Ctrl+Q)", timeout=INTERRUPT_QUIT_WINDOW_S)

    async def approve_tool(self, name: str, args: dict, why: str) -> bool | str:
        """The engine's approver: an inline bar in the tool's block — yes, always for this session,
        always for this project (the answer names the rule the engine then remembers), no."""
        future: asyncio.Future[bool | str] = asyncio.get_running_loop().create_future()
        self.post_message(ApprovalAsked(display(name), display_data(args), display(why), future))
        return await future

    def on_approval_asked(self, message: ApprovalAsked) -> None:
        if message.future.done():
            return
        from app.engine.permissions import suggest_rule

        try:
            block = self.chat.ask_approval(message.name, message.why, message.future,
                                           remember=suggest_rule(message.name, message.args, self.workspace))
        except NoMatches:  # quitting
            message.future.cancel()
            return
        if block is None:  # the block was pruned or never shown: deny rather than hang
            message.future.set_result(False)
            self.notify(f"{message.name}: could not show the approval prompt; denied", severity="warning")
            return
        self.chat.focus()
        self.prompt_box.busy_text = f"waiting for your approval of {message.name} — y approves, n denies"
        message.future.add_done_callback(lambda _future: self.refresh_bindings())
        self.refresh_bindings()

    @on(ToolBlock.Resolved)
    def _on_resolved(self, event: ToolBlock.Resolved) -> None:
        with contextlib.suppress(NoMatches):
            if self.chat.pending_approval() is None:
                self.prompt.focus()
                if self.busy:
                    self.prompt_box.busy_text = f"running {event.block.tool_name}" if event.approved else "thinking"
        self.refresh_bindings()

    @on(Chat.LeaveChat)
    def _on_leave_chat(self) -> None:
        with contextlib.suppress(NoMatches):
            self.prompt.focus()

    @on(Chat.NewOutputBelow)
    def _on_new_output(self, event: Chat.NewOutputBelow) -> None:
        with contextlib.suppress(NoMatches):
            self._q("#new-output").display = event.below

    def on_click(self, event) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and widget.id == "new-output":
            self.action_jump_latest()

    # -- actions ----------------------------------------------------------------------------------------------
    def action_focus_chat(self) -> None:
        self.chat.focus()

    def action_jump_latest(self) -> None:
        self.chat.action_jump_latest()

    def on_resize(self, event: events.Resize) -> None:
        """Crossing NARROW_COLUMNS hides or shows the inspector; in between, F2 decides."""
        narrow = event.size.width < NARROW_COLUMNS
        if narrow == self._narrow:
            return
        first = self._narrow is None
        self._narrow = narrow
        self.set_class(narrow, "-hide-inspector")
        if narrow and first:
            self.notify(f"The terminal is {event.size.width} columns wide: the inspector is hidden to give the "
                        f"chat room — F2 shows it.", timeout=6)

    def _show_inspector(self) -> bool:
        """Show the inspector, or say why it cannot be shown here (a terminal too narrow for both panes)."""
        width, height = self.size
        if width < INSPECTOR_MIN_COLUMNS:
            self.notify(f"The terminal is {width}×{height}: the inspector needs {INSPECTOR_MIN_COLUMNS} columns beside "
                        f"the chat — widen the terminal to see it (/cost and /context show its numbers here).",
                        severity="warning", timeout=6)
            return False
        self.remove_class("-hide-inspector")
        return True

    def action_toggle_inspector(self) -> None:
        if self.has_class("-hide-inspector"):
            self._show_inspector()
        else:
            self.add_class("-hide-inspector")

    def action_widen_inspector(self) -> None:
        if not self._show_inspector():
            return
        self.toggle_class("-wide-inspector")
        if hasattr(self.inspector, "wide"):
            self.inspector.wide = self.has_class("-wide-inspector")

    def panel_names(self) -> tuple[str, ...]:
        """The inspector's panels, in the order of their keys (Alt+1 … Alt+7)."""
        inspector = self.inspector
        names = tuple(getattr(inspector, "PANELS", ()) or getattr(inspector, "panel_names", ()) or DEFAULT_PANELS)
        return tuple(getattr(n, "NAME", n) for n in names)

    def action_panel(self, number: int) -> None:
        inspector = self.inspector
        names = self.panel_names()
        if not 1 <= number <= len(names) or not self._show_inspector():
            return
        show = getattr(inspector, "show_panel", None)
        if callable(show):
            show(names[number - 1])

    def action_next_panel(self) -> None:
        """Ctrl+T: the panel after the focused one (the first when none is focused)."""
        names = self.panel_names()
        panels = getattr(self.inspector, "panels", {})
        focused = self.focused
        current = next((index for index, name in enumerate(names) if focused is not None and name in panels
                        and (focused is panels[name] or panels[name] in focused.ancestors)), -1)
        self.action_panel((current + 1) % len(names) + 1)

    def _cmd_panel(self, name: str) -> None:
        names = self.panel_names()
        if name in names:
            self.action_panel(names.index(name) + 1)

    def action_help(self) -> None:
        from app.ui.screens.help import HelpScreen, help_markdown

        focused_help = ""
        node = self.focused
        while node is not None:
            if getattr(node, "HELP", None):
                focused_help = node.HELP
                break
            node = node.parent
        bindings = []
        seen = set()
        for node in (self, self.chat, self.prompt):
            for item in type(node).BINDINGS:
                if isinstance(item, Binding) and item.id and item.id not in seen and item.description:
                    seen.add(item.id)
                    bindings.append((self._keymap.get(item.id, item.key), item.description, item.tooltip, item.id))
        grammar = ""
        if self.engine is not None and self.engine.route.provider == "lab":
            from app.lab.model import GRAMMAR

            grammar = GRAMMAR
        self.refresh_custom_commands()
        commands = [(c.slash + (f" {c.argument_hint}" if c.argument_hint else ""), c.description, c.source)
                    for c in self.custom_commands]
        rules = self.engine.permissions.listing() if self.engine is not None else []
        self.push_screen(HelpScreen(help_markdown(focused_help=focused_help, bindings=bindings,
                                                  lab_grammar=grammar, keymap_file=str(config_path()),
                                                  custom_commands=commands, permissions=rules,
                                                  approval_mode=self.settings.approval)))

    def prefill_prompt(self, text: str) -> None:
        self.prompt.set_text(text)
        self.prompt.focus()

    def chat_last_answer(self) -> str:
        with contextlib.suppress(Exception):
            answer = self.chat.last_answer()
            return answer.raw if answer else ""
        return ""

    def archive_count(self) -> int:
        if self.engine is None:
            return 0
        with contextlib.suppress(Exception):
            return len(self.engine.session.store.archive_list(self.engine.session.id, limit=1))
        return 0

    def action_command(self, action_id: str, arg: str = "") -> None:
        self.run_command(action_id, arg)

    def run_command(self, action_id: str, arg: str = "", *, typed: bool = False) -> bool:
        """Run one action of the table (slash command, palette or key), or say why it cannot run now
        (a typed slash command says it in the chat, where it stays; a key or the palette in a toast).
        True if it ran."""
        action = BY_ID[action_id]
        reason = action.why_not(self)
        if reason:
            if typed:
                self._command_notice(f"{action.usage or action.title}: {reason}", level="warn")
            else:
                self.notify(f"{action.title}: {reason}", severity="warning")
            return False
        handler = getattr(self, f"_cmd_{action_id}")
        result = handler(arg)
        if asyncio.iscoroutine(result):
            self.run_worker(result, group="command", exit_on_error=False, name=f"command {action_id}")
        return True

    def _command_notice(self, text: str, *, level: str = "info", code: str = "command") -> None:
        """Feedback on a typed command, kept in the transcript as a notice line (a toast vanishes)."""
        async def add() -> None:
            with contextlib.suppress(NoMatches):
                await self.chat.add_notice(text, level=level, code=code)

        self.run_worker(add(), group="command-notice", exit_on_error=False, name="command notice")

    # -- slash commands (one method per action id) ---------------------------------------------------------
    def _cmd_compact(self, instructions: str) -> None:
        self.running = "compact"
        self._compact_cancel = asyncio.Event()
        self.busy = True
        self._compact(instructions or None, self._compact_cancel)

    @work(group="turn", exclusive=True, exit_on_error=False, name="compact")
    async def _compact(self, instructions: str | None, cancel: asyncio.Event) -> None:
        try:
            result = await self.engine.compact(instructions, cancel=cancel)
        finally:
            self.busy = False
            self.running = ""
        if cancel.is_set():
            await self.chat.add_notice("compaction cancelled — the view is unchanged", level="warn", code="compaction")
        elif result is None:
            self.notify("compaction did not run (blocked by a hook)", severity="warning")

    def _cmd_rewind(self, _arg: str) -> None:
        self.engine.rewind()

    async def _cmd_mcp(self, arg: str) -> None:
        """`/mcp`: each server's state, tools and the bytes their definitions add; `/mcp restart NAME`."""
        from app.mcp.report import engine_report

        engine = self.engine
        words = arg.split()
        if words and words[0] == "restart":
            if len(words) != 2 or engine.mcp is None or words[1] not in engine.mcp.connections:
                known = ", ".join(engine.mcp.connections) if engine.mcp is not None else "none configured"
                await self.chat.add_notice(f"usage: /mcp restart NAME (servers: {known})", level="warn", code="mcp")
                return
            await self.chat.add_notice(f"restarting MCP server {words[1]}…", code="mcp", title="mcp")
            if not engine.mcp.started:
                await engine.start_mcp()
            status = await engine.mcp.restart(words[1])
            if status.state == "ready":
                await self.chat.add_notice(f"MCP server {words[1]} is ready: {len(status.tools)} tools", code="mcp",
                                           title="mcp")
            return
        if words:
            await self.chat.add_notice("usage: /mcp (servers, tools, bytes) or /mcp restart NAME", level="warn",
                                       code="mcp")
            return
        title, rows = engine_report(engine)
        await self.chat.add_report(title, rows)

    async def _cmd_undo(self, _arg: str) -> None:
        await self.engine.undo()  # its notice says which files came back

    def _cmd_rewind_to(self, _arg: str) -> None:
        from app.ui.screens.rewind import RewindScreen

        self.push_screen(RewindScreen(self.engine.rewind_points(), now=self.clock), callback=self._rewind_chosen)

    def _rewind_chosen(self, choice: tuple[str, bool] | None) -> None:
        if choice is not None:
            self.run_worker(self._rewind(*choice), group="command", exit_on_error=False, name="rewind")

    async def _rewind(self, message_id: str, files: bool) -> None:
        """Back to just before a prompt: the chat shows the conversation as it was, the prompt holds that
        prompt again (edit and send it), and the files come back too when asked."""
        engine = self.engine
        kept = engine.view_before(message_id)
        await self.chat.clear_all()
        await self.chat.render_history(kept)
        prompt, _restored = await engine.rewind_to(message_id, files=files)
        self.prefill_prompt(prompt.text)

    def _cmd_init(self, _arg: str) -> None:
        from app.engine.project_init import init_prompt

        self.send(init_prompt(self.workspace))

    async def _cmd_memory(self, text: str) -> None:
        engine = self.engine
        if text:
            try:
                engine.remember(text)  # one short append
            except OSError as exc:
                await self.chat.add_notice(f"could not add it to the instructions: {exc}", level="error",
                                           code="memory")
            return
        from app.engine.instructions import memory_file

        loaded = engine.instructions
        rows = [(display_line(str(f.path)), f"{format_size(f.bytes)} · " + {
                    "global": "yours, every project", "project": "this project"}.get(
                    f.scope, f"imported by {display_line(f.imported_by.name if f.imported_by else '?')}"))
                for f in loaded.files]
        rows += [("problem", display_line(p)) for p in loaded.problems]
        rows.append(("/memory TEXT", f"adds a line to {display_line(str(memory_file(engine.workspace)))} "
                                     f"(as does a prompt starting with #)"))
        title = (f"instructions — {format_size(loaded.bytes)} of the system prompt" if loaded.files
                 else "instructions — no AGENTS.md or CLAUDE.md yet (/init writes one)")
        await self.chat.add_report(title, rows)

    def _cmd_permissions(self, _arg: str) -> None:
        from app.ui.screens.permissions import PermissionsScreen

        engine = self.engine
        self.push_screen(PermissionsScreen(engine.permissions.listing(), engine.permissions.problems,
                                           mode=self.settings.approval, workspace=str(engine.workspace)))

    # -- custom commands ----------------------------------------------------------------------------------
    def refresh_custom_commands(self) -> list[str]:
        """Read the Markdown command files again (they may be added while bulkhead runs); what was skipped."""
        from app.engine.custom_commands import discover
        from app.ui.commands import ACTIONS

        self.custom_commands, problems = discover(self.workspace, reserved=[a.slash for a in ACTIONS if a.slash])
        return problems

    def custom_completions(self) -> list[tuple[str, str]]:
        return [(command.slash, display_line(f"{command.argument_hint + ' — ' if command.argument_hint else ''}"
                                             f"{command.description} ({command.source})"))
                for command in self.custom_commands]

    def custom_command(self, text: str):
        """The custom command `text` names (read the files again when it names none)."""
        word = text.split(maxsplit=1)[0].lstrip("/")
        for attempt in range(2):
            for command in self.custom_commands:
                if command.name == word:
                    return command
            if attempt == 0:
                self.refresh_custom_commands()
        return None

    def run_custom(self, command, arguments: str) -> bool:
        """Send a custom command's prompt (its file's text, `$ARGUMENTS` filled in); False when it cannot run now."""
        reason = "the session is still opening" if self.engine is None else (
            "a turn is running (Esc cancels it)" if self.busy else "")
        if reason:
            self.notify(f"{command.slash}: {reason} — your command is back in the prompt", severity="warning")
            return False
        self.send(command.expand(arguments))
        return True

    def _cmd_retry(self, _arg: str) -> None:
        self.running = "turn"
        self.busy = True
        self._turn("", retry=True)

    def _cmd_cancel(self, _arg: str) -> None:
        with contextlib.suppress(SkipAction):
            self.action_cancel()

    async def _cmd_cost(self, _arg: str) -> None:
        c = self.engine.session.counters
        joined = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"  # noqa: E731
        rows = [
            ("requests", f"{c.requests:,} ({c.failed_requests:,} failed, {c.retries:,} retries)"),
            ("tokens", f"{c.input_tokens:,} in · {c.output_tokens:,} out · {c.cache_read_tokens:,} cache read · "
                       f"{c.cache_write_tokens:,} cache write"),
            ("cost", f"${c.cost_usd:.4f}" + (f" ({c.unpriced_requests} unpriced)" if c.unpriced_requests else "")),
            ("summarizer", f"{c.summarizer_calls} call{'' if c.summarizer_calls == 1 else 's'} · "
                           f"{c.summarizer_input_tokens:,} in · "
                           f"{c.summarizer_output_tokens:,} out · ${c.summarizer_cost_usd:.4f}"),
            ("compactions", joined(c.compactions) + (f" · by level: {joined(c.compactions_by_level)}"
                                                     if c.compactions_by_level else "")),
            ("L3 (nuclear)", str(c.l3_count)),
            ("rejections", joined(c.rejections)),
            ("recoveries", f"{c.recoveries_ok} ok · {c.recoveries_failed} failed"),
            ("bytes saved", format_size(c.bytes_saved)),
        ]
        await self.chat.add_report("cost — this session", rows)

    async def _cmd_context(self, _arg: str) -> None:
        from app.engine.payload import describe_floor

        r = self.engine.context_report()
        share = f" ({r['predicted_bytes'] / r['effective_cap']:.0%} of the cap)" if r["effective_cap"] else ""
        if r["effective_cap"]:
            cap = f"{format_size(r['effective_cap'])} — {r['cap_source']}" + (f": {r['cap_detail']}"
                                                                               if r.get("cap_detail") else "")
        else:
            cap = (f"none known — a request over {format_size(self.settings.no_cap_warn_bytes)} warns once; "
                   f"/cap SIZE or max_payload sets one, a gateway's rejection teaches one")
        rows = [
            ("next request", f"{format_size(r['predicted_bytes'])}{share}"),
            ("cap", cap),
            ("tokens", f"≈{r['estimated_tokens']:,} of a {r['context_window']:,}-token window "
                       f"({r['bytes_per_token']:.2f} bytes/token)"),
            ("messages", f"{r['messages_in_view']:,} in the view · {r['messages_in_master']:,} in the master log"),
            ("views", f"{r['views_stacked']} stacked (/rewind compact pops one)"),
            ("floor", f"{format_size(r['floor_bytes'])} ({describe_floor(r['floor_parts'])})"),
        ]
        if r.get("context_engine") == "provider":
            rows.append(("engine", f"provider — {r['native_compaction']}, from {r['compact_threshold']:,} tokens"
                         if r.get("native_compaction") else "provider — none on this route: the local pipeline"))
            cleared = r.get("provider_edits") or {}
            if cleared.get("edits"):
                rows.append(("provider cleared", f"{cleared['edits']:,} edits · {cleared['tool_results']:,} tool "
                             f"results ({cleared['stubbed']:,} stubbed here, archived) · {cleared['tokens']:,} "
                             f"tokens · {cleared['expected_rebuilds']:,} cache rebuilds expected"))
        await self.chat.add_report("context — the next request", rows)

    def _cmd_cap_reset(self, _arg: str) -> None:
        self.engine.reset_cap()

    async def _cmd_cap_set(self, size: str) -> None:
        try:
            cap = parse_size(size)
        except (SizeError, ValueError) as exc:
            self.notify(f"/cap {size}: {exc}", severity="warning")
            return
        engine = self.engine
        sources = {**engine.settings.sources, "max_payload": "/cap (this session only)"}
        engine.settings = engine.settings.with_overrides(max_payload=cap, sources=sources)
        await self.chat.add_notice(f"request body cap set to {format_size(cap)} for this session (not saved: put "
                                   f"max_payload in config.toml to keep it)", code="cap", title="cap")
        engine.view_changed("cap")

    def slash_arguments(self, command: str) -> list[tuple[str, str]]:
        """What `/model`, `/recall` and `/mcp` can take, for the prompt's completion list."""
        if command == "/mcp":
            mcp = self.engine.mcp if self.engine is not None else None
            return [(f"restart {s.name}", f"{s.state} · {len(s.tools)} tools") for s in (mcp.statuses() if mcp else [])]
        if command == "/model":
            current = self.engine.route.name if self.engine else ""
            return [(name, f"{route.provider} · {route.model}" + (" (in use)" if name == current else ""))
                    for name, route in sorted(self.settings.routes.items())]
        if command == "/recall" and self.engine is not None:
            # Read once per view (a compaction, which archives, commits a new one), not per keystroke.
            session = self.engine.session
            cached_for, rows = self._recall_keys
            if cached_for != (session.id, session.view.id):
                rows = [(key, display_line(f"{reason} · {format_size(size)} · {' '.join(head.split())[:40]}"))
                        for key, reason, size, head in session.store.archive_keys(session.id)]
                self._recall_keys = (session.id, session.view.id), rows
            return rows
        return []

    def _cmd_recall(self, key: str) -> None:
        self.engine.recall_into_view(key)

    async def _cmd_model(self, name: str, model: str | None = None) -> None:
        """`/model` opens the picker; `/model ROUTE` continues on that route (with the model /model chose
        for it); the picker's choice comes back here with its model, and is remembered for the route."""
        from app.engine.bootstrap import choose_route, with_model

        if self.engine is None:  # the session could not open: try again on this route
            self._reopen(route_name=name or None)
            return
        if not name:
            self._open_model_picker()
            return
        try:
            choice = await asyncio.to_thread(choose_route, self.settings, name)
        except ConfigError as exc:
            await self.chat.add_notice(str(exc), level="error", code="model")
            return
        if model is not None:
            configured = choice.route.model
            try:
                self.state.choose_model(choice.route.name, None if model == configured else model)
            except OSError as exc:
                self.notify(f"could not remember the model: {exc}", severity="warning")
        choice = with_model(choice, self.state)
        from app.providers.base import make_provider

        provider = make_provider(choice.route, self.settings, choice.api_key)
        await self.engine.switch_route(choice.route, provider)  # its notice says so in the chat
        bind = getattr(self.inspector, "bind_engine", None)
        if callable(bind):
            bind(self.engine)
        self._update_topbar()
        prewarm_in_background(choice.route.provider)

    def _open_model_picker(self) -> None:
        from app.engine.model_list import list_route_models
        from app.secrets import get_api_key
        from app.ui.screens.models import ModelScreen

        routes = list(self.settings.routes.values()) or [self.engine.route]
        settings = self.settings

        async def load(route):
            if route.provider in ("anthropic", "openai"):
                key = (await asyncio.to_thread(get_api_key, route.provider, route.api_key_env)).value
            else:
                key = None
            if route.name == self.engine.route.name and self.choice is not None:
                key = key or self.choice.api_key
            return await list_route_models(route, settings, key, timeout=settings.model_list_timeout)

        current = (self.engine.route.name, self.engine.route.model)
        self.push_screen(ModelScreen(routes, current=current, load=load), callback=self._model_picked)

    def _model_picked(self, picked: tuple[str, str] | None) -> None:
        if not picked or self.engine is None:
            return
        route_name, model = picked
        if (route_name, model) == (self.engine.route.name, self.engine.route.model):
            return
        self.run_worker(self._cmd_model(route_name, model), group="command", exit_on_error=False,
                        name="command model")

    def _cmd_sessions(self, _arg: str) -> None:
        from app.engine.session_admin import delete_session
        from app.ui.screens.sessions import SessionsActions, SessionsScreen

        if self.store is None:
            from app.store import Store

            self.store = Store()
        store = self.store
        current = self.engine.session.id if self.engine else None

        def rename(session_id: str, title: str) -> str:
            if self.engine is not None and session_id == self.engine.session.id:
                title = self.engine.session.rename(title)
                self._update_topbar()
                return title
            from app.engine.session import rename_session

            return rename_session(store, session_id, title)

        actions = SessionsActions(search=store.search_sessions, rename=rename,
                                  delete=lambda session_id: delete_session(store, session_id, current_id=current))
        self.push_screen(SessionsScreen(store.list_sessions(), current_id=current, now=self.clock, actions=actions),
                         callback=self._resume_selected)

    def _resume_selected(self, session_id: str | None) -> None:
        if not session_id or (self.engine is not None and session_id == self.engine.session.id):
            return
        self._switch_session(session_id)

    def _cmd_new(self, _arg: str) -> None:
        self._switch_session(None)

    async def _cmd_quit(self, _arg: str) -> None:
        await self.action_quit()

    async def _cmd_rename(self, title: str) -> None:
        try:
            title = self.engine.session.rename(title)
        except ValueError as exc:
            await self.chat.add_notice(str(exc), level="warn", code="rename", title="session")
            return
        self._update_topbar()
        await self.chat.add_notice(f"this session is now “{title}”", code="rename", title="session")

    @work(group="session-switch", exclusive=True, exit_on_error=False, name="switch session")
    async def _switch_session(self, session_id: str | None) -> None:
        """Resume `session_id` here, or (None: /new, /clear) start a fresh session on the same route."""
        old = self.engine
        route_name = model = None
        previous = ""
        if old is not None:
            if session_id is None:  # stay on the route and model in use (an implicit route has no config name)
                route_name = old.route.name if old.route.name in self.settings.routes else self.route_name
                model = old.route.model
                previous = f"“{old.session.title}” ({old.session.id})" if old.session.title else old.session.id
            if self._unsubscribe:
                self._unsubscribe()
            self.engine = None
            with contextlib.suppress(Exception):
                await old.close("resume" if session_id else "clear")
        elif session_id is None:
            route_name, model = self.route_name, self.model_override
        await self.chat.clear_all()
        self.engine_ready.clear()
        self.resume, self.continue_ = session_id, False
        self._files_stale = True
        if previous:
            await self.chat.add_notice(f"new session — the previous one, {previous}, stays resumable (F5, or "
                                       f"bulkhead --resume {old.session.id})", code="new", title="session")
        self._reopen(route_name=route_name, model=model)

    async def _cmd_export(self, _arg: str) -> None:
        from app.export import to_markdown

        session = self.engine.session
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
        written = []
        md_path = session.folder / f"export-{stamp}.md"
        text = to_markdown(session)
        await asyncio.to_thread(atomic_write, md_path, text, 0o600)
        written.append(md_path)
        if module_available("app.har"):
            har_path = await self._write_har(session, session.folder / f"export-{stamp}.har")
            if har_path is not None:
                written.append(har_path)
        names = " and ".join(str(p) for p in written)
        self.notify(f"Exported to {names}", title="export", timeout=8)
        await self.chat.add_notice(f"exported to {names}", code="export", title="export")

    async def _write_har(self, session, path: Path) -> Path | None:
        """The session's requests as HAR 1.2 (`app.har`: redacted headers, bodies cut to har_body_limit)."""
        from app.textsafe import json_text

        try:
            from app.har import to_har

            data = await asyncio.to_thread(to_har, session, body_limit=self.settings.har_body_limit)
            text = json_text(data, indent=1)
            await asyncio.to_thread(atomic_write, path, text, 0o600)
            return path
        except Exception as exc:  # noqa: BLE001 - a HAR failure must not lose the Markdown export
            self.notify(f"HAR export failed: {exc}", severity="error")
        return None

    def _cmd_export_har(self, _arg: str) -> None:
        async def run() -> None:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
            path = await self._write_har(self.engine.session, self.engine.session.folder / f"requests-{stamp}.har")
            if path is not None:
                self.notify(f"HAR written to {path}", title="export", timeout=8)
                await self.chat.add_notice(f"requests exported as HAR to {path}", code="export", title="export")

        self.run_worker(run(), group="command", exit_on_error=False, name="export HAR")

    def _cmd_probe(self, _arg: str) -> None:
        self.running = "probe"
        self.busy = True
        self._probe()

    @work(group="turn", exclusive=True, exit_on_error=False, name="probe")
    async def _probe(self) -> None:
        """`bulkhead probe` for the session's route, with the defaults of the command (1 KB … 32 MB, 1 KB)."""
        from app.engine.retry import RetryPolicy
        from app.engine.user_rules import build_rules
        from app.probe import Probe, ProbeAnswer, Prober, max_probes_for, timed

        engine = self.engine
        provider = engine.provider
        low, high, precision = 1024, 32 * 1024 * 1024, 1024
        try:
            await self.chat.add_notice(f"probing route {engine.route.name} from {format_size(low)} to "
                                       f"{format_size(high)} (≈{max_probes_for(low, high, precision)} requests) "
                                       f"using {provider.probe_method or 'the provider'}", code="probe", title="probe")

            async def send(size: int) -> ProbeAnswer:
                async def call() -> tuple[int, int | None]:
                    reply = await provider.probe(size)
                    return reply.status, reply.actual_bytes

                return await timed(call, size)

            def on_probe(probe: Probe) -> None:
                self.prompt_box.busy_text = f"probe {probe.number}: {format_size(probe.size)} → {probe.verdict}"

            prober = Prober(send, drop_threshold=self.settings.drop_payload_min_bytes,
                            retry_policy=RetryPolicy.from_settings(self.settings), on_probe=on_probe, max_requests=40,
                            user_rules=build_rules(self.settings.classifier_rules))
            result = await prober.find(low, high, precision)
        finally:
            self.busy = False
            self.running = ""
        rows = [(f"#{p.number}", f"{format_size(p.size)} → {p.verdict}" + (f" ({p.status})" if p.status else "")
                 + (f" {p.kind}" if p.kind else "")) for p in result.probes]
        rows.append(("cap", format_size(result.cap_bytes) if result.cap_bytes else "none found"))
        if result.kind:
            rows.append(("how it says no", f"{result.kind}: " + "; ".join(result.evidence[:3])))
        if result.suggestion:
            rows.append(("suggestion", f"max_payload = \"{format_size(result.suggestion)}\" "
                                       f"(or `bulkhead probe --save` to remember it)"))
        rows.append(("verdict", result.message or ("conclusive" if result.conclusive else "inconclusive")))
        await self.chat.add_report(f"probe — route {engine.route.name}", rows)

    def _cmd_help(self, _arg: str) -> None:
        self.action_help()

    def _cmd_toggle_inspector(self, _arg: str) -> None:
        self.action_toggle_inspector()

    def _cmd_widen_inspector(self, _arg: str) -> None:
        self.action_widen_inspector()

    def _cmd_jump_latest(self, _arg: str) -> None:
        self.action_jump_latest()

    def _cmd_copy_last(self, _arg: str) -> None:
        self.copy(self.chat_last_answer(), "the last answer")

    # -- toasts ---------------------------------------------------------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
        """Every toast (widgets' `notify` lands here): its words may quote a provider, a file or an
        exception, so they are made safe and never parsed as markup (`[@click=…]` stays text)."""
        super().notify(display(str(message)), title=display_line(str(title)), severity=severity, timeout=timeout,
                       markup=False)

    # -- copy ---------------------------------------------------------------------------------------------------
    def copy(self, text: str, what: str) -> None:
        """OSC 52 now, the system clipboard in a thread, then one honest toast."""
        osc52 = False
        error = ""
        try:
            self.copy_to_clipboard(text)
            osc52 = not self.is_headless
        except Exception as exc:  # noqa: BLE001
            error = str(exc)
        self._system_copy(text, what, osc52, error)

    @work(thread=True, group="clipboard", exit_on_error=False, name="clipboard")
    def _system_copy(self, text: str, what: str, osc52: bool, error: str) -> None:
        tool, tool_error = system_copy(text)
        result = CopyResult(osc52=osc52, system_tool=tool, error=tool_error or error)
        self.call_from_thread(self._copied, result, what)

    def _copied(self, result: CopyResult, what: str) -> None:
        self.last_copy = result
        self.notify(result.describe(what), title="copy", severity="information" if result.ok else "error",
                    timeout=6)

    @on(Chat.CopyItem)
    def _on_copy_item(self, event: Chat.CopyItem) -> None:
        self.copy(event.text, event.what)

    # -- the inspector's requests --------------------------------------------------------------------------------
    def on_copy_requested(self, message: Any) -> None:
        self.copy(message.text, getattr(message, "what", "") or "the text")

    def on_archive_recall_requested(self, message: Any) -> None:
        if self.engine is None:
            return
        if self.busy:
            self.notify("A turn is running — recall after it (Esc cancels it).", severity="warning")
            return
        self.engine.recall_into_view(message.key)

    def on_rewind_requested(self, message: Any) -> None:
        if self.engine is not None and not self.busy:
            self.run_command("rewind")

    # -- errors --------------------------------------------------------------------------------------------------
    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if event.state != WorkerState.ERROR:
            return
        error = worker.error
        name = worker.name or "task"
        if worker.group in ("turn",):
            self.busy = False
            self.running = ""
        if worker.group == "engine":
            await self._engine_failed(error)
            return
        text = f"{name} failed: {type(error).__name__}: {error}"
        from app.store import StoreError

        if isinstance(error, ConfigError | StoreError):  # worded for the user already: what happened, what to do
            text = f"{error}"
        self.notify(text[:300], title="error", severity="error", timeout=10)
        with contextlib.suppress(Exception):
            await self.chat.add_notice(text + "  (c in the chat copies this)", level="error", code="error",
                                       title="error")

    async def _engine_failed(self, error: BaseException) -> None:
        """The session could not open (a route without a key, `--resume` of an unknown id, a database
        that cannot be read): say why and what to do — never wait in silence."""
        from app.engine.session import SessionNotFound

        if isinstance(error, SessionNotFound):
            self.resume, self.continue_ = None, False  # /model then opens a new session on that route
        reason = str(error) if isinstance(error, ConfigError | SessionNotFound) else f"{type(error).__name__}: {error}"
        self.open_error = reason
        self._q("#topbar", Static).update("bulkhead · no session — the session could not open (see the chat)")
        routes = ", ".join(sorted(self.settings.routes)) or "none configured"
        self._return_waiting()
        with contextlib.suppress(NoMatches):
            await self.chat.add_notice(
                f"The session could not open: {reason}\nWhat to do: fix it and /model ROUTE (routes: {routes}) to "
                f"open it on a route, /sessions to open another session, or Ctrl+Q to quit (exit code 2). "
                f"What you typed stays in the prompt.", level="error", code="session", title="no session")

    def _reopen(self, *, route_name: str | None, model: str | None = None) -> None:
        self.open_error = ""
        self._q("#topbar", Static).update("bulkhead · opening the session…")
        self._open_engine(resume=self.resume, continue_=self.continue_, route_name=route_name, model=model)

    async def action_quit(self) -> None:
        if self._quitting:
            return
        self._quitting = True  # from here engine events and input are dropped
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.workers.cancel_group(self, "turn")
        engine = self.engine
        if engine is not None:
            self.exit_session = (engine.session.id, len(engine.session.master))  # for the exit hint
            self.engine = None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(engine.close("exit"), timeout=5)
        code = 2 if engine is None and self.open_error else 0  # no session is open: exit 2, as -p does
        self.exit(code, return_code=code)
