"""The items of the chat: user messages, streamed answers, tool blocks, notices, reports.

Every item keeps the raw text it shows (`copy_text()`), so copy and tests never read pixels.
Items are not focusable: the chat has one cursor (see `app.ui.chat.Chat`), which keeps the
focus chain short however long the session grows.

Items show outside text (prompts, answers, tool arguments and output, provider words): each
makes what it is given safe with `app.textsafe` (escape sequences shown, never interpreted) and
never parses it as markup — whether it came from an engine event or from the store (a resumed
session). What is copied is what is shown.
"""

from __future__ import annotations

import asyncio
import json
import re

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Static

from app.textsafe import display, display_line
from app.ui.markdown.widget import SharedStylesAnswerView
from app.ui.quiet_resize import QuietResize

_CODE_BLOCK_RE = re.compile(r"^(```+|~~~+)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
NOTICE_MARKS = {"info": "ℹ", "warn": "⚠", "error": "✖"}
# A long prompt (a pasted log) is shown folded: laying out a megabyte of text stalls the screen,
# and the whole of it is one copy away (Alt+C in the chat). The model always gets all of it.
PROMPT_FOLD_LINES = 24
PROMPT_FOLD_CHARS = 3000
RECALL_FOLD_CHARS = 1200


def fold(text: str, *, max_lines: int, max_chars: int) -> str:
    """`text`, or its head and a line saying how much more there is (and how to copy it all)."""
    lines = text.count("\n") + 1
    if lines <= max_lines and len(text) <= max_chars:
        return text
    head = "\n".join(text.split("\n", max_lines)[:max_lines])[:max_chars].rstrip()
    rest_lines = lines - (head.count("\n") + 1)
    more = f"{rest_lines:,} more lines, " if rest_lines > 0 else ""
    return f"{head}\n… ({more}{len(text):,} characters in all; Ctrl+O, then Alt+C copies them)"


# How an answer is drawn (see `AnswerView`).


def code_blocks(markdown: str) -> list[str]:
    """The fenced code blocks of a Markdown text, in order."""
    return [match.group(2).rstrip("\n") for match in _CODE_BLOCK_RE.finditer(markdown)]


class ChatItem(Widget):
    """Base of every chat item: a raw text to copy, and a cursor highlight."""

    DEFAULT_CSS = "ChatItem { height: auto; }"
    kind = "item"

    def copy_text(self) -> str:
        return ""

    def code_blocks(self) -> list[str]:
        return code_blocks(self.copy_text())


def _with_classes(kwargs: dict, *names: str) -> dict:
    """`kwargs` with `names` (the empty ones left out) added to its classes: classes given at construction cost no restyle (a class
    added afterwards restyles the widget and everything in it, once before mounting and again after)."""
    given = kwargs.get("classes") or ""
    return {**kwargs, "classes": " ".join(filter(None, (given, *names)))}


class UserItem(ChatItem):
    """A prompt: its label and (folded when long) text, drawn by this one widget — a resumed session
    mounts a few dozen of these at once, and every widget costs its styling and layout."""

    kind = "user"
    COMPONENT_CLASSES = {"user-item--label"}

    def __init__(self, text: str, *, origin: str = "user", **kwargs) -> None:
        super().__init__(**_with_classes(kwargs, "-recall" if origin == "recall" else ""))
        self.text = display(text)
        self.origin = origin

    @property
    def body(self) -> str:
        """The text as shown: a long prompt folded (the whole of it is copied and sent)."""
        if self.origin == "recall":
            return fold(self.text, max_lines=self.text.count("\n") + 1, max_chars=RECALL_FOLD_CHARS)
        return fold(self.text, max_lines=PROMPT_FOLD_LINES, max_chars=PROMPT_FOLD_CHARS)

    def render(self) -> RenderableType:
        label = "↺ recalled into the conversation" if self.origin == "recall" else "you"
        text = Text()
        text.append(label, style=self.get_component_rich_style("user-item--label"))
        text.append("\n")
        text.append(self.body)
        return text

    def copy_text(self) -> str:
        return self.text


# -- answers: Markdown drawn as cached lines -------------------------------------------------------------
#
# A Markdown widget mounts one widget per block (a 200 KB answer: thousands), and every mount costs a
# full-screen re-layout, so a long answer streamed that way stalls the loop for hundreds of ms at a
# time. An answer here is ONE widget whatever its length (the line API): its text is split into
# top-level blocks, each block is drawn once per width into lines, and only the open last block is
# redrawn as text arrives. Drawing happens in slices of at most `SLICE_S` (a block too big for one
# goes to a thread), so neither a stream nor a resize nor the final render of a huge answer blocks
# the loop for long.


class AssistantItem(QuietResize, ChatItem):
    """One assistant message: its raw text, shown by one `AnswerView` (Markdown as cached lines).

    While it streams, `write()` appends fragments (the chat coalesces them); `finish()` returns at
    once and the view settles the whole answer in slices — `rendered` tells when it is done.
    """

    kind = "assistant"

    def __init__(self, text: str = "", *, partial: bool = False, streaming: bool = False, **kwargs) -> None:
        super().__init__(**_with_classes(kwargs, "-partial" if partial else ""))
        self.raw = display(text)
        self.partial = partial
        self.streaming = streaming
        self.view = SharedStylesAnswerView(
            self.raw, streaming=streaming, caption="assistant", classes="answer"
        )

    def compose(self) -> ComposeResult:
        yield self.view  # its first row says "assistant"
        if self.partial:  # most answers are whole: the mark is mounted only for a partial one
            yield self._partial_mark()

    @staticmethod
    def _partial_mark() -> Static:
        return Static(
            "◆ partial — the answer was cut short; /retry asks again", classes="partial-mark", markup=False
        )

    @property
    def rendered(self) -> bool:
        """The whole answer is parsed as one document and drawn at the current width."""
        return not self.streaming and self.view.rendered

    async def write(self, fragment: str) -> None:
        if not fragment:
            return
        fragment = display(fragment)
        self.raw += fragment
        self.view.append(fragment)

    async def finish(self, text: str | None = None, *, partial: bool | None = None) -> None:
        """End the stream: the final text (if the engine's differs) is parsed once as a whole
        document and drawn in slices after this returns; the raw text is kept beside it."""
        self.streaming = False
        if text is not None:
            self.raw = display(text)
        if partial is not None:
            self.mark_partial(partial)
        self.view.finish(self.raw)

    def mark_partial(self, partial: bool = True) -> None:
        self.partial = partial
        self.set_class(partial, "-partial")
        if partial and self.is_mounted and not self.query(".partial-mark"):
            self.mount(self._partial_mark())

    def copy_text(self) -> str:
        return self.raw


class NoticeItem(ChatItem):
    """An inline notice: lab, cap learned, recovery step, compaction, retry, rejection, error."""

    kind = "notice"

    def __init__(self, text: str, *, level: str = "info", code: str = "", title: str = "", **kwargs) -> None:
        level = level if level in NOTICE_MARKS else "info"
        code_class = f"-code-{re.sub(r'[^a-z0-9-]', '-', code.lower())}" if code else ""
        super().__init__(**_with_classes(kwargs, f"-{level}", code_class))
        self.text = display(text)
        self.level = level
        self.code = code
        self.title = display(title)

    def render(self) -> RenderableType:
        text = Text()
        text.append(f"{NOTICE_MARKS[self.level]} ", style="bold")
        if self.title:
            text.append(f"{self.title}  ", style="bold")
        text.append(self.text)
        return text

    def copy_text(self) -> str:
        return f"{self.title}: {self.text}" if self.title else self.text


class ReportItem(ChatItem):
    """A compact table rendered inline (/cost, /context)."""

    kind = "report"

    def __init__(self, title: str, rows: list[tuple[str, str]], **kwargs) -> None:
        super().__init__(**kwargs)
        self.title = display(title)
        self.rows = [(display(key), display(value)) for key, value in rows]

    def render(self) -> RenderableType:
        from rich.table import Table

        table = Table(
            title=self.title,
            title_justify="left",
            show_header=False,
            box=None,
            padding=(0, 2, 0, 0),
            expand=False,
        )
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, value in self.rows:
            table.add_row(Text(key), Text(value))  # Text: a probe's evidence must not be read as markup
        return table

    def copy_text(self) -> str:
        width = max((len(k) for k, _ in self.rows), default=0)
        return "\n".join([self.title, *(f"{k.ljust(width)}  {v}" for k, v in self.rows)])


def _args_line(name: str, args: dict) -> str:
    if name == "shell" and isinstance(args.get("command"), str):
        return args["command"]
    if isinstance(args.get("path"), str) and len(args) <= 3:
        extra = {k: v for k, v in args.items() if k != "path"}
        return args["path"] + (f" {json.dumps(extra, ensure_ascii=False)}" if extra else "")
    return json.dumps(args, ensure_ascii=False)


class ToolBlock(ChatItem):
    """A tool call: a one-line header (Enter or a click folds it), the arguments, the result, and —
    when the engine asks — an inline approve/deny bar that resolves the approver's future."""

    kind = "tool"

    class Resolved(Message):
        """The user answered an approval prompt."""

        def __init__(self, block: ToolBlock, approved: bool) -> None:
            super().__init__()
            self.block = block
            self.approved = approved

    def __init__(self, call_id: str, name: str, args: dict, *, approvable: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.approvable = approvable  # False: a block of the history (no approval bar: 8 widgets fewer)
        self.call_id = call_id
        self.tool_name = display(name)
        self.args = dict(args)  # shown through display(): see _header and _body
        self.decision = ""  # approved | denied | auto | cancelled
        self.reason = ""
        self.result = ""
        self.is_error = False
        self.chars = 0
        self.spill_path: str | None = None
        self.done = False
        self.stopped = False  # the turn was cancelled before the tool finished (its process was killed)
        self.collapsed = True
        self._future: asyncio.Future[bool | str] | None = None
        self._why = ""
        self.remember = ""  # the allow rule "always" would keep, e.g. Bash(make test)
        self._own_header = False  # the header is drawn by the block, not a child (see compose)
        self.set_state_classes(update=False)

    @property
    def pending(self) -> bool:
        return self._future is not None and not self._future.done()

    def compose(self) -> ComposeResult:
        # A folded block of the history (most of a resumed session's) draws its header itself: one widget
        # fewer to mount, style, lay out and remove for each, paging through the session. Unfolded, the
        # header and the body become widgets.
        self._own_header = not self.approvable and self.collapsed
        if self._own_header:
            return
        yield self._header_widget()
        # A folded block has no body widget (a resumed session mounts dozens): it is mounted when unfolded.
        if not self.collapsed:
            yield self._body_widget()
        if not self.approvable:
            return
        with Vertical(classes="approval-bar"):
            yield Static("", classes="approval-why", markup=False)
            with Horizontal(classes="approval-buttons"):
                yield from self._approval_buttons()

    @staticmethod
    def _approval_buttons() -> ComposeResult:
        yield Button("Approve (y)", variant="success", classes="approve", compact=True)
        yield Button(
            "Session (a)",
            classes="always-session",
            compact=True,
            tooltip="Approve, and allow this exact call for the rest of the session",
        )
        yield Button(
            "Project (p)",
            classes="always-project",
            compact=True,
            tooltip="Approve, and allow this exact call in this project from now on (.bulkhead/settings.toml)",
        )
        yield Button("Deny (n)", variant="error", classes="deny", compact=True)

    def _header_widget(self) -> Static:
        return Static(self._header(), classes="tool-header")

    def _body_widget(self) -> Static:
        return Static(self._body(), classes="tool-body", markup=False)

    def on_mount(self) -> None:
        self._sync(content=False)  # compose drew the header and body as they are now
        if self.pending:  # asked before it was mounted
            self.call_after_refresh(self._sync)

    def _header(self) -> Text:
        status = {
            "": ("…", "running"),
            "approved": ("…", "approved · running"),
            "auto": ("…", "running"),
            "denied": ("✖", "denied"),
            "cancelled": ("✖", "cancelled"),
        }[self.decision or ""]
        mark, word = status
        if self.pending:
            mark, word = "?", "waiting for your approval"
        elif self.stopped and not self.done:
            mark, word = (
                "✖",
                ("approved · " if self.decision == "approved" else "") + "stopped before it finished",
            )
        elif self.done:
            mark = "✖" if self.is_error else "✓"
            decided = self.decision if self.decision in ("approved", "denied", "cancelled") else ""
            word = ("error" if self.is_error else f"{self.chars:,} chars") + (
                f" · {decided}" if decided else ""
            )
        text = Text()
        text.append("▸ " if self.collapsed else "▾ ", style="dim")
        text.append(f"{mark} ", style="bold")
        text.append(f"{self.tool_name} ", style="bold")
        line = display(_args_line(self.tool_name, self.args))
        text.append(line if len(line) <= 90 else line[:89] + "…")
        if word:
            text.append(f"  — {word}", style="dim italic")
        return text

    def _body(self) -> str:
        lines = [f"arguments: {json.dumps(self.args, ensure_ascii=False, indent=2)}"]
        if self.reason:
            lines.append(f"approval: {self.decision} — {self.reason}")
        if self.done:
            label = "error" if self.is_error else "result"
            lines.append(f"{label} ({self.chars:,} chars):\n{self.result}")
            if self.spill_path:
                lines.append(f"full output: {self.spill_path}")
        return display("\n".join(lines))

    def set_state_classes(self, *, update: bool = True) -> None:
        """The classes that show the block's state, in one restyle; `update=False` before it is mounted (none)."""
        failed = self.is_error or self.stopped or self.decision in ("denied", "cancelled")
        self.update_classes(
            {"-collapsed": self.collapsed, "-pending": self.pending, "-failed": failed}, update=update
        )

    def _sync(self, *, content: bool = True) -> None:
        # The classes first, mounted or not: `is_mounted` is still False in on_mount, and a block of a resumed
        # history got no `-collapsed` there (it showed its body under a folded ▸ header).
        self.set_state_classes()
        if not self.is_mounted:
            return
        if content and self._own_header and self.collapsed:
            self.refresh(layout=True)  # its own drawing is the header
        elif content and self._own_header:  # unfolded: the header and the body become widgets
            self._own_header = False
            self.mount(self._header_widget(), self._body_widget())
            self.refresh()
        elif content:
            self.query_one(".tool-header", Static).update(self._header())
            if not self.collapsed:
                body = self.query(".tool-body")
                if body:
                    body.first(Static).update(self._body())
                else:
                    self.mount(self._body_widget(), after=self.query_one(".tool-header"))
        if self.pending:
            remember = (
                f"\n  a / p: also allow {display_line(self.remember)} for this session / in this project"
                if self.remember
                else ""
            )
            self.query_one(".approval-why", Static).update(f"? {display(self._why)}{remember}")

    def toggle(self) -> None:
        self.collapsed = not self.collapsed
        self._sync()

    def on_click(self, event) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and (widget.has_class("tool-header") or (widget is self and self._own_header)):
            self.toggle()

    def render(self) -> RenderResult:
        return self._header() if self._own_header else super().render()

    # -- approval ------------------------------------------------------------------------------------
    def ask(self, why: str, future: asyncio.Future[bool | str], remember: str = "") -> None:
        self._why = why
        self._future = future
        self.remember = remember
        future.add_done_callback(lambda f: self._on_future_done(f))
        self._sync()

    def _on_future_done(self, future: asyncio.Future[bool]) -> None:
        if future.cancelled() and not self.decision:
            self.decision = "cancelled"
            self.reason = "the turn was cancelled"
        self._sync()

    def answer(self, approved: bool | str) -> bool:
        """Resolve the pending approval — True (once), "session" or "project" (always), False (no);
        False when there was none."""
        if not self.pending:
            return False
        assert self._future is not None
        self._future.set_result(approved)
        self.decision = "approved" if approved else "denied"
        if approved in ("session", "project"):
            self.reason = (
                f"always ({'this session' if approved == 'session' else 'this project'}): {self.remember}"
            )
        self._sync()
        self.post_message(self.Resolved(self, bool(approved)))
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        answers = {"approve": True, "always-session": "session", "always-project": "project", "deny": False}
        self.answer(next(answer for cls, answer in answers.items() if event.button.has_class(cls)))

    # -- engine events --------------------------------------------------------------------------------
    def stop(self) -> None:
        """The turn was cancelled: a call that had not finished never will."""
        if not self.done:
            self.stopped = True
            self._sync()

    def set_decision(self, decision: str, reason: str) -> None:
        self.decision = decision
        self.reason = reason
        self._sync()

    def set_result(self, *, is_error: bool, preview: str, chars: int, spill_path: str | None) -> None:
        self.done = True
        self.is_error = is_error
        self.result = preview
        self.chars = chars
        self.spill_path = spill_path
        self._sync()

    def copy_text(self) -> str:
        return self._body()

    def code_blocks(self) -> list[str]:
        return [display(self.result)] if self.result else []
