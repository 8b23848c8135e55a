"""The bulkhead App: the chat beside the inspector, driven by the engine's events.

    app = BulkheadApp(settings, route_name=None, resume=None, continue_=False)
    app.run()

The first frame paints before anything slow happens: the engine (database, session, route,
key lookup) is opened in a thread worker, and the provider SDK is imported in a daemon thread
(quitting never waits for that import). The engine's events reach the widgets as `EngineEvent`
messages, in order: the chat renders them, the inspector's panels react to them; once the app is
quitting they are dropped. Every I/O path is a named worker with one error handler, so a failure
is a notice or a toast, never a traceback on the screen.
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
from app.engine.events import CompactionPhase, Event, SessionStarted, ViewChanged
from app.sizes import SizeError, format_size, parse_size
from app.state import State
from app.textsafe import display_line
from app.ui.chat import Chat
from app.ui.chat_items import ToolBlock
from app.ui.clipboard import CopyResult, system_copy
from app.ui.commands import BY_ID, BulkheadCommands, SlashError, module_available, parse_slash
from app.ui.messages import EngineEvent
from app.ui.prompt import PromptArea, PromptBox, PromptHistory, history_path

PANEL_KEYS = 7  # ctrl+1 … ctrl+7 (alt+1 … alt+7 where ctrl+digit never arrives)
DEFAULT_PANELS = ("payload", "ladder", "compaction", "archive", "requests", "hooks", "cost")
SDK_MODULES = {"anthropic": "anthropic", "lab": "anthropic", "openai": "openai", "bedrock": "boto3"}
NARROW_COLUMNS = 110  # a terminal narrower than this starts with the inspector hidden (F2 shows it)
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
        *(Binding(f"ctrl+{n},alt+{n}", f"panel({n})", f"Panel {n}", show=False,
                  tooltip=f"Show and focus inspector panel {n}", id=f"app.panel{n}") for n in range(1, PANEL_KEYS + 1)),
    ]

    busy: reactive[bool] = reactive(False, init=False)

    def __init__(self, settings: Settings, *, route_name: str | None = None, resume: str | None = None,
                 continue_: bool = False, workspace: str | Path | None = None, state: State | None = None,
                 store=None, clock: Callable[[], float] = time.time, keymap: dict[str, str] | None = None,
                 cursor_blink: bool = True, inspector_factory: Callable[[], Widget] | None = None,
                 ready_notices: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.settings = settings
        self.route_name = route_name
        self.resume = resume
        self.continue_ = continue_
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
        self.last_copy: CopyResult | None = None
        self.engine_ready = asyncio.Event()
        self.custom_commands: list = []  # app.engine.custom_commands.CustomCommand, from Markdown files
        self._command_problems: list[str] = []

    # -- layout ---------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("bulkhead · opening the session…", id="topbar", markup=False)
        with Horizontal(id="main"):
            with Vertical(id="chat-column"):
                yield Chat(id="chat")
                yield Static("▼ new output below — Ctrl+End jumps to it", id="new-output", markup=False)
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
        prompt.slash_extra = self.custom_completions
        prompt.focus()
        self._q("#new-output").display = False
        self._q("#completions").display = False
        self._q("#busy").display = False
        self._open_engine(resume=self.resume, continue_=self.continue_, route_name=self.route_name)

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
        """User key overrides: the `[keys]` table of config.toml (binding id → key)."""
        keymap = self.keymap_overrides if self.keymap_overrides is not None else dict(self.settings.keys)
        if keymap:
            self.set_keymap(keymap)

    # -- the engine -------------------------------------------------------------------------------------------
    @work(thread=True, group="engine", exclusive=True, exit_on_error=False, name="open engine")
    def _open_engine(self, *, resume: str | None, continue_: bool, route_name: str | None) -> None:
        from app.engine.bootstrap import open_engine

        engine, choice, resumed = open_engine(self.settings, route_name=route_name, resume=resume,
                                              continue_=continue_, workspace=self.workspace,
                                              approver=self.approve_tool, store=self.store, state=self.state)
        prewarm_in_background(choice.route.provider)
        self._command_problems = self.refresh_custom_commands()
        self.call_from_thread(self._engine_opened, engine, choice, resumed)

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
        self._update_topbar()
        self._start_engine(resumed)

    @work(group="engine-start", exit_on_error=False, name="start engine")
    async def _start_engine(self, resumed: bool) -> None:
        engine = self.engine
        await engine.start(resumed=resumed)
        self.engine_ready.set()
        self.refresh_bindings()

    def _on_bus(self, event: Event) -> None:
        if not (self._quitting or self._exit):
            self.post_message(EngineEvent(event))

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
        elif isinstance(event, SessionStarted | ViewChanged):
            self._update_topbar()

    def _update_topbar(self) -> None:
        engine = self.engine
        if engine is None:
            return
        session, route = engine.session, engine.route
        lab = " · lab (offline)" if route.provider == "lab" else ""
        title = f" · {session.title}" if session.title else ""
        self._q("#topbar", Static).update(f"bulkhead · {route.name} ({route.model}){lab}{title}")

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
        text = event.text.strip()
        if text.startswith("#") and "\n" not in text:  # `# always run make check`: remember it (as Claude Code)
            event.prompt.submit_done()
            self.run_command("memory", text[1:].strip())
            return
        if text.startswith("/") and not text.startswith("//"):
            try:
                action_id, arg = parse_slash(text)
            except SlashError as exc:
                custom = self.custom_command(text)
                if custom is not None:
                    event.prompt.submit_done()
                    self.run_custom(custom, text.partition(" ")[2])
                    return
                self.notify(str(exc), severity="warning")
                return
            event.prompt.submit_done()
            self.run_command(action_id, arg)
            return
        if self.engine is None:
            self.notify("The session is still opening — one moment.", severity="warning")
            return
        if self.busy:
            self.notify("A turn is running — Esc cancels it; your prompt is kept.", severity="warning")
            return
        event.prompt.submit_done()
        self.send(text[1:] if text.startswith(("//", "\\#")) else event.text)

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
        if result.outcome == "failed":
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
        self.post_message(ApprovalAsked(name, args, why, future))
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

    @on(ToolBlock.Resolved)
    def _on_resolved(self, event: ToolBlock.Resolved) -> None:
        with contextlib.suppress(NoMatches):
            if self.chat.pending_approval() is None:
                self.prompt.focus()

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

    def action_toggle_inspector(self) -> None:
        self.toggle_class("-hide-inspector")

    def action_widen_inspector(self) -> None:
        self.remove_class("-hide-inspector")
        self.toggle_class("-wide-inspector")
        if hasattr(self.inspector, "wide"):
            self.inspector.wide = self.has_class("-wide-inspector")

    def action_panel(self, number: int) -> None:
        inspector = self.inspector
        names = tuple(getattr(inspector, "PANELS", ()) or getattr(inspector, "panel_names", ()) or DEFAULT_PANELS)
        names = tuple(getattr(n, "NAME", n) for n in names)
        if not 1 <= number <= len(names):
            return
        self.remove_class("-hide-inspector")
        show = getattr(inspector, "show_panel", None)
        if callable(show):
            show(names[number - 1])

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

    def run_command(self, action_id: str, arg: str = "") -> None:
        """Run one action of the table (slash command, palette or key), or say why it cannot run now."""
        action = BY_ID[action_id]
        reason = action.why_not(self)
        if reason:
            self.notify(f"{action.title}: {reason}", severity="warning")
            return
        handler = getattr(self, f"_cmd_{action_id}")
        result = handler(arg)
        if asyncio.iscoroutine(result):
            self.run_worker(result, group="command", exit_on_error=False, name=f"command {action_id}")

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

    def run_custom(self, command, arguments: str) -> None:
        """Send a custom command's prompt (its file's text, `$ARGUMENTS` filled in)."""
        reason = "the session is still opening" if self.engine is None else (
            "a turn is running (Esc cancels it)" if self.busy else "")
        if reason:
            self.notify(f"{command.slash}: {reason}", severity="warning")
            return
        self.send(command.expand(arguments))

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
            ("summarizer", f"{c.summarizer_calls} calls · {c.summarizer_input_tokens:,} in · "
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
        cap = format_size(r["effective_cap"]) if r["effective_cap"] else "none known"
        share = f" ({r['predicted_bytes'] / r['effective_cap']:.0%} of the cap)" if r["effective_cap"] else ""
        rows = [
            ("next request", f"{format_size(r['predicted_bytes'])}{share}"),
            ("cap", f"{cap} — {r['cap_source']}" + (f": {r['cap_detail']}" if r.get("cap_detail") else "")),
            ("tokens", f"≈{r['estimated_tokens']:,} of a {r['context_window']:,}-token window "
                       f"({r['bytes_per_token']:.2f} bytes/token)"),
            ("messages", f"{r['messages_in_view']:,} in the view · {r['messages_in_master']:,} in the master log"),
            ("views", f"{r['views_stacked']} stacked (/rewind compact pops one)"),
            ("floor", f"{format_size(r['floor_bytes'])} ({describe_floor(r['floor_parts'])})"),
        ]
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
        """What `/model` and `/recall` can take, for the prompt's completion list."""
        if command == "/model":
            current = self.engine.route.name if self.engine else ""
            return [(name, f"{route.provider} · {route.model}" + (" (in use)" if name == current else ""))
                    for name, route in sorted(self.settings.routes.items())]
        if command == "/recall" and self.engine is not None:
            # Read once per view (a compaction, which archives, commits a new one), not per keystroke.
            session = self.engine.session
            cached_for, rows = self._recall_keys
            if cached_for != (session.id, session.view.id):
                rows = [(key, f"{reason} · {format_size(size)} · {' '.join(head.split())[:40]}")
                        for key, reason, size, head in session.store.archive_keys(session.id)]
                self._recall_keys = (session.id, session.view.id), rows
            return rows
        return []

    def _cmd_recall(self, key: str) -> None:
        self.engine.recall_into_view(key)

    async def _cmd_model(self, name: str) -> None:
        from app.engine.bootstrap import choose_route

        if not name:
            routes = ", ".join(sorted(self.settings.routes)) or "none"
            await self.chat.add_notice(f"route in use: {self.engine.route.name}; configured: {routes} — /model ROUTE",
                                       code="model")
            return
        try:
            choice = await asyncio.to_thread(choose_route, self.settings, name)
        except ConfigError as exc:
            await self.chat.add_notice(str(exc), level="error", code="model")
            return
        from app.providers.base import make_provider

        provider = make_provider(choice.route, self.settings, choice.api_key)
        await self.engine.switch_route(choice.route, provider)  # its notice says so in the chat
        bind = getattr(self.inspector, "bind_engine", None)
        if callable(bind):
            bind(self.engine)
        self._update_topbar()
        prewarm_in_background(choice.route.provider)

    def _cmd_sessions(self, _arg: str) -> None:
        from app.ui.screens.sessions import SessionsScreen

        if self.store is None:
            from app.store import Store

            self.store = Store()
        current = self.engine.session.id if self.engine else None
        self.push_screen(SessionsScreen(self.store.list_sessions(), current_id=current, now=self.clock),
                         callback=self._resume_selected)

    def _resume_selected(self, session_id: str | None) -> None:
        if not session_id or (self.engine is not None and session_id == self.engine.session.id):
            return
        self._switch_session(session_id)

    @work(group="session-switch", exclusive=True, exit_on_error=False, name="switch session")
    async def _switch_session(self, session_id: str) -> None:
        old = self.engine
        if old is not None:
            if self._unsubscribe:
                self._unsubscribe()
            self.engine = None
            with contextlib.suppress(Exception):
                await old.close("resume")
        await self.chat.clear_all()
        self.engine_ready.clear()
        self._open_engine(resume=session_id, continue_=False, route_name=None)

    async def _cmd_export(self, _arg: str) -> None:
        from app.export import to_markdown

        session = self.engine.session
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.clock()))
        written = []
        md_path = session.folder / f"export-{stamp}.md"
        text = to_markdown(session)
        await asyncio.to_thread(md_path.write_text, text, encoding="utf-8")
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
        import json

        try:
            from app.har import to_har

            data = await asyncio.to_thread(to_har, session, body_limit=self.settings.har_body_limit)
            text = json.dumps(data, ensure_ascii=False, indent=1)
            await asyncio.to_thread(path.write_text, text, encoding="utf-8")
            path.chmod(0o600)
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
                            retry_policy=RetryPolicy.from_settings(self.settings), on_probe=on_probe, max_requests=40)
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
        text = f"{name} failed: {type(error).__name__}: {error}"
        if isinstance(error, ConfigError):
            text = f"{error}"
        self.notify(text[:300], title="error", severity="error", timeout=10)
        with contextlib.suppress(Exception):
            await self.chat.add_notice(text + "  (c in the chat copies this)", level="error", code="error",
                                       title="error")

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
            self.engine = None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(engine.close("exit"), timeout=5)
        self.exit(0)
