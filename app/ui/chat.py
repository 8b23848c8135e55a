"""The chat pane: engine events in, items out, with explicit follow-the-bottom state.

- One stream per assistant message into ONE widget (`AnswerView`): TextDelta events are
  coalesced on a short timer and appended as one fragment; only the open last Markdown block
  is redrawn per append, finished blocks are drawn once. At the end the whole raw text (kept on
  the item) is parsed once as a document and what changed is redrawn, in slices that never hold
  the event loop for long — `streaming` stays true until that is done.
- Follow-bottom is explicit state (`follow`) carried out by Textual's anchor: while following,
  every layout keeps the end in view, whatever made the content grow (a streamed fragment, a
  block drawn later in a thread, an expanded tool block). Only the user stops it — a wheel, the
  scrollbar, a key that moves up; back at the end (or End / Alt+↓) it follows again. While it
  does not follow, new content below shows the "↓ new output" marker.
- Rendered items are pruned past `RENDER_BUDGET`; the store keeps everything (/export).
- One cursor instead of focusable items: ↑/↓ move it, c copies the item, b a code block,
  Enter folds a tool block, y/n answer an approval.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from textual import events
from textual.app import ScreenStackError
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from app.model.events import (
    AnswerFinished,
    Compaction,
    Event,
    HookRun,
    MessageAdded,
    Notice,
    RecoveryStep,
    Rejection,
    Retry,
    TextDelta,
    ToolApproval,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from app.model.messages import Message as EngineMessage
from app.model.messages import Text as TextPart
from app.model.messages import ToolCall, ToolResult
from app.sizes import format_size
from app.ui.chat_items import AssistantItem, ChatItem, NoticeItem, ReportItem, ToolBlock, UserItem
from app.ui.markdown.widget import AnswerView

FLUSH_INTERVAL_S = 0.05  # coalesce deltas: 20 appends (and re-layouts) a second at most
FOLLOW_ROWS = 2  # "at the bottom" means within this many rows of the end
SHORT_WATCH_S = 0.1  # how often a conversation shorter than the view is checked for having outgrown it
RENDER_BUDGET = 400  # rendered items kept; older ones are pruned from the screen (never from the store)
PRUNE_TO = 300


class Chat(VerticalScroll, can_focus=True):
    """The conversation. Focus it (Ctrl+O) to move between items and copy them."""

    HELP = """\
## Chat

- **↑ / ↓** (or **k / j**): move the cursor between messages
- **c**: copy the message under the cursor · **b**: copy a code block (again for the next one)
- **Enter**: fold or unfold a tool block
- **y / n**: approve or deny the pending tool call · **a** / **p**: approve it and allow the same call
  for the rest of the session / in this project from now on (saved in `.bulkhead/settings.toml`)
- **End** (or **G**): jump to the latest output and follow it · **Home** (or **g**): the top
- **Esc** or **i**: back to the prompt
"""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Previous", show=False, id="chat.previous"),
        Binding("down,j", "cursor(1)", "Next", show=False, id="chat.next"),
        Binding("c", "copy_item", "Copy", tooltip="Copy the message under the cursor", id="chat.copy"),
        Binding("b", "copy_code", "Copy code", tooltip="Copy a code block of the message", id="chat.copy_code"),
        Binding("enter,space", "toggle_item", "Fold", tooltip="Fold or unfold a tool block", id="chat.toggle"),
        Binding("y", "approve(True)", "Approve", tooltip="Approve the pending tool call", id="chat.approve"),
        Binding("n", "approve(False)", "Deny", tooltip="Deny the pending tool call", id="chat.deny"),
        Binding("a", "approve('session')", "Always (session)", id="chat.always_session",
                tooltip="Approve the pending call and allow it for the rest of the session"),
        Binding("p", "approve('project')", "Always (project)", id="chat.always_project",
                tooltip="Approve the pending call and allow it in this project (.bulkhead/settings.toml)"),
        Binding("end,G", "jump_latest", "Latest", show=False, id="chat.latest"),
        Binding("home,g", "jump_top", "Top", show=False, id="chat.top"),
        Binding("escape,i", "leave", "Prompt", show=False, id="chat.leave"),
    ]

    follow: reactive[bool] = reactive(True, init=False)
    new_below: reactive[bool] = reactive(False, init=False)
    cursor: reactive[int] = reactive(-1, init=False)

    class CopyItem(Message):
        def __init__(self, text: str, what: str) -> None:
            super().__init__()
            self.text = text
            self.what = what

    class LeaveChat(Message):
        """The user wants the prompt back."""

    class NewOutputBelow(Message):
        def __init__(self, below: bool) -> None:
            super().__init__()
            self.below = below

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._answer: AssistantItem | None = None
        self._settling: set[AssistantItem] = set()  # finished answers still being drawn
        self._pending: list[str] = []
        self._flush_timer = None
        self._lock = asyncio.Lock()
        self._tools: dict[str, ToolBlock] = {}
        self._code_index: dict[int, int] = {}
        self.pruned = 0
        self._pruned_marker: Static | None = None
        self._released = False  # Textual released the anchor (a scroll that was not a follow)
        self._anchor_check_pending = False
        self._short_watch: Timer | None = None

    # -- reading (tests, copy, the app) ----------------------------------------------------------------
    @property
    def items(self) -> list[ChatItem]:
        return list(self.query_children(ChatItem))

    def answers(self) -> list[AssistantItem]:
        return list(self.query_children(AssistantItem))

    def last_answer(self) -> AssistantItem | None:
        answers = self.answers()
        return answers[-1] if answers else None

    def notices(self, code: str | None = None) -> list[NoticeItem]:
        return [n for n in self.query_children(NoticeItem) if code is None or n.code == code]

    def tool_blocks(self) -> list[ToolBlock]:
        return list(self.query_children(ToolBlock))

    def pending_approval(self) -> ToolBlock | None:
        for block in reversed(self.tool_blocks()):
            if block.pending:
                return block
        return None

    @property
    def streaming(self) -> bool:
        """An answer is streaming, or a finished one is still being drawn."""
        if self._answer is not None:
            return True
        self._settling = {a for a in self._settling if a.is_attached and not a.rendered}
        return bool(self._settling)

    # -- follow the bottom -------------------------------------------------------------------------------
    # Textual's anchor does the following: at every layout of an anchored container its scroll
    # position is set to the end, so no growth can slip past (a scroll_end after the append missed
    # the growth of a block drawn later). Any scroll that is not ours releases the anchor
    # (`release_anchor`, called by Textual); `follow` mirrors the anchor for the marker and the tests.
    def on_mount(self) -> None:
        # While the conversation is shorter than the view it is not anchored (see _anchor_if_scrollable);
        # this cheap check anchors it the moment it outgrows the view, whatever made it grow.
        self._short_watch = self.set_interval(SHORT_WATCH_S, self._check_anchor_after_layout, name="follow watch")
        self._anchor_if_scrollable()

    def at_bottom(self) -> bool:
        return self.max_scroll_y - self.scroll_y <= FOLLOW_ROWS

    def _follow(self) -> None:
        """Follow the end again: anchored, the marker gone."""
        self.follow = True
        self.new_below = False
        self._anchor_if_scrollable()

    def _anchor_if_scrollable(self) -> None:
        """Anchor only content taller than the view: Textual anchors shorter content to the bottom of the
        pane (a negative scroll), and a conversation starts at the top."""
        if self.max_scroll_y > 0:
            if not self.is_anchored or self._released:
                self._released = False
                self.anchor()
            if self._short_watch is not None:
                self._short_watch.pause()
        else:
            if self.is_anchored:
                self.anchor(False)
                self.scroll_to(y=0, animate=False, immediate=True, release_anchor=False)
            if self._short_watch is not None:
                self._short_watch.resume()

    def release_anchor(self) -> None:
        """A scroll that is not a follow (the wheel, the scrollbar, a key, the cursor): once it has
        landed, stop following unless it landed at the end."""
        super().release_anchor()
        self._released = True
        self.call_after_refresh(self._after_release)

    def _after_release(self) -> None:
        if self.max_scroll_y - self.scroll_target_y < 1:  # where the scroll goes (an animated one has not yet)
            self._follow()
        else:
            self.follow = False

    def _before_append(self) -> bool:
        """Decide, before content grows, whether to keep following it."""
        return self.follow or self.at_bottom()

    def _after_append(self, following: bool) -> None:
        if following:
            if not self.follow:
                self._follow()
            if not self._anchor_check_pending:  # once laid out: anchor content that has become taller than the view
                self._anchor_check_pending = True
                self.call_after_refresh(self._check_anchor_after_layout)
        elif self.max_scroll_y > self.scroll_y:
            self.new_below = True

    def _check_anchor_after_layout(self) -> None:
        self._anchor_check_pending = False
        if self.follow and self.is_attached and not getattr(self.app, "quitting", False):
            with contextlib.suppress(ScreenStackError):  # the app is closing under the timer
                self._anchor_if_scrollable()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if not self.follow and self.at_bottom() and self.max_scroll_y - self.scroll_target_y <= FOLLOW_ROWS:
            self._follow()  # the user scrolled back down to the end (or the content shrank)

    def on_resize(self, event: events.Resize) -> None:
        """The chat was resized (the terminal, the inspector shown or hidden): following, anchor it if it is
        now taller than the view; not following, say when there is more below."""
        if self.follow:
            self._anchor_if_scrollable()
        elif self.max_scroll_y - self.scroll_y > FOLLOW_ROWS:
            self.new_below = True

    def action_page_up(self) -> None:
        super().action_page_up()
        self.follow = False

    def on_answer_view_grew(self, event: AnswerView.Grew) -> None:
        """A slice drew more of an answer (after the stream, or a long one)."""
        event.stop()
        self._after_append(self.follow)

    def watch_new_below(self, below: bool) -> None:
        self.post_message(self.NewOutputBelow(below))

    def action_jump_latest(self) -> None:
        self._follow()
        items = self.items
        if items:
            self.cursor = len(items) - 1

    def action_jump_top(self) -> None:
        self.follow = False
        self.scroll_home(animate=False)
        if self.items:
            self.cursor = 0

    # -- mounting -----------------------------------------------------------------------------------------
    async def add(self, *items: ChatItem) -> None:
        following = self._before_append()
        await self.mount_all(items)
        self._settling.update(i for i in items if isinstance(i, AssistantItem) and not i.streaming)
        await self._prune()
        self._after_append(following)

    async def _prune(self) -> None:
        children = self.items
        if len(children) <= RENDER_BUDGET:
            return
        doomed = [c for c in children[: len(children) - PRUNE_TO] if c is not self._answer and
                  not (isinstance(c, ToolBlock) and c.pending)]
        self.pruned += len(doomed)
        for block in doomed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.call_id, None)
        await self.remove_children(doomed)
        label = (f"… {self.pruned:,} earlier items are not shown here (the session keeps them all; "
                 f"/export writes the full transcript)")
        if self._pruned_marker is None:
            self._pruned_marker = Static(label, classes="pruned-marker", markup=False)
            await self.mount(self._pruned_marker, before=0)
        else:
            self._pruned_marker.update(label)
        self.cursor = min(self.cursor, len(self.items) - 1)

    async def add_notice(self, text: str, *, level: str = "info", code: str = "", title: str = "") -> NoticeItem:
        item = NoticeItem(text, level=level, code=code, title=title)
        await self.add(item)
        return item

    async def add_report(self, title: str, rows: list[tuple[str, str]]) -> ReportItem:
        item = ReportItem(title, rows)
        await self.add(item)
        return item

    async def clear_all(self) -> None:
        await self._finish_answer()
        self._settling.clear()
        self._tools.clear()
        self.pruned = 0
        self._pruned_marker = None
        await self.remove_children()
        self.cursor = -1
        self._follow()

    # -- streaming ----------------------------------------------------------------------------------------
    async def _start_answer(self) -> AssistantItem:
        item = AssistantItem(streaming=True)
        self._answer = item
        await self.add(item)
        return item

    def _schedule_flush(self) -> None:
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL_S, self._flush)

    async def _flush(self) -> None:
        self._flush_timer = None
        async with self._lock:
            await self._flush_locked()

    async def _flush_locked(self) -> None:
        if not self._pending or self._answer is None:
            return
        text = "".join(self._pending)
        self._pending.clear()
        following = self._before_append()
        await self._answer.write(text)
        self._after_append(following)

    async def _finish_answer(self, text: str | None = None, *, partial: bool | None = None) -> AssistantItem | None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        async with self._lock:
            answer = self._answer
            if answer is None:
                return None
            await self._flush_locked()
            self._answer = None
            following = self._before_append()
            await answer.finish(text, partial=partial)  # returns at once; the view settles in slices
            self._settling.add(answer)
            self._after_append(following)
            return answer

    # -- engine events ------------------------------------------------------------------------------------
    async def handle(self, event: Event) -> None:
        """Render one engine event (called by the app, in order)."""
        if isinstance(event, TextDelta):
            if self._answer is None:
                await self._start_answer()
            self._pending.append(event.text)
            self._schedule_flush()
        elif isinstance(event, MessageAdded):
            await self._on_message_added(event)
        elif isinstance(event, AnswerFinished):
            finished = await self._finish_answer(partial=event.partial or None)
            if finished is None and event.partial:
                self._mark_last_partial()
        elif isinstance(event, TurnFinished):
            partial = event.outcome in ("partial", "cancelled")
            finished = await self._finish_answer(partial=True if partial else None)
            if finished is None and partial:
                self._mark_last_partial(only_this_turn=True)
            if event.outcome == "cancelled":
                for block in self._tools.values():
                    block.stop()
                kept = finished is not None or self._last_answer_of_turn_is_partial()
                await self.add_notice("turn cancelled — what arrived is kept, marked partial" if kept else
                                      "turn cancelled before any answer arrived", level="warn", code="cancelled")
        elif isinstance(event, ToolCallStarted):
            await self._finish_answer()
            block = ToolBlock(event.call_id, event.name, event.args)
            self._tools[event.call_id] = block
            await self.add(block)
        elif isinstance(event, ToolApproval):
            block = self._tools.get(event.call_id)
            if block is not None:
                block.set_decision(event.decision, event.reason)
        elif isinstance(event, ToolCallFinished):
            block = self._tools.get(event.call_id)
            if block is not None:
                block.set_result(is_error=event.is_error, preview=event.preview, chars=event.chars,
                                 spill_path=event.spill_path)
        elif isinstance(event, Notice):
            await self.add_notice(event.text, level=event.level, code=event.code)
        elif isinstance(event, RecoveryStep):
            sizes = ""
            if event.bytes_before is not None and event.bytes_after is not None:
                sizes = f" ({format_size(event.bytes_before)} → {format_size(event.bytes_after)})"
            level = {"failed": "error", "exhausted": "error", "refused": "error", "not_smaller": "warn"}.get(
                event.outcome, "info")
            await self.add_notice(f"L{event.level} attempt {event.attempt}/{event.max_attempts}: "
                                  f"{event.outcome.replace('_', ' ')}{sizes}" + (f" — {event.reason}" if event.reason else ""),
                                  level=level, code="recovery", title="recovery")
        elif isinstance(event, Compaction):
            await self._on_compaction(event)
        elif isinstance(event, Retry):
            await self.add_notice(f"{event.kind}: retry {event.attempt}/{event.max_attempts} in {event.delay_s:.1f} s"
                                  + (f" — {event.reason}" if event.reason else ""), code="retry", title="retry")
        elif isinstance(event, HookRun) and event.decision in ("error", "timeout"):
            # A broken hook (a crash, invalid JSON, a timeout) must not go unnoticed; blocks show where they act.
            lines = event.output.strip().splitlines()
            detail = f" — {lines[0]}" if lines else ""
            await self.add_notice(f"{event.event} hook `{event.command}`: {event.decision}{detail} (the Hooks "
                                  f"panel shows its output)", level="warn", code="hook", title="hook")
        elif isinstance(event, Rejection):
            size = f", {format_size(event.bytes)}" if event.bytes else ""
            status = f"{event.status} " if event.status else ""
            await self.add_notice(f"{status}{event.kind}{size}: {event.reason}"
                                  + (" — recovering" if event.recoverable else ""),
                                  level="warn" if event.recoverable else "error", code="rejection",
                                  title="rejected" if event.status is not None else "failed")

    async def _on_message_added(self, event: MessageAdded) -> None:
        if event.role == "assistant":
            if self._answer is not None:
                await self._finish_answer(event.text, partial=event.partial)
            elif event.text:
                await self.add(AssistantItem(event.text, partial=event.partial))
        elif event.role == "user":
            if event.origin == "user":
                await self._finish_answer()
                await self.add(UserItem(event.text))
            elif event.origin == "recall":
                await self.add(UserItem(event.text, origin="recall"))
            # "notice" user messages (the continuation prompt) are bulkhead's own plumbing: not shown

    async def _on_compaction(self, event: Compaction) -> None:
        if event.outcome == "applied":
            archived = f", {len(event.archive_keys)} segment(s) archived" if event.archive_keys else ""
            level = f" L{event.level}" if event.level and event.method != f"L{event.level}" else ""
            await self.add_notice(f"{event.method}{level}: {format_size(event.bytes_before)} → "
                                  f"{format_size(event.bytes_after)}, {event.messages_before} → "
                                  f"{event.messages_after} messages{archived} (/rewind compact undoes it)",
                                  code="compaction", title=f"compacted ({event.trigger})")
        else:
            await self.add_notice(f"{event.method}: {event.outcome}", level="warn" if event.outcome == "failed" else "info",
                                  code="compaction", title=f"compaction ({event.trigger})")

    def _last_answer_of_turn_is_partial(self) -> bool:
        for item in reversed(self.items):
            if isinstance(item, AssistantItem):
                return item.partial
            if isinstance(item, UserItem) and item.origin == "user":
                return False
        return False

    def _mark_last_partial(self, *, only_this_turn: bool = False) -> None:
        items = self.items
        for item in reversed(items):
            if isinstance(item, AssistantItem):
                item.mark_partial(True)
                return
            if only_this_turn and isinstance(item, UserItem) and item.origin == "user":
                return

    # -- approvals ----------------------------------------------------------------------------------------
    def ask_approval(self, name: str, why: str, future: asyncio.Future[bool | str],
                     remember: str = "") -> ToolBlock | None:
        """Attach an approval prompt to the newest unanswered block of tool `name` (`remember`: the rule
        "always" keeps)."""
        for block in reversed(self.tool_blocks()):
            if block.tool_name == name and not block.decision and not block.pending:
                block.ask(why, future, remember)
                block.collapsed = False
                block._sync()
                self.cursor = self.items.index(block)
                self.call_after_refresh(self._show_approval, block)  # once the expanded block is laid out
                return block
        return None

    def _show_approval(self, block: ToolBlock) -> None:
        """Bring the approve/deny row into view: the newest item is shown by following the end;
        an older one (a later block below it) is scrolled to."""
        if not block.is_attached or not block.pending:
            return
        if block is self.items[-1]:
            self._follow()
        else:
            self.scroll_to_widget(block.query_one(".approval-bar"), animate=False, immediate=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "approve":  # y / n show in the footer only while a tool call waits for them
            return self.pending_approval() is not None
        return True

    def action_approve(self, approved: bool | str) -> None:
        block = self.pending_approval()
        if block is None:
            self.app.bell()
            return
        block.answer(approved)

    # -- the cursor -----------------------------------------------------------------------------------------
    def watch_cursor(self, old: int, new: int) -> None:
        items = self.items
        if 0 <= old < len(items):
            items[old].remove_class("-cursor")
        if 0 <= new < len(items):
            items[new].add_class("-cursor")
            if self.has_focus and not (self.follow and new == len(items) - 1):  # following shows the end
                self.scroll_to_widget(items[new], animate=False)

    def on_focus(self, event: events.Focus) -> None:
        items = self.items
        if items and not (0 <= self.cursor < len(items)):
            self.cursor = len(items) - 1
        elif 0 <= self.cursor < len(items):
            items[self.cursor].add_class("-cursor")

    def on_blur(self, event: events.Blur) -> None:
        for item in self.query_children(".-cursor"):
            item.remove_class("-cursor")

    def action_cursor(self, step: int) -> None:
        items = self.items
        if not items:
            return
        self.cursor = max(0, min(len(items) - 1, (self.cursor if self.cursor >= 0 else len(items)) + step))

    def current_item(self) -> ChatItem | None:
        items = self.items
        return items[self.cursor] if 0 <= self.cursor < len(items) else None

    def action_toggle_item(self) -> None:
        item = self.current_item()
        if isinstance(item, ToolBlock):
            item.toggle()

    def action_copy_item(self) -> None:
        item = self.current_item()
        if item is None or not item.copy_text():
            self.app.bell()
            return
        self.post_message(self.CopyItem(item.copy_text(), f"the {item.kind} message"))

    def action_copy_code(self) -> None:
        item = self.current_item()
        blocks = item.code_blocks() if item is not None else []
        if not blocks:
            self.app.notify("No code block in this message — c copies the whole message.", severity="warning")
            return
        index = self._code_index.get(id(item), -1) + 1
        index = index if index < len(blocks) else 0
        self._code_index[id(item)] = index
        self.post_message(self.CopyItem(blocks[index], f"code block {index + 1}/{len(blocks)}"))

    def action_leave(self) -> None:
        self.post_message(self.LeaveChat())

    # -- resume -----------------------------------------------------------------------------------------------
    async def render_history(self, messages: Iterable[EngineMessage]) -> None:
        """Render a resumed session's master log (tool results joined to their calls)."""
        items: list[ChatItem] = []
        tools: dict[str, ToolBlock] = {}
        for message in messages:
            origin = message.meta.origin
            if message.role == "user" and origin in ("user", "recall"):
                items.append(UserItem(message.text, origin=origin))
            elif message.role == "assistant":
                text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
                if text:
                    items.append(AssistantItem(text, partial=message.meta.partial))
                for call in message.parts:
                    if isinstance(call, ToolCall):
                        block = ToolBlock(call.id, call.name, dict(call.args))
                        block.decision = "auto"
                        tools[call.id] = block
                        items.append(block)
            elif message.role == "tool":
                for result in message.parts:
                    if isinstance(result, ToolResult) and result.call_id in tools:
                        block = tools[result.call_id]
                        block.done, block.is_error = True, result.is_error
                        block.result, block.chars = result.content[:500], len(result.content)
        for block in tools.values():
            block.stopped = not block.done  # a call the log has no result for never finished
        items = items[-PRUNE_TO:] if len(items) > RENDER_BUDGET else items
        self._tools.update({b.call_id: b for b in items if isinstance(b, ToolBlock)})
        if items:
            with contextlib.suppress(Exception):
                await self.add(*items)
