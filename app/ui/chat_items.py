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
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Button, Input, Static

from app.textsafe import display, display_line
from app.ui.diff_text import diff_text
from app.ui.markdown.widget import SharedStylesAnswerView
from app.ui.textual_ext.quiet_resize import QuietResize

if TYPE_CHECKING:  # imported where used: the first frame does not import the tools
    from app.tools.approval import Denial

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
    if name in ("edit_file", "write_file") and isinstance(args.get("path"), str):  # the diff shows the change
        content = args.get("content")
        if name == "write_file" and isinstance(content, str):
            lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
            return f"{args['path']} ({lines:,} line{'' if lines == 1 else 's'})"
        return args["path"]
    if isinstance(args.get("path"), str) and len(args) <= 3:
        extra = {k: v for k, v in args.items() if k != "path"}
        return args["path"] + (f" {json.dumps(extra, ensure_ascii=False)}" if extra else "")
    return json.dumps(args, ensure_ascii=False)


class ReasonInput(Input):
    """The one line "deny, and tell the model why" asks for: Enter sends it, Esc goes back to the card."""

    keeps_escape = True  # the app's Esc (cancel, back to the prompt) leaves this one to the input
    BINDINGS = [Binding("escape", "back", "Back", show=False, id="approval.reason_back")]

    def action_back(self) -> None:
        for ancestor in self.ancestors:
            if isinstance(ancestor, ToolBlock):
                ancestor.end_reason()
                return


class ToolBlock(ChatItem):
    """A tool call: a one-line header (Enter or a click folds it), the arguments, the result, and —
    when the engine asks — an inline approval card that resolves the approver's future: why it asks, what
    an edit would change (the diff, coloured; a new file's first lines), and the answers."""

    kind = "tool"
    COMPONENT_CLASSES = {"tool-block--added", "tool-block--removed", "tool-block--hunk"}
    CHANGE_TOOLS = ("edit_file", "write_file")  # their result is a diff: drawn in colour

    class Resolved(Message):
        """The user answered an approval prompt."""

        def __init__(self, block: ToolBlock, approved: bool) -> None:
            super().__init__()
            self.block = block
            self.approved = approved

    def __init__(
        self,
        call_id: str,
        name: str,
        args: dict,
        *,
        approvable: bool = True,
        asked_only: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.approvable = approvable  # False: a block of the history (no approval bar: 8 widgets fewer)
        # True: a question about no tool call of the model's (an image or a restore outside the workspace):
        # the block holds the card and then the answer; nothing runs in it
        self.asked_only = asked_only
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
        self._future: asyncio.Future[bool | str | Denial] | None = None
        self._why = ""
        self.preview = None  # app.tools.change_preview.ChangePreview of an edit waiting for approval
        self.preview_rows = 0  # at most this many lines of it (what fits beside the card in the chat)
        self.remember = ""  # the allow rule "always" would keep, e.g. Bash(make test); "": a / p not offered
        self.no_always = ""  # why "always" is not offered (an ask rule, a hook, a compound command)
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
            yield Static("", classes="approval-preview", markup=False)
            with Horizontal(classes="approval-buttons"):
                yield from self._approval_buttons()
            yield ReasonInput(
                placeholder="why not? one line for the model — Enter sends it, Esc goes back",
                classes="deny-reason",
            )

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
        yield Button(
            "Deny, say why (d)",
            classes="deny-why",
            compact=True,
            tooltip="Deny, and write one line the model gets as the tool's result",
        )

    def _header_widget(self) -> Static:
        return Static(self._header(), classes="tool-header")

    def _body_widget(self) -> Static:
        return Static(self._body_shown(), classes="tool-body", markup=False)

    def _body_shown(self) -> Text:
        """The body as drawn: an edit's diff in colour (`-` / `+` lines told apart)."""
        text = Text(display(self._body()))
        if self.tool_name in self.CHANGE_TOOLS and self.done and not self.is_error:
            head, _, diff = text.plain.partition("\n@@")
            if diff:
                return Text(head + "\n") + diff_text("@@" + diff, self._diff_styles())
        return text

    def _diff_styles(self) -> dict[str, Any]:
        return {
            kind: self.get_component_rich_style(f"tool-block--{kind}", partial=True)
            for kind in ("added", "removed", "hunk")
        }

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
        elif self.asked_only:
            mark, word = ("✓", "approved") if self.decision == "approved" else ("✖", self.decision or "asked")
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
                    body.first(Static).update(self._body_shown())
                else:
                    self.mount(self._body_widget(), after=self.query_one(".tool-header"))
        if self.pending:
            if self.remember:
                remember = (
                    f"\n  a / p: also allow {display_line(self.remember)} for this session / in this project"
                )
            elif self.no_always:
                remember = f"\n  no a / p (always allow): {display(self.no_always)}"
            else:
                remember = ""
            for button in self.query(".always-session, .always-project").results(Button):
                button.display = bool(self.remember)
            self.query_one(".approval-why", Static).update(f"? {display(self._why)}{remember}")
            preview = self.query_one(".approval-preview", Static)
            preview.display = self.preview is not None
            if self.preview is not None:
                preview.update(self._preview_shown())

    def toggle(self) -> None:
        self.collapsed = not self.collapsed
        self._sync()

    def on_click(self, event) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and (widget.has_class("tool-header") or (widget is self and self._own_header)):
            self.toggle()

    def render(self) -> RenderResult:
        return self._header() if self._own_header else super().render()

    def _preview_shown(self) -> Text:
        """The card's view of the change: its summary, then the diff (or a new file's head) in colour."""
        preview = self.preview
        text = Text()
        if preview is None:
            return text
        text.append(display_line(preview.summary), style="bold")
        if preview.problem and preview.problem not in preview.summary:
            text.append("\n" + display(preview.problem), style=self._diff_styles()["removed"])
        body = display(preview.text)
        lines = body.splitlines(keepends=True)
        shown = lines[: self.preview_rows] if self.preview_rows else lines
        more = preview.more_lines + len(lines) - len(shown)
        if shown:
            text.append("\n")
            if preview.new_file:
                text.append("".join(shown).rstrip("\n"))
            else:
                text.append_text(diff_text("".join(shown).rstrip("\n"), self._diff_styles()))
        if more:
            whole = "the file" if preview.new_file else "the diff"
            text.append(
                f"\n… {more:,} more lines ({whole} is in the result once it runs)", style="dim italic"
            )
        return text

    # -- approval ------------------------------------------------------------------------------------
    def ask(
        self,
        why: str,
        future: asyncio.Future[bool | str | Denial],
        remember: str = "",
        preview=None,
        preview_rows: int = 0,
        *,
        no_always: str = "",
    ) -> None:
        """Wait for an answer: `remember` is the rule "always" keeps ("" when it is not offered, `no_always`
        saying why); `preview` (a ChangePreview) what an edit would change, at most `preview_rows` lines of it
        (0: all)."""
        self._why = why
        self._future = future
        self.remember = remember
        self.no_always = no_always
        self.preview = preview
        self.preview_rows = preview_rows
        future.add_done_callback(lambda f: self._on_future_done(f))
        self._sync()

    def start_reason(self) -> bool:
        """`d`: ask for the one line the model gets with the denial (the keyboard goes to it)."""
        if not self.pending or not self.is_mounted:
            return False
        box = self.query_one(ReasonInput)
        box.add_class("-asking")
        box.focus()
        return True

    def end_reason(self) -> None:
        """Esc in the reason line: back to the card, still waiting."""
        box = self.query_one(ReasonInput)
        box.remove_class("-asking")
        box.value = ""
        for ancestor in self.ancestors:
            if isinstance(ancestor, Widget) and ancestor.can_focus:
                ancestor.focus()  # the chat, whose keys answer the card
                return

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, ReasonInput):
            event.stop()
            reason = " ".join(event.value.split())
            if reason:
                from app.tools.approval import Denial

                self.answer(Denial(reason))
            else:
                self.answer(False)  # nothing said: a plain no

    def _on_future_done(self, future: asyncio.Future[bool | str | Denial]) -> None:
        if future.cancelled() and not self.decision:
            self.decision = "cancelled"
            self.reason = "the turn was cancelled"
        self._sync()

    def answer(self, approved: bool | str | Denial) -> bool:
        """Resolve the pending approval — True (once), "session" or "project" (always), False (no), or a
        Denial (no, and what to tell the model); False when there was none."""
        from app.tools.approval import Denial

        if not self.pending:
            return False
        assert self._future is not None
        self._future.set_result(approved)
        denied = approved is False or isinstance(approved, Denial)
        self.decision = "denied" if denied else "approved"
        if isinstance(approved, Denial):
            self.reason = f"denied — you told the model: {approved.said}"
        if approved in ("session", "project") and self.remember:
            self.reason = (
                f"always ({'this session' if approved == 'session' else 'this project'}): {self.remember}"
            )
        self._sync()
        self.post_message(self.Resolved(self, not denied))
        return True

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.has_class("deny-why"):
            self.start_reason()
            return
        answers: dict[str, bool | str] = {
            "approve": True,
            "always-session": "session",
            "always-project": "project",
            "deny": False,
        }
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
