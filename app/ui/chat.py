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
- Only a window of the conversation is mounted (see `app.ui.chat_history`): a resumed session mounts
  the last items that fill `chat_window_screens` screens (rows estimated from the text, at most
  `chat_window_items` items) and keeps the rest as entries without widgets, paged in about a screen at
  a time as the user scrolls up to them, while what is more than `chat_window_screens` screens below the
  view leaves the bottom (and comes back, scrolling down), so a page costs the same anywhere in the
  session and a session of long answers mounts a few of them, not 60; items scrolled far out of a live
  session (past `RENDER_BUDGET`) become entries again. `/find` (Ctrl+F) searches every item, on
  screen or not, and brings the match into view; the store keeps everything (/export).
- Engine events are dispatched by type (`handle` is a `functools.singledispatchmethod`).
- One cursor instead of focusable items: ↑/↓ move it, Alt+C (Ctrl+C) copies the item, Alt+K a code block,
  Enter folds a tool block, y/n answer an approval.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from textual import events
from textual.actions import SkipAction
from textual.app import ComposeResult, ScreenStackError
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Static

from app.model.events import (
    AnswerFinished,
    Compaction,
    Event,
    FallbackAnswered,
    FallbackMoved,
    HookRun,
    MemoryDistilled,
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
from app.ui.chat_history import HistoryEntry, entries_from_messages, entry_of, fill
from app.ui.chat_items import AssistantItem, ChatItem, NoticeItem, ReportItem, ToolBlock, UserItem
from app.ui.markdown.widget import AnswerView
from app.ui.textual_ext.collector import Doomed
from app.ui.textual_ext.quiet_resize import QuietResize
from app.ui.widgets.strip_scrollbar import StripScrollbars

if TYPE_CHECKING:
    from app.model.messages import Message as EngineMessage

ItemT = TypeVar("ItemT", bound=ChatItem)

FLUSH_INTERVAL_S = 0.025  # streamed text is appended (and drawn) on a steady 40 Hz beat: ≥ 30 frames a second
FOLLOW_ROWS = 2  # "at the bottom" means within this many rows of the end
SHORT_WATCH_S = 0.1  # how often a conversation shorter than the view is checked for having outgrown it
RENDER_BUDGET = 400  # mounted items kept in a live session; older ones become entries (never leave the store)
PRUNE_TO = 300
CHAT_WINDOW_ITEMS = 60  # default of the `chat_window_items` setting: items mounted on resume at most
CHAT_WINDOW_SCREENS = 2  # default of `chat_window_screens`: screens of history drawn around the view
CARD_ROWS = 9  # an approval card's rows besides its diff: header, why, summary, buttons, borders, margins
PREVIEW_MIN_ROWS = 6  # a diff shows at least this many lines in the card, however short the view


class Chat(StripScrollbars, QuietResize, VerticalScroll, can_focus=True):
    """The conversation. Focus it (Ctrl+O) to move between items and copy them."""

    HELP = """\
## Chat

Letters typed here go to the prompt (nothing you type is taken for a key); the chat's keys are these:

- **↑ / ↓**: move the cursor between messages · **PageUp / PageDown**: a page · **Home** / **End**: the
  top / the latest output (and follow it)
- **Ctrl+C** (nothing running) or **Alt+C**: copy the message under the cursor · **Alt+K**: copy a code
  block (again for the next one)
- **Enter**: fold or unfold a tool block
- a tool call waiting for approval: **y** approves, **n** denies, **d** denies and tells the model why,
  **a** / **p** approve and allow the same call for the rest of the session / in this project from now
  on (saved in `.bulkhead/settings.toml`) — only while it waits, and a / p only where that rule would take
  effect (not under an `ask` rule, a hook that asked, a compound command: the card says why)
- **Esc**: back to the prompt (from anywhere)
"""

    BINDINGS = [
        Binding("up", "cursor(-1)", "Previous", show=False, id="chat.previous"),
        Binding("down", "cursor(1)", "Next", show=False, id="chat.next"),
        Binding(
            "alt+c",
            "copy_item",
            "Copy",
            tooltip="Copy the message under the cursor (or Ctrl+C)",
            id="chat.copy",
        ),
        Binding(
            "alt+k",
            "copy_code",
            "Copy code",
            tooltip="Copy a code block of the message (again: the next one)",
            id="chat.copy_code",
        ),
        Binding("enter", "toggle_item", "Fold", tooltip="Fold or unfold a tool block", id="chat.toggle"),
        # The approval's keys: letters, but only while a call waits (check_action); else they type.
        Binding("y", "approve(True)", "Approve", tooltip="Approve the pending tool call", id="chat.approve"),
        Binding("n", "approve(False)", "Deny", tooltip="Deny the pending tool call", id="chat.deny"),
        Binding(
            "d",
            "deny_with_reason",
            "Deny, say why",
            tooltip="Deny the pending call and write one line the model gets as its result",
            id="chat.deny_why",
        ),
        Binding(
            "a",
            "approve('session')",
            "Always (session)",
            id="chat.always_session",
            tooltip="Approve the pending call and allow it for the rest of the session",
        ),
        Binding(
            "p",
            "approve('project')",
            "Always (project)",
            id="chat.always_project",
            tooltip="Approve the pending call and allow it in this project (.bulkhead/settings.toml)",
        ),
        Binding("end", "jump_latest", "Latest", show=False, id="chat.latest"),
        Binding("home", "jump_top", "Top", show=False, id="chat.top"),
        # Esc back to the prompt is the app's (`app.cancel`): from anywhere, also while a turn runs.
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
        self._flush_timer: Timer | None = None
        self._lock = asyncio.Lock()
        self._tools: dict[str, ToolBlock] = {}
        self._code_index: dict[int, int] = {}
        self.pruned = 0
        self._pruned_marker: Static | None = None
        self._released = False  # Textual released the anchor (a scroll that was not a follow)
        self._anchor_check_pending = False
        self._short_watch: Timer | None = None
        # The window: entries above the mounted items (`_older`, shown by `_pruned_marker`) and below them
        # (`_newer`, only after /find jumped back; shown by `_newer_marker`).
        self._older: list[HistoryEntry] = []
        self._newer: list[HistoryEntry] = []
        self._newer_marker: Static | None = None
        self._paging = False
        self.filling = False  # a resumed history's window is still being mounted (see _fill_window)
        self._older_coming: asyncio.Event | None = None  # set once older entries promised came (`add_older`)
        self._page_before: ChatItem | None = None  # older entries go just above this item (None: the first)
        # Rows PageUp could not scroll at the top, scrolled once the older page is in; only while the view
        # stays at the top (see watch_scroll_y).
        self._owed_rows = 0
        self._found: ChatItem | None = None
        self._find_query = ""
        self._find_position: int | None = None  # index of the last match in the whole conversation
        # The styles every answer is drawn in, held once (hidden) instead of by each answer's view.
        self.answer_styles = AnswerView(id="answer-styles")

    def compose(self) -> ComposeResult:
        yield self.answer_styles

    # -- reading (tests, copy, the app) ----------------------------------------------------------------
    def _children_of(self, kind: type[ItemT]) -> list[ItemT]:
        """The chat's children of a class, read straight from its node list: a `query_children` matched every
        child against a selector (~1 ms for a window of items), and paging reads `items` several times a page."""
        return [node for node in self._nodes if isinstance(node, kind)]

    @property
    def items(self) -> list[ChatItem]:
        return self._children_of(ChatItem)

    def answers(self) -> list[AssistantItem]:
        return self._children_of(AssistantItem)

    def last_answer(self) -> AssistantItem | None:
        answers = self.answers()
        return answers[-1] if answers else None

    def notices(self, code: str | None = None) -> list[NoticeItem]:
        return [n for n in self._children_of(NoticeItem) if code is None or n.code == code]

    def tool_blocks(self) -> list[ToolBlock]:
        return self._children_of(ToolBlock)

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
        self._short_watch = self.set_interval(
            SHORT_WATCH_S, self._check_anchor_after_layout, name="follow watch"
        )
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
        pane (a negative scroll), and a conversation starts at the top. History waiting above the mounted
        items is taller than the view before any layout has said so (`render_history` fills the view)."""
        if self.max_scroll_y > 0 or self._older:
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
        if (
            self.max_scroll_y - self.scroll_target_y < 1
        ):  # where the scroll goes (an animated one has not yet)
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
            if (
                not self._anchor_check_pending
            ):  # once laid out: anchor content that has become taller than the view
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
        if new > 0:
            self._owed_rows = 0  # the view left the top: what PageUp owed there is not owed any more
        if self._older or self._newer:
            self._maybe_page()
        if (
            not self.follow
            and not self._newer
            and self.at_bottom()
            and self.max_scroll_y - self.scroll_target_y <= FOLLOW_ROWS
        ):
            self._follow()  # the user scrolled back down to the end (or the content shrank)

    def on_resize(self, event: events.Resize) -> None:
        """The chat was resized (the terminal, the inspector shown or hidden): following, anchor it if it is
        now taller than the view; not following, say when there is more below."""
        if self.follow:
            self._anchor_if_scrollable()
        elif self.max_scroll_y - self.scroll_y > FOLLOW_ROWS:
            self.new_below = True

    def action_page_up(self) -> None:
        """A page up at once, not animated: Textual's scrolls after the next frame from where the view is
        then, so quick presses all went to the same place. At the top of what is mounted, with older items
        still to page in, the rows it could not go are owed to the page (see `_keep_place`)."""
        if not self.allow_vertical_scroll:
            raise SkipAction()  # nothing to scroll: the key goes on to the next binding, as Textual's does
        self.follow = False
        target = self.scroll_y - self.scrollable_content_region.height
        if target < 0 and self._older:
            self._owed_rows = min(self._owed_rows - int(target), self.window_rows)
        self.scroll_to(y=max(0, target), animate=False, immediate=True)
        self._maybe_page()

    def action_page_down(self) -> None:
        """A page down at once, not animated (as `action_page_up`)."""
        if not self.allow_vertical_scroll:
            raise SkipAction()
        self.scroll_to(y=self.scroll_y + self.scrollable_content_region.height, animate=False, immediate=True)

    def on_answer_view_grew(self, event: AnswerView.Grew) -> None:
        """A slice drew more of an answer (after the stream, or a long one)."""
        event.stop()
        self._after_append(self.follow)

    def watch_new_below(self, below: bool) -> None:
        self.post_message(self.NewOutputBelow(below))

    def action_jump_latest(self) -> None:
        if self._newer:  # /find went far back: the latest window again, then follow it
            self.call_later(self._latest_again)
            return
        self._follow()
        items = self.items
        if items:
            self.cursor = len(items) - 1

    async def _latest_again(self) -> None:
        await self._rewindow(self._total() - 1, at_end=True)
        self.action_jump_latest()

    def action_jump_top(self) -> None:
        """The top of what is mounted; older items page in from there (a page at a time, as scrolling does)."""
        self.follow = False
        self.scroll_home(animate=False)
        if self.items:
            self.cursor = 0
        self._maybe_page()

    # -- mounting -----------------------------------------------------------------------------------------
    @property
    def window_items(self) -> int:
        """Items mounted on resume and per page (the `chat_window_items` setting)."""
        settings = getattr(self.app, "settings", None)
        return max(10, int(getattr(settings, "chat_window_items", CHAT_WINDOW_ITEMS) or CHAT_WINDOW_ITEMS))

    @property
    def window_screens(self) -> int:
        """Screens of history drawn around what the chat shows (the `chat_window_screens` setting)."""
        settings = getattr(self.app, "settings", None)
        return max(
            1, int(getattr(settings, "chat_window_screens", CHAT_WINDOW_SCREENS) or CHAT_WINDOW_SCREENS)
        )

    def _screen(self) -> tuple[int, int]:
        """(rows, columns) of the chat's view, or of a usual terminal before the first layout."""
        height, width = self.size.height, self.size.width
        if height < 5 or width < 20:
            height, width = max(5, self.app.size.height - 8), max(20, self.app.size.width * 2 // 3)
        return height, max(20, width - 4)  # the items' padding and border

    @property
    def window_rows(self) -> int:
        """Rows of history drawn around the view: `chat_window_screens` screens."""
        return self.window_screens * self._screen()[0]

    @property
    def older_count(self) -> int:
        """Items of the conversation above the mounted ones, not built yet."""
        return len(self._older)

    @property
    def find_query(self) -> str:
        """The last /find query ("" before any)."""
        return self._find_query

    @property
    def newer_count(self) -> int:
        return len(self._newer)

    async def add(self, *items: ChatItem) -> None:
        if self._newer:  # the user read far back (/find): new output brings the latest back first
            await self._rewindow(self._total() - 1, at_end=True)
        following = self._before_append()
        await self.mount_all(
            items, before=self._newer_marker
        ) if self._newer_marker is not None else await self.mount_all(items)
        self._settling.update(i for i in items if isinstance(i, AssistantItem) and not i.streaming)
        await self._prune()
        self._after_append(following)

    async def _prune(self) -> None:
        children = self.items
        if len(children) <= RENDER_BUDGET or not self.follow:  # never take away what the user reads
            return
        doomed: list[ChatItem] = []
        for child in children[: len(children) - PRUNE_TO]:
            if child is self._answer or (isinstance(child, ToolBlock) and child.pending):
                break  # keep the mounted items contiguous
            doomed.append(child)
        if not doomed:
            return
        self.pruned += len(doomed)
        for block in doomed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.call_id, None)
        anchor = self._page_before
        if anchor is not None and anchor in doomed:  # the hidden entries sat between the doomed items
            split = doomed.index(anchor)
            self._older = [*map(entry_of, doomed[:split]), *self._older, *map(entry_of, doomed[split:])]
        else:
            self._older = [*map(entry_of, doomed), *self._older]
        self._page_before = None
        await self._take_off(doomed)
        await self._update_markers()
        self.cursor = min(self.cursor, len(self.items) - 1)

    async def _update_markers(self) -> None:
        older = len(self._older)
        if older:
            count = "" if self._older_coming is not None else f"{older:,} "  # more are coming
            label = (
                f"↑ {count}earlier items are not shown yet — scroll up (PageUp) to page them in; "
                f"/find (Ctrl+F) searches them all"
            )
            if self._pruned_marker is None:
                self._pruned_marker = Static(label, classes="pruned-marker", markup=False)
                await self.mount(self._pruned_marker, before=0)
            else:
                self._pruned_marker.update(label)
        elif self._pruned_marker is not None:
            marker, self._pruned_marker = self._pruned_marker, None
            await marker.remove()
        newer = len(self._newer)
        if newer:
            label = f"↓ {newer:,} later items — scroll down to page them in; End shows the latest"
            if self._newer_marker is None:
                self._newer_marker = Static(label, classes="pruned-marker", markup=False)
                await self.mount(self._newer_marker)
            else:
                self._newer_marker.update(label)
        elif self._newer_marker is not None:
            marker, self._newer_marker = self._newer_marker, None
            await marker.remove()

    async def _take_off(self, doomed: Sequence[Widget]) -> None:
        """Remove items for good, freed by reference counting with the lines they drew (see `Doomed`: a
        Textual widget is a reference cycle, and paging back through a long session left 40,000 dead objects
        a full collection)."""
        removed = Doomed.of(doomed)
        await self.remove_children(doomed)
        removed.release()

    def _register(self, items: Iterable[ChatItem]) -> None:
        for item in items:
            if isinstance(item, ToolBlock):
                self._tools[item.call_id] = item

    def _total(self) -> int:
        return len(self._older) + len(self.items) + len(self._newer)

    # -- paging -----------------------------------------------------------------------------------------
    def _maybe_page(self) -> None:
        """Near the top (or the bottom) of what is mounted, with more beyond: page it in (after the next
        frame, so keys queued while a page went in cannot chain pages without drawing)."""
        if self._paging or not self.is_attached:
            return
        margin = max(2, self.size.height)
        if self._older and self.scroll_y <= margin:
            self._paging = True
            self.call_after_refresh(self._page_older)
        elif self._newer and self.max_scroll_y - self.scroll_y <= margin:
            self._paging = True
            self.call_after_refresh(self._page_newer)

    @property
    def page_items(self) -> int:
        """Items paged in per step while scrolling at most: a third of `chat_window_items`."""
        return max(10, self.window_items // 3)

    def _page_count(self, entries: list[HistoryEntry], *, from_end: bool) -> int:
        """Entries of a page: about one screen of rows (a short stall per page), `page_items` at most."""
        rows, width = self._screen()
        return fill(entries, rows, width, most=self.page_items, from_end=from_end)

    async def _page_older(self, count: int | None = None) -> list[ChatItem]:
        """Mount the last `count` (a page's worth) older entries above the mounted items, keeping what
        is on screen where it is."""
        try:
            count = min(len(self._older), count or self._page_count(self._older, from_end=True))
            if not count:
                return []
            entries, self._older = self._older[-count:], self._older[:-count]
            widgets = [entry.build() for entry in entries]
            self._register(widgets)
            anchor = self._page_before
            first = anchor if anchor is not None and anchor.is_attached else next(iter(self.items), None)
            top_before = first.virtual_region_with_margin.y if first is not None else 0
            at = self.items.index(first) if first is not None else 0
            if first is not None:
                await self.mount_all(widgets, before=first)
            elif self._pruned_marker is not None:
                await self.mount_all(widgets, after=self._pruned_marker)
            else:
                await self.mount_all(widgets)
            self._page_before = widgets[0]
            self.pruned = max(0, self.pruned - count)
            if self.cursor >= at:  # the cursor stays on its item
                self.set_reactive(Chat.cursor, self.cursor + count)
            await self._trim_newest(widgets)
            await self._update_markers()
            if first is not None:
                self.call_after_refresh(self._keep_place, first, top_before)
            return widgets
        finally:
            self._paging = False

    def _keep_place(self, first: ChatItem, top_before: int) -> None:
        """Content grew above the view (above `first`): scroll by as much, so what the user read stays put,
        less the rows PageUp owes if the view waited at the top for this page."""
        if not first.is_attached:
            return
        grown = first.virtual_region_with_margin.y - top_before
        if grown <= 0 or self.follow:
            return
        paid = min(self._owed_rows, grown)
        left = self._owed_rows - paid if self._older else 0
        self.scroll_to(y=self.scroll_y + grown - paid, animate=False, immediate=True, release_anchor=False)
        self._owed_rows = left  # (the scroll cleared it if it left the top, in which case none is left)
        if self._owed_rows:  # still at the top, more owed than this page held: the next page
            self._maybe_page()

    async def _page_newer(self, count: int | None = None) -> list[ChatItem]:
        try:
            count = min(len(self._newer), count or self._page_count(self._newer, from_end=False))
            if not count:
                return []
            entries, self._newer = self._newer[:count], self._newer[count:]
            widgets = [entry.build() for entry in entries]
            self._register(widgets)
            await self.mount_all(
                widgets, before=self._newer_marker
            ) if self._newer_marker is not None else await self.mount_all(widgets)
            await self._trim_oldest(widgets)
            await self._update_markers()
            return widgets
        finally:
            self._paging = False

    # A page mounted at one end of the window takes off, at the other end, what lies more than
    # `chat_window_screens` screens beyond the view (and anything past `max_mounted` items), so a page costs
    # the same (Textual lays out every mounted item) whether the user is 100 or 4,000 items back. Nothing
    # live (a stream, a running tool, an approval) is taken.
    @property
    def max_mounted(self) -> int:
        """Items mounted at most while the user pages through the history: twice `chat_window_items`."""
        return 2 * self.window_items

    def _live(self) -> bool:
        return self._answer is not None or any(
            b.pending or not (b.done or b.stopped) for b in self.tool_blocks()
        )

    async def _trim_newest(self, new: Sequence[ChatItem] = ()) -> None:
        """Paged up: the newest mounted items (below the view) become entries again. The `new` page (just
        mounted above, not laid out yet) stays."""
        items = self.items
        if self.follow or self._live():
            return
        below = self.scroll_y + self.size.height + self.window_rows  # rows kept below the view
        fresh = set(new)
        kept = sum(1 for item in items if item in fresh or item.virtual_region_with_margin.y <= below)
        extra = len(items) - min(max(kept, 1), self.max_mounted)
        if extra <= 0:
            return
        doomed = items[-extra:]
        if self._page_before in doomed:
            return
        for block in doomed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.call_id, None)
        self._newer = [*map(entry_of, doomed), *self._newer]
        self._clamp_cursor(len(items) - extra - 1)
        await self._take_off(doomed)

    async def _trim_oldest(self, new: Sequence[ChatItem] = ()) -> None:
        """Paged down: the oldest mounted items (above the view) become entries again; what is on
        screen stays where it is. The `new` page (just mounted below, not laid out yet: where it will be
        is not known) is never counted as above the view."""
        items = self.items
        if self.follow or self._live():
            return
        above = self.scroll_y - self.window_rows  # rows kept above the view
        fresh = set(new)
        laid_out = [item for item in items if item not in fresh]  # the items above the new page
        gone = sum(1 for item in laid_out if item.virtual_region_with_margin.bottom < above)
        extra = min(max(gone, len(items) - self.max_mounted), len(laid_out) - 1)  # one laid out stays
        if extra <= 0:
            return
        doomed, kept = items[:extra], items[extra]
        for block in doomed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.call_id, None)
        removed_rows = kept.virtual_region_with_margin.y - doomed[0].virtual_region_with_margin.y
        self._older = [*self._older, *map(entry_of, doomed)]
        self.pruned = len(self._older)
        if self._page_before in doomed:
            self._page_before = None
        self.set_reactive(Chat.cursor, max(-1, self.cursor - extra))
        scroll_before = self.scroll_y
        await self._take_off(doomed)
        if removed_rows > 0:
            self.call_after_refresh(
                lambda: self.scroll_to(
                    y=max(0, scroll_before - removed_rows),
                    animate=False,
                    immediate=True,
                    release_anchor=False,
                )
            )

    async def _rewindow(self, target: int, *, at_end: bool = False) -> ChatItem | None:
        """Mount the window of the whole conversation around item `target` (the last window when
        `at_end`) instead of what is mounted now; the widget of `target`."""
        mounted = self.items
        entries = [*self._older, *(entry_of(item) for item in mounted), *self._newer]
        if not entries:
            return None
        target = max(0, min(target, len(entries) - 1))
        window, width = self.window_items, self._screen()[1]
        if at_end:
            start, end = len(entries) - fill(entries, self.window_rows, width, most=window), len(entries)
        else:  # about half the window's rows above the target and half from it down
            half = self.window_rows // 2
            start = target - fill(entries[:target], half, width, most=window // 2)
            end = target + fill(entries[target:], half, width, most=window - (target - start), from_end=False)
        self._tools.clear()
        # Forgotten before the removal, so that a page going in meanwhile never mounts beside what is leaving;
        # this mounts a whole window, so a resumed window's rest still to come is not needed either.
        markers = [m for m in (self._pruned_marker, self._newer_marker) if m]
        self._pruned_marker = self._newer_marker = self._page_before = None
        self.filling = False
        await self._take_off([*mounted, *markers])
        self._older, self._newer = entries[:start], entries[end:]
        self.pruned = len(self._older)
        widgets = [entry.build() for entry in entries[start:end]]
        self._register(widgets)
        await self.mount_all(widgets)
        await self._update_markers()
        self.cursor = -1
        if at_end:
            self._follow()
        else:
            self.follow = False
            self.release_anchor()
        return widgets[target - start] if start <= target < end else None

    # -- find -------------------------------------------------------------------------------------------
    def _texts(self) -> list[str]:
        """The searchable text of every item of the conversation, in order (mounted or not)."""
        return [
            *(e.text for e in self._older),
            *(i.copy_text() for i in self.items),
            *(e.text for e in self._newer),
        ]

    async def find(self, query: str) -> str:
        """Find `query` (case-insensitive) anywhere in the conversation, newest first; the same query again
        finds the next older match, wrapping around. Brings the match into view; says what it found."""
        query = query.strip()
        if not query:
            return "usage: /find TEXT (Ctrl+F) — searches the whole conversation, on screen or not"
        if self._older_coming is not None:  # a long session's older entries are on their way: all of it
            await self._older_coming.wait()
        needle = query.casefold()
        texts = self._texts()
        matches = [i for i, text in enumerate(texts) if needle in text.casefold()]
        if not matches:
            self._find_query, self._find_position = query, None
            return f"“{query}” is not in this conversation ({len(texts):,} items searched)"
        if query == self._find_query and self._find_position is not None:
            older = [i for i in matches if i < self._find_position]
            position = older[-1] if older else matches[-1]
        else:
            position = matches[-1]
        self._find_query, self._find_position = query, position
        rank = len(matches) - matches.index(position)
        item = await self._bring_into_view(position)
        if item is not None:
            self._mark_found(item)
        return (
            f"“{query}”: match {rank:,} of {len(matches):,} (newest first) — /find {query} again "
            f"for the next older one"
        )

    async def _bring_into_view(self, position: int) -> ChatItem | None:
        older = len(self._older)
        mounted = self.items
        item: ChatItem | None
        if older <= position < older + len(mounted):
            item = mounted[position - older]
        elif self._answer is not None or any(
            b.pending or not (b.done or b.stopped) for b in self.tool_blocks()
        ):
            # A stream, a running tool or an approval is live: page in down to the match instead of re-windowing.
            if position < older:
                self._paging = True
                widgets = await self._page_older(older - position)
                item = widgets[0] if widgets else None
            else:
                item = None
                while self._newer and item is None:
                    before = len(self._older) + len(self.items)
                    self._paging = True
                    widgets = await self._page_newer()
                    if before <= position < before + len(widgets):
                        item = widgets[position - before]
                    elif not widgets:
                        break
        else:
            item = await self._rewindow(position)
        if item is None:
            return None
        self.follow = False
        self.release_anchor()
        self.cursor = self.items.index(item)
        self.call_after_refresh(self.scroll_to_widget, item, animate=False, top=True)
        return item

    def _mark_found(self, item: ChatItem) -> None:
        if self._found is not None and self._found.is_attached:
            self._found.remove_class("-found")
        item.add_class("-found")
        self._found = item

    async def add_notice(
        self, text: str, *, level: str = "info", code: str = "", title: str = ""
    ) -> NoticeItem:
        item = NoticeItem(text, level=level, code=code, title=title)
        await self.add(item)
        return item

    async def add_report(self, title: str, rows: list[tuple[str, str]]) -> ReportItem:
        item = ReportItem(title, rows)
        await self.add(item)
        return item

    @property
    def older_coming(self) -> asyncio.Event | None:
        """The promise of `expect_older` while its entries are on their way (what `add_older` takes), else None."""
        return self._older_coming

    def expect_older(self) -> asyncio.Event:
        """Older entries of the history about to be shown come later (`add_older` with what this returns): the
        marker above says so without a count, and /find waits for them."""
        self._older_coming = asyncio.Event()
        return self._older_coming

    async def add_older(self, coming: asyncio.Event, entries: list[HistoryEntry]) -> None:
        """The entries older than everything shown, promised by `expect_older` (ignored if the chat was cleared
        since); they page in as the rest do."""
        if coming is not self._older_coming:
            return
        self._older[0:0] = entries
        self.pruned += len(entries)
        if self._find_position is not None:
            self._find_position += len(entries)
        self._older_coming = None
        coming.set()
        await self._update_markers()
        self._maybe_page()

    async def clear_all(self) -> None:
        if self._older_coming is not None:  # nothing of the history shown here is coming any more
            self._older_coming.set()
            self._older_coming = None
        await self._finish_answer()
        self._settling.clear()
        self._tools.clear()
        self.pruned = 0
        self._pruned_marker = self._newer_marker = None
        self.filling = False
        self._older, self._newer = [], []
        self._page_before = None
        self._found, self._find_position = None, None
        await self._take_off([child for child in self.children if child is not self.answer_styles])
        self.styles.overflow_y = None  # the stylesheet's again: a scrollbar only when it overflows
        self.cursor = -1
        self._follow()

    # -- streaming ----------------------------------------------------------------------------------------
    async def _start_answer(self) -> AssistantItem:
        item = AssistantItem(streaming=True)
        self._answer = item
        await self.add(item)
        return item

    def _schedule_flush(self) -> None:
        # A steady beat while text arrives (an interval, not a timer set again after each flush, which
        # drifted by the flush's own cost): every beat becomes a frame, so the answer moves at ≥ 30 fps.
        if self._flush_timer is None:
            self._flush_timer = self.set_interval(FLUSH_INTERVAL_S, self._flush, name="stream flush")

    async def _flush(self) -> None:
        if not self._pending and self._flush_timer is not None:  # a quiet beat: wait for the next delta
            self._flush_timer.stop()
            self._flush_timer = None
            return
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

    async def _finish_answer(
        self, text: str | None = None, *, partial: bool | None = None
    ) -> AssistantItem | None:
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
    @functools.singledispatchmethod
    async def handle(self, event: Event) -> None:
        """Render one engine event (called by the app, in order); one handler per event type below,
        and an event type the chat does not show lands here."""

    @handle.register
    async def _show_text(self, event: TextDelta) -> None:
        if self._answer is None:
            await self._start_answer()
        self._pending.append(event.text)
        self._schedule_flush()

    @handle.register
    async def _show_message(self, event: MessageAdded) -> None:
        await self._on_message_added(event)

    @handle.register
    async def _show_answer_finished(self, event: AnswerFinished) -> None:
        finished = await self._finish_answer(partial=event.partial or None)
        if finished is None and event.partial:
            self._mark_last_partial()

    @handle.register
    async def _show_turn_finished(self, event: TurnFinished) -> None:
        partial = event.outcome in ("partial", "cancelled")
        finished = await self._finish_answer(partial=True if partial else None)
        if finished is None and partial:
            self._mark_last_partial(only_this_turn=True)
        if event.outcome == "cancelled":
            for block in self._tools.values():
                block.stop()
            kept = finished is not None or self._last_answer_of_turn_is_partial()
            await self.add_notice(
                "turn cancelled — what arrived is kept, marked partial"
                if kept
                else "turn cancelled before any answer arrived",
                level="warn",
                code="cancelled",
            )

    @handle.register
    async def _show_tool_started(self, event: ToolCallStarted) -> None:
        await self._finish_answer()
        block = ToolBlock(event.call_id, event.name, event.args)
        self._tools[event.call_id] = block
        await self.add(block)

    @handle.register
    async def _show_tool_approval(self, event: ToolApproval) -> None:
        block = self._tools.get(event.call_id)
        if block is not None:
            block.set_decision(event.decision, event.reason)

    @handle.register
    async def _show_tool_finished(self, event: ToolCallFinished) -> None:
        block = self._tools.get(event.call_id)
        if block is not None:
            block.set_result(
                is_error=event.is_error, preview=event.preview, chars=event.chars, spill_path=event.spill_path
            )

    @handle.register
    async def _show_notice(self, event: Notice) -> None:
        await self.add_notice(event.text, level=event.level, code=event.code)

    @handle.register(FallbackMoved)
    @handle.register(FallbackAnswered)
    @handle.register(MemoryDistilled)
    @handle.register(RecoveryStep)
    @handle.register(Compaction)
    @handle.register(Retry)
    async def _show_described(self, event: Event) -> None:
        await self._add_described(event)  # the words are app.engine.describe's (the same as -p and the log)

    @handle.register
    async def _show_rejection(self, event: Rejection) -> None:
        from app.ui.bindings import BLOCKED_KEY_WORDS

        # a content block's notice names the one key that starts finding the refused text (/blocked)
        more = (
            f" — {BLOCKED_KEY_WORDS} (or /blocked) finds the refused text" if event.cause == "content" else ""
        )
        await self._add_described(event, more)

    @handle.register
    async def _show_hook_run(self, event: HookRun) -> None:
        if event.decision in ("error", "timeout", "cancelled"):
            # A broken hook (a crash, invalid JSON, a timeout) must not go unnoticed; blocks show where they act.
            await self._add_described(event, " (the Hooks panel shows its output)")

    async def _add_described(self, event: Event, more: str = "") -> None:
        from app.engine.api.describe import describe  # here: the first frame does not import the engine

        line = describe(event)
        if line is not None:
            await self.add_notice(line.text + more, level=line.level, code=line.code, title=line.title)

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
    async def ask_approval(
        self,
        call_id: str,
        name: str,
        args: dict,
        why: str,
        future: asyncio.Future,
        remember: str = "",
        preview=None,
        no_always: str = "",
    ) -> ToolBlock | None:
        """Attach an approval prompt to the block of tool call `call_id` (`remember`: the rule "always"
        keeps — "" offers no a / p, and `no_always` says why; `preview`: what an edit would change, shown in
        the card as far as the view has room beside the card's other lines — its arguments then stay
        folded). A question about no tool call of the model's (an image or a restore outside the workspace:
        the engine made its id up) gets a block of its own. None when the call's block is gone."""
        block = self._tools.get(call_id)
        if block is None:
            block = ToolBlock(call_id, name, args, asked_only=True)
            self._tools[call_id] = block
            await self.add(block)
        if not block.is_attached or block.decision or block.pending:
            return None
        rows = max(PREVIEW_MIN_ROWS, self._screen()[0] - CARD_ROWS)
        block.ask(why, future, remember, preview, rows, no_always=no_always)
        block.collapsed = preview is not None
        block._sync()
        self.cursor = self.items.index(block)
        self.call_after_refresh(self._show_approval, block)  # once the expanded block is laid out
        return block

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
        if action in ("approve", "deny_with_reason"):  # y / n / d only while a tool call waits for them
            block = self.pending_approval()
            if block is not None and parameters and parameters[0] in ("session", "project"):
                return bool(block.remember)  # a / p only where "always" takes effect
            return block is not None
        return True

    def action_deny_with_reason(self) -> None:
        block = self.pending_approval()
        if block is None or not block.start_reason():
            self.app.bell()

    def action_approve(self, approved: bool | str) -> None:
        block = self.pending_approval()
        if block is None or (approved in ("session", "project") and not block.remember):
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

    def _clamp_cursor(self, last: int) -> None:
        """The cursor's item is leaving the window: the cursor goes to item `last`, the view stays where
        it is (moving it with `cursor` would scroll to that item, far from what the user reads)."""
        if self.cursor <= last:
            return
        self.set_reactive(Chat.cursor, last)
        if self.has_focus and 0 <= last < len(self.items):
            self.items[last].add_class("-cursor")

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
            self.app.notify(
                "No code block in this message — Alt+C copies the whole message.", severity="warning"
            )
            return
        index = self._code_index.get(id(item), -1) + 1
        index = index if index < len(blocks) else 0
        self._code_index[id(item)] = index
        self.post_message(self.CopyItem(blocks[index], f"code block {index + 1}/{len(blocks)}"))

    def action_leave(self) -> None:
        self.post_message(self.LeaveChat())

    # -- resume -----------------------------------------------------------------------------------------------
    async def render_history(
        self,
        messages: Iterable[EngineMessage],
        *,
        entries: list[HistoryEntry] | None = None,
        fill_now: bool = True,
    ) -> None:
        """Show a resumed session's master log (tool results joined to their calls): the last items that
        fill the view are mounted, the rest of the window (`chat_window_screens`) right after the first
        frame — or, with `fill_now=False`, when the caller says (`fill_window()`: the app does once the
        engine has started, so a resume's first frame and its engine come before what is off the screen);
        the others wait as entries until the user scrolls or searches to them — resuming costs what is on
        screen, not the length of the session.
        `entries`: the log already made entries (off the event loop, `entries_from_messages`)."""
        if entries is None:
            entries = entries_from_messages(messages)
        if not entries:
            return
        rows, width = self._screen()
        window = fill(entries, rows, width, most=self.window_items)
        shown, hidden = entries[-window:], entries[:-window]
        if self._newer:
            await self._rewindow(self._total() - 1, at_end=True)
        items = [entry.build() for entry in shown]
        with contextlib.suppress(Exception):
            if hidden:  # it overflows the view: the first layout is at the width left by the scrollbar
                self.styles.overflow_y = "scroll"  # (not one at full width, then all of it again narrower)
            await self.add(*items)
            self._register(items)
            if hidden:
                if self._page_before is None or not self._page_before.is_attached:
                    self._page_before = items[0]  # what was mounted before the history stays above it
                self._older.extend(hidden)
                self.pruned += len(hidden)
                await self._update_markers()
                self.filling = True
                if self.follow:  # the first frame shows the end, not the top of what was mounted
                    self._anchor_if_scrollable()
                if fill_now:
                    self.call_after_refresh(self._fill_window)

    def fill_window(self) -> None:
        """Mount the rest of a resumed window after the next frame (see `render_history`)."""
        if self.filling:
            self.call_after_refresh(self._fill_window)

    async def _fill_window(self) -> None:
        """After the resumed view's first frame: mount older entries above it until the window
        (`chat_window_screens` screens) is full, so the first PageUps find history already drawn."""
        if self._paging and self.is_attached:  # a page is going in (the view was near the top): after it
            self.call_after_refresh(self._fill_window)
            return
        try:
            if not self.filling or not self._older or not self.is_attached:  # cleared or rewindowed since
                return
            shown = sum(item.outer_size.height + 1 for item in self.items)  # the items and their margins
            wanted = self.window_rows - shown
            if wanted <= 0:
                return
            count = fill(self._older, wanted, self._screen()[1], most=self.window_items - len(self.items))
            if count > 0:
                self._paging = True
                await self._page_older(count)
        finally:
            self.filling = False
