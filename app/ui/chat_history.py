"""Chat items that are not on screen: what they will show, and how to build their widget when needed.

A long session's chat mounts only the items near what the user looks at (see `app.ui.chat.Chat`);
every other item is a `HistoryEntry`: its kind, the text a search looks in (what the item would
show and copy), and a `build()` that makes the widget when the user scrolls or searches to it. A
resumed session's master log becomes entries (`entries_from_messages`) without building any widget;
an item scrolled far out of view becomes an entry again (`entry_of`), keeping everything it shows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.ui.chat_items import AssistantItem, ChatItem, NoticeItem, ReportItem, ToolBlock, UserItem

if TYPE_CHECKING:  # a resumed log is read in the engine's worker, after the first frame
    from app.model.messages import Message as EngineMessage

TOOL_RESULT_SHOWN = 500  # characters of a resumed tool result a tool block shows (and a search sees)
ITEM_CHROME_ROWS = 2  # rows an item takes besides its text (its label and margin)
FOLDED_TOOL_ROWS = 2  # a folded tool block: its header line and margin
TOOL_BODY_ROWS = 20  # an unfolded tool block's body is at most this tall (styles/app.tcss max-height)


def text_rows(text: str, width: int) -> int:
    """About how many rows `text` takes wrapped at `width` columns (each line at least one)."""
    width = max(1, width)
    return sum(-(-len(line) // width) or 1 for line in text.split("\n"))


@dataclass(eq=False, slots=True)
class HistoryEntry:
    """An item of the conversation without its widget."""

    kind: str
    text: str  # what a search looks in (the raw text the item shows and copies)
    build: Callable[[], ChatItem]
    call_id: str = ""  # a tool block's call id
    folded: bool = False  # a tool block that shows only its header

    def rows(self, width: int) -> int:
        """About how many rows the item takes in a chat `width` columns wide (to draw only what fills
        the screen plus a margin, without building the widget to measure it)."""
        if self.kind == "tool":
            if self.folded:
                return FOLDED_TOOL_ROWS
            return ITEM_CHROME_ROWS + min(TOOL_BODY_ROWS, text_rows(self.text, width))
        return ITEM_CHROME_ROWS + text_rows(self.text, width)


@dataclass(eq=False, slots=True)
class _ToolState:
    call_id: str
    name: str
    args: dict
    decision: str = "auto"
    reason: str = ""
    done: bool = False
    stopped: bool = False
    is_error: bool = False
    result: str = ""
    chars: int = 0
    spill_path: str | None = None
    collapsed: bool = True

    def build(self) -> ToolBlock:
        block = ToolBlock(self.call_id, self.name, self.args, approvable=False)
        block.decision, block.reason = self.decision, self.reason
        block.done, block.stopped, block.is_error = self.done, self.stopped, self.is_error
        block.result, block.chars, block.spill_path = self.result, self.chars, self.spill_path
        block.collapsed = self.collapsed
        block.set_state_classes(update=False)
        return block

    def search_text(self) -> str:
        return f"{self.name} {self.args} {self.reason} {self.result}"


def _tool_entry(state: _ToolState, text: str) -> HistoryEntry:
    return HistoryEntry("tool", text, state.build, call_id=state.call_id, folded=state.collapsed)


def entries_from_messages(messages: Iterable[EngineMessage]) -> list[HistoryEntry]:
    """A master log as chat entries (tool results joined to their calls); no widget is built."""
    from app.model.messages import Text as TextPart
    from app.model.messages import ToolCall, ToolResult

    entries: list[HistoryEntry] = []
    tools: dict[str, tuple[_ToolState, HistoryEntry]] = {}
    for message in messages:
        origin = message.meta.origin
        if message.role == "user" and origin in ("user", "recall"):
            text = message.text
            entries.append(HistoryEntry("user", text, functools.partial(UserItem, text, origin=origin)))
        elif message.role == "assistant":
            text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
            if text:
                partial = message.meta.partial
                entries.append(
                    HistoryEntry("assistant", text, functools.partial(AssistantItem, text, partial=partial))
                )
            for call in message.parts:
                if isinstance(call, ToolCall):
                    state = _ToolState(call.id, call.name, dict(call.args))
                    entry = _tool_entry(state, "")  # its text once its result is in (below)
                    tools[call.id] = (state, entry)
                    entries.append(entry)
        elif message.role == "tool":
            for result in message.parts:
                if isinstance(result, ToolResult) and result.call_id in tools:
                    state = tools[result.call_id][0]
                    state.done, state.is_error = True, result.is_error
                    state.result, state.chars = result.content[:TOOL_RESULT_SHOWN], len(result.content)
    for state, entry in tools.values():
        state.stopped = not state.done  # a call the log has no result for never finished
        entry.text = state.search_text()  # once, with its result
    return entries


def fill(entries: list[HistoryEntry], rows: int, width: int, *, most: int, from_end: bool = True) -> int:
    """How many entries, taken from the end of `entries` (or the start), make at least `rows` rows at
    `width` columns — at least one, at most `most`."""
    count = total = 0
    order = reversed(entries) if from_end else iter(entries)
    for entry in order:
        if count >= most or (count and total >= rows):
            break
        total += entry.rows(width)
        count += 1
    return count


def entry_of(item: ChatItem) -> HistoryEntry:
    """An item leaving the screen as an entry that builds an equal item again."""
    if isinstance(item, ToolBlock):
        state = _ToolState(
            item.call_id,
            item.tool_name,
            item.args,
            decision=item.decision or "auto",
            reason=item.reason,
            done=item.done,
            stopped=item.stopped or not item.done,
            is_error=item.is_error,
            result=item.result,
            chars=item.chars,
            spill_path=item.spill_path,
            collapsed=item.collapsed,
        )
        return _tool_entry(state, state.search_text())
    if isinstance(item, AssistantItem):
        text, partial = item.raw, item.partial
        return HistoryEntry("assistant", text, lambda: AssistantItem(text, partial=partial))
    if isinstance(item, UserItem):
        text, origin = item.text, item.origin
        return HistoryEntry("user", text, lambda: UserItem(text, origin=origin))
    if isinstance(item, NoticeItem):
        text, level, code, title = item.text, item.level, item.code, item.title
        return HistoryEntry(
            "notice", item.copy_text(), lambda: NoticeItem(text, level=level, code=code, title=title)
        )
    if isinstance(item, ReportItem):
        title, rows = item.title, list(item.rows)
        return HistoryEntry("report", item.copy_text(), lambda: ReportItem(title, rows))
    text = item.copy_text()
    return HistoryEntry(item.kind, text, lambda: NoticeItem(text))
