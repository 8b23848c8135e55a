"""The app's side of a turn: the prompt's text becomes a message, a slash command or a custom command;
one turn runs at a time (`activity`); Esc and Ctrl+C cancel it; tools ask for approval in the chat.

Nothing typed is lost: what cannot run now goes back into the prompt, and a message sent while the
session opens waits and is sent when it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.actions import SkipAction
from textual.css.query import NoMatches
from textual.message import Message
from textual.worker import Worker

from app.textsafe import display, display_data, display_line
from app.ui.actions import ACTIONS, BY_ID, handler
from app.ui.app_host import AppMixin
from app.ui.bindings import BLOCKED_KEY_WORDS
from app.ui.engine_link import read_only_notice
from app.ui.focus_rules import focus_in
from app.ui.prompt import PromptArea
from app.ui.slash import SlashError, parse_slash

if TYPE_CHECKING:
    from app.engine.api.ui_session import UiSession
    from app.model.events import ApprovalRequested

INTERRUPT_QUIT_WINDOW_S = 2.0  # a second Ctrl+C on an empty, idle prompt within this quits


class ApprovalAsked(Message):
    """The session asks about tool call `call_id`; the chat's block of that call resolves `future`, whose
    answer goes to `session.approve(call_id, …)` (a question about no tool call of the model's — an image or
    a restore outside the workspace — gets a block of its own)."""

    def __init__(
        self,
        call_id: str,
        name: str,
        args: dict,
        why: str,
        future: asyncio.Future,
        preview=None,
        remember: str = "",
        no_always: str = "",
    ) -> None:
        super().__init__()
        self.call_id = call_id
        self.remember = remember  # the allow rule "always" keeps ("" when it is not offered)
        self.no_always = no_always  # why "always" is not offered
        self.name = name
        self.args = args
        self.why = why
        self.future = future
        self.preview = preview  # app.tools.change_preview.ChangePreview: what an edit would change


class TurnControl(AppMixin):
    """Mixed into `BulkheadApp`: prompts, commands, turns, cancelling and approvals."""

    session: UiSession | None
    _last_interrupt: float
    _approvals: dict[str, asyncio.Future]

    # -- the prompt -------------------------------------------------------------------------------------------
    def on_prompt_area_submitted(self, event: PromptArea.Submitted) -> None:
        """The prompt has handed over its text: a message, a `#` memory line, or a slash command."""
        text = event.text.strip()
        if (
            text.startswith("#") and "\n" not in text
        ):  # `# always run make check`: remember it (as Claude Code)
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
                self.command_notice(str(exc), level="warn")
                return
            if not self.run_command(action_id, arg, typed=True):
                event.prompt.restore(event.text)
            return
        message = text[1:] if text.startswith(("//", "\\#")) else event.text  # `//x`, `\#x`: sent as typed
        if self.session is None:
            if self.open_error:
                event.prompt.restore(event.text)
                self.command_notice(
                    f"no session is open ({self.open_error}) — /model ROUTE opens one, /sessions "
                    f"another; your message is back in the prompt",
                    level="error",
                    code="session",
                )
                return
            self._waiting.append(message)
            self._show_waiting()
            return
        info = self.session.info()
        if info.read_only:
            event.prompt.restore(event.text)
            self.notify(read_only_notice(info.id), severity="warning", timeout=8)
            return
        if self.busy:
            event.prompt.restore(event.text)
            self.notify("A turn is running — Esc cancels it; your prompt is kept.", severity="warning")
            return
        self.send(message)

    def _show_waiting(self) -> None:
        count = len(self._waiting)
        self.prompt_box.waiting = (
            f"opening the session… {'your message is' if count == 1 else f'{count} messages are'}"
            f" sent as soon as it is ready"
            if count
            else ""
        )

    def send_waiting(self) -> None:
        """Send the next message typed while the session was opening (one per turn, in order)."""
        if not self._waiting or self.session is None or self.busy or self.quitting:
            return
        message = self._waiting.pop(0)
        self._show_waiting()
        self.send(message)

    def return_waiting(self) -> None:
        """The session did not open: the messages that waited go back into the prompt, unsent."""
        if self._waiting:
            prompt = self.prompt
            for message in reversed(self._waiting):
                prompt.restore(message)
            self._waiting.clear()
        self._show_waiting()

    # -- turns ------------------------------------------------------------------------------------------------
    def watch_activity(self, activity: str) -> None:
        if not self.screen_stack or not self.screen_stack[0].query("#prompt-box"):
            return
        self.prompt_box.busy = bool(activity)
        if activity:
            self.prompt_box.busy_text = "compacting" if activity == "compact" else "thinking"
        self.refresh_bindings()

    def send(self, prompt: str) -> Worker:
        return self.start_turn(prompt)

    def start_turn(self, prompt: str, *, retry: bool = False) -> Worker:
        self.activity = "turn"
        return self._turn(prompt, retry)

    content_blocked = False  # the last turn was refused for its content: F7 (/blocked) is offered

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "command" and parameters[:1] == ("blocked",):
            return self.content_blocked  # the key shows in the footer only after a content block
        return True

    def _content_block_seen(self, blocked: bool) -> None:
        if self.content_blocked != blocked:
            self.content_blocked = blocked
            self.refresh_bindings()

    @work(group="turn", exclusive=True, exit_on_error=False, name="turn")
    async def _turn(self, prompt: str, retry: bool = False) -> None:
        self._content_block_seen(False)
        session = self.session
        assert session is not None  # a turn starts only on an open session
        try:
            result = await (session.retry() if retry else session.submit(prompt))
        except asyncio.CancelledError:
            if not retry and not self._prompt_sent(prompt):  # Esc before it was sent (a hook was running)
                self.prompt.restore(prompt)
            raise
        finally:
            self.activity = ""
            self.drop_approvals()  # the turn is over: no call of it waits any more
            if self._waiting:
                self.call_later(self.send_waiting)
        if result.outcome == "failed" and retry and result.failure is None:  # /retry had nothing to ask again
            self.command_notice(f"/retry: {result.error}", level="warn")
        elif result.outcome == "failed":
            failure = result.failure
            retryable = bool(failure and (failure.recoverable or getattr(failure, "retryable", False)))
            blocked = bool(failure and failure.cause == "content")
            self._content_block_seen(blocked)
            hint = f" — {BLOCKED_KEY_WORDS} finds the refused text" if blocked else ""
            self.notify(
                result.error[:300] + (" — /retry asks again" if retryable else "") + hint,
                title="turn failed",
                severity="error",
                timeout=8,
            )
        elif result.outcome == "partial":
            self.notify(
                "The answer was cut short; it is kept, marked partial — /retry asks again.",
                severity="warning",
            )

    def _prompt_sent(self, prompt: str) -> bool:
        """Is `prompt` in the conversation (Esc came after it was committed)?"""
        session = self.session
        return True if session is None else session.prompt_committed(prompt)

    def action_cancel(self) -> None:
        """Esc: cancel what runs, and come back to the prompt from anywhere on the main screen (the chat, a
        panel, a panel's search box); with the prompt focused and nothing running, the prompt's own Esc."""
        if len(self.screen_stack) > 1 or getattr(self.focused, "keeps_escape", False):
            raise SkipAction()  # Esc then closes the palette / help / sessions screen, or a line being typed
        running = self.busy and self.session is not None
        at_prompt = isinstance(self.focused, PromptArea)
        if not at_prompt:
            with contextlib.suppress(NoMatches):
                self.screen.set_focus(self.prompt)
        if not running:
            if at_prompt:
                raise SkipAction()  # the prompt's own Esc (it closes the completion list)
            return
        if self.session is not None:
            self.session.interrupt_tools()
        if self.activity == "compact" and self.compact_cancel is not None:
            self.compact_cancel.set()
            self.prompt_box.busy_text = "cancelling the compaction"
            return
        self.workers.cancel_group(self, "turn")

    async def action_interrupt(self) -> None:
        """Ctrl+C as in other terminal agents: cancel what runs; else copy the selection, else (in the chat
        or a panel) what its cursor is on, else clear the prompt (↑ brings it back); on an empty, idle prompt a
        second press within 2 s quits."""
        if len(self.screen_stack) > 1:
            raise SkipAction()  # the palette, help or sessions screen handles its own Ctrl+C
        if self.busy and self.session is not None:
            self.action_cancel()
            return
        selected = self.screen.get_selected_text()
        if not selected and isinstance(self.focused, PromptArea):
            selected = self.focused.selected_text
        if selected:
            self.copy(selected, "the selection")
            return
        copy = self.screen.active_bindings.get(
            "alt+c"
        )  # the focused area's copy (the chat's item, a panel's)
        if (
            copy is not None
            and copy.enabled
            and copy.node is not self
            and not isinstance(self.focused, PromptArea)
        ):
            await self.run_action(copy.binding.action, copy.node)  # as the node's own run_action does
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

    # -- approvals --------------------------------------------------------------------------------------------
    def approval_requested(self, event: ApprovalRequested) -> None:
        """The session waits for an answer about one tool call (`ApprovalRequested`): an inline card in the
        block of that call — what an edit would change, and yes, always for this session, always for this
        project (the answer names the rule the session then remembers), no, or no and what to tell the model
        (`app.tools.approval.Denial`) — whose answer goes back by `session.approve(call_id, …)`."""
        session = self.session
        if session is None:
            return
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._approvals[event.call_id] = future
        future.add_done_callback(lambda done: self._approval_answered(session, event.call_id, done))
        self.run_worker(
            self._show_approval(session, event, future),
            group="approval",
            exit_on_error=False,
            name="approval",
        )

    async def _show_approval(
        self, session: UiSession, event: ApprovalRequested, future: asyncio.Future
    ) -> None:
        from app.tools.change_preview import preview_change

        workspace = Path(session.info().workspace)
        try:  # the file is read in a thread: a large one never holds the screen
            preview = await asyncio.to_thread(
                preview_change,
                event.name,
                event.args,
                workspace,
                max_lines=self.settings.approval_preview_lines,
            )
        except Exception:  # a preview that fails leaves the card as it was (arguments shown)
            preview = None
        self.post_message(
            ApprovalAsked(
                event.call_id,
                display(event.name),
                display_data(event.args),
                display(event.why),
                future,
                preview,
                remember=display_line(event.remember),
                no_always=display(event.why_not),
            )
        )

    def _approval_answered(self, session: UiSession, call_id: str, future: asyncio.Future) -> None:
        """The card's answer (True/False, "session"/"project", a Denial) to the session; a card taken away
        (the turn ended, the app quits) denies."""
        self._approvals.pop(call_id, None)
        answer: Any = False if future.cancelled() else future.result()
        from app.engine.api import ANSWERS  # the engine is imported after the first frame
        from app.tools.approval import Denial

        if isinstance(answer, Denial):
            session.approve(call_id, "deny", reason=answer.reason)
        else:
            session.approve(call_id, answer if answer in ANSWERS else bool(answer))

    def drop_approvals(self) -> None:
        """Take away the cards still waiting (their turn ended or was cancelled: nothing waits for them)."""
        for future in list(self._approvals.values()):
            if not future.done():
                future.cancel()
        self._approvals.clear()

    async def on_approval_asked(self, message: ApprovalAsked) -> None:
        if message.future.done():
            return
        try:
            block = await self.chat.ask_approval(
                message.call_id,
                message.name,
                message.args,
                message.why,
                message.future,
                remember=message.remember,
                no_always=message.no_always,
                preview=message.preview,
            )
        except NoMatches:  # quitting
            message.future.cancel()
            return
        if message.future.done():  # answered or cancelled while the card went in
            return
        if block is None:  # the block was pruned or never shown: deny rather than hang
            message.future.set_result(False)
            self.notify(f"{message.name}: could not show the approval prompt; denied", severity="warning")
            return
        self.chat.focus()
        self.prompt_box.busy_text = (
            f"waiting for your approval of {message.name} — y approves, n denies, d denies and says why"
        )
        message.future.add_done_callback(lambda _future: self._approval_over())
        self.refresh_bindings()

    def _approval_over(self) -> None:
        """An approval was answered or cancelled (Esc): the keyboard goes back to the prompt, unless another
        call waits."""
        self.refresh_bindings()
        with contextlib.suppress(NoMatches):
            if self.chat.pending_approval() is None and focus_in(self.chat, self):
                self.screen.set_focus(self.prompt)

    def on_tool_block_resolved(self, event) -> None:
        with contextlib.suppress(NoMatches):
            if self.chat.pending_approval() is None:
                self.prompt.focus()
                if self.busy:
                    self.prompt_box.busy_text = (
                        f"running {event.block.tool_name}" if event.approved else "thinking"
                    )
        self.refresh_bindings()

    # -- commands ---------------------------------------------------------------------------------------------
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
                self.command_notice(f"{action.usage or action.title}: {reason}", level="warn")
            else:
                self.notify(f"{action.title}: {reason}", severity="warning")
            return False
        result = handler(action_id)(self, arg)
        if asyncio.iscoroutine(result):
            self.run_worker(result, group="command", exit_on_error=False, name=f"command {action_id}")
        return True

    def command_notice(self, text: str, *, level: str = "info", code: str = "command") -> None:
        """Feedback on a typed command, kept in the transcript as a notice line (a toast vanishes)."""

        async def add() -> None:
            with contextlib.suppress(NoMatches):
                await self.chat.add_notice(text, level=level, code=code)

        self.run_worker(add(), group="command-notice", exit_on_error=False, name="command notice")

    _command_catalog: Any = None

    def refresh_custom_commands(self) -> list[str]:
        """The Markdown command files, read again when one was added, changed or removed (a stat when not:
        cheap enough for each completion); what was skipped."""
        if self._command_catalog is None or self._command_catalog.workspace != Path(self.workspace):
            from app.engine.api.custom_commands import CommandCatalog

            self._command_catalog = CommandCatalog(
                self.workspace, reserved=[a.slash for a in ACTIONS if a.slash]
            )
        self.custom_commands, problems = self._command_catalog.read()
        return problems

    def custom_completions(self) -> list[tuple[str, str]]:
        self.refresh_custom_commands()  # a file added since the last prompt completes at once
        return [
            (
                command.slash,
                display_line(
                    f"{command.argument_hint + ' — ' if command.argument_hint else ''}"
                    f"{command.description} ({command.source})"
                ),
            )
            for command in self.custom_commands
        ]

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
        reason = (
            "the session is still opening"
            if self.session is None
            else ("a turn is running (Esc cancels it)" if self.busy else "")
        )
        if reason:
            self.notify(f"{command.slash}: {reason} — your command is back in the prompt", severity="warning")
            return False
        self.send(command.expand(arguments))
        return True
