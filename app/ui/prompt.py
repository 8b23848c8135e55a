"""The prompt: a multi-line TextArea with slash-command completion, history and a busy line.

Enter sends. A newline is Ctrl+J, Alt+Enter or Shift+Enter where the terminal delivers them,
and `\\` + Enter in every terminal. ↑ on the first line and ↓ on the last walk the history,
which is kept per workspace in the data folder. Typing `/` shows the matching slash commands,
typing `@` the workspace's files and folders that fuzzily match what follows (`@clipy` →
`app/cli.py`; the app lists them in a worker and hands the prompt a `FuzzyPaths`); Tab takes the
highlighted one.

Typing is applied in the order it arrives, however fast: every key the prompt acts on — text,
Enter, a newline, Tab, Backspace, the cursor keys — is handled in the prompt's own queue as it
comes. (A key binding is otherwise run only after the key has bubbled up to the app, so in a
burst the characters typed after it landed first.) Enter takes the text out of the prompt at
once: what is typed after it starts the next message.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import Static, TextArea

from app.config import data_home
from app.redact import redact_known
from app.textsafe import display_line, without_unsafe
from app.ui.slash import complete_slash
from app.ui.textual_ext.steady_scrollbars import SteadyScrollbars

if TYPE_CHECKING:
    from app.engine.api.mentions import FuzzyPaths

HISTORY_LIMIT = 1000


def history_path(workspace: str | Path) -> Path:
    """Prompt history of one workspace: `<data>/history/<hash of the folder>.jsonl`."""
    digest = hashlib.sha256(str(Path(workspace).expanduser().resolve()).encode("utf-8")).hexdigest()[:16]
    return data_home() / "history" / f"{digest}.jsonl"


class PromptHistory:
    """Previous prompts, oldest first; appended to a JSON-lines file, best effort."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[str] = []
        self.position: int | None = None  # index into entries while browsing; None = the draft
        self.draft = ""
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                for line in path.read_text(encoding="utf-8").splitlines():
                    with contextlib.suppress(ValueError):
                        entry = json.loads(line)
                        if isinstance(entry, str) and entry:
                            self.entries.append(entry)
            self.entries = self.entries[-HISTORY_LIMIT:]

    def add(self, text: str) -> None:
        self.position = None
        self.draft = ""
        text = redact_known(text)  # a key typed into a prompt is never written down (nor recalled)
        if not text.strip() or (self.entries and self.entries[-1] == text):
            return
        self.entries.append(text)
        del self.entries[:-HISTORY_LIMIT]
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (json.dumps(text, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
            finally:
                os.close(fd)

    def previous(self, current: str) -> str | None:
        if not self.entries:
            return None
        if self.position is None:
            self.draft = current
            self.position = len(self.entries) - 1
        elif self.position > 0:
            self.position -= 1
        else:
            return None
        return self.entries[self.position]

    def next(self) -> str | None:
        if self.position is None:
            return None
        if self.position < len(self.entries) - 1:
            self.position += 1
            return self.entries[self.position]
        self.position = None
        return self.draft


# Keys the prompt hands to the chat when its own text does not need them (see `_chat_may_have`).
CHAT_KEYS = {"pageup": "page_up", "pagedown": "page_down", "home": "jump_top", "end": "jump_latest"}


class PromptArea(SteadyScrollbars, TextArea):
    """Where you type. Enter sends; Ctrl+J / Alt+Enter add a newline."""

    HELP = """\
## Prompt

- **Enter**: send · **Ctrl+J** or **Alt+Enter** (Shift+Enter where it arrives): new line
- **↑** on the first line / **↓** on the last: previous / next prompt of this workspace
- **/**: slash commands — **Tab** completes the highlighted one, ↑/↓ choose
- **@path**: attach a file (or list a folder) of the workspace — fuzzy: `@clipy` finds `app/cli.py` (recent and shallow files first, nothing .gitignore'd); **Tab** takes the highlighted one
  (`@shot.png`, or a pasted image path, attaches the image where the route takes images)
- **# text** on one line: add it to the project's instruction file — AGENTS.md, or CLAUDE.md where that is the one the project has (as `/memory text`; `/memory` names it)
- **PageUp / PageDown** scroll the chat while the prompt's text is all in view; **Home / End** (empty prompt):
  the chat's top / latest output
- **Esc** or **Ctrl+C**: cancel the running turn (idle, Ctrl+C clears the prompt; twice quits) · **Ctrl+O**: move into the chat to copy
"""

    NEWLINE_KEYS = "ctrl+j,alt+enter,shift+enter"
    BINDINGS = [
        Binding(
            NEWLINE_KEYS,
            "newline",
            "Newline",
            tooltip="Insert a line break (Enter sends; \\ + Enter too)",
            show=False,
            id="prompt.newline",
        ),
        Binding("tab", "complete", "Complete", show=False, id="prompt.complete"),
        Binding(
            "shift+tab",
            "approval_cycle",
            "Approval",
            show=False,
            id="prompt.approval",
            tooltip="Step the approval mode: ask, auto-read, auto-edit (/approval names any)",
        ),
        Binding("f6", "app.focus_chat", show=False),  # TextArea's F6 (select line) would hide the app's
    ]

    completions: reactive[list[tuple[str, str]]] = reactive(list, init=False, always_update=True)
    selected: reactive[int] = reactive(0, init=False)

    def render_line(self, y: int) -> Strip:
        """A line of what was typed or pasted, drawn without the characters a terminal would interpret
        (ESC, C1, bidi overrides — zero cells wide, so the cursor stays right); the text sent keeps them."""
        strip = super().render_line(y)
        if all(control or without_unsafe(text) is text for text, _style, control in strip):
            return strip
        return Strip(
            [
                segment if segment.control else Segment(without_unsafe(segment.text), segment.style)
                for segment in strip
            ],
            strip.cell_length,
        )

    class Submitted(Message):
        def __init__(self, prompt: PromptArea, text: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.text = text

    class ScrollChat(Message):
        """A key the prompt does not need now, for the chat: `action` is one of CHAT_KEYS' values."""

        def __init__(self, action: str) -> None:
            super().__init__()
            self.action = action

    class CompletionsChanged(Message):
        def __init__(self, completions: list[tuple[str, str]], selected: int) -> None:
            super().__init__()
            self.completions = completions
            self.selected = selected

    def __init__(
        self, *, history: PromptHistory | None = None, workspace: Path | None = None, **kwargs
    ) -> None:
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            placeholder="Ask anything · / commands · @ files · Enter sends · Ctrl+J new line · F1 help",
            **kwargs,
        )
        self.prompt_history = history or PromptHistory(None)
        self.workspace = workspace or Path.cwd()
        # The values `/model` and `/recall` take (command → [(value, help)]); set by the app.
        self.slash_arguments: Callable[[str], list[tuple[str, str]]] | None = None
        # The keys that insert a newline (the app sets them from the [keys] table: "prompt.newline").
        self.newline_keys: frozenset[str] = frozenset(self.NEWLINE_KEYS.split(","))
        # Fuzzy `@` completion: the app's file list, what it says about it, and how to ask for a fresh one.
        self.file_matcher: FuzzyPaths | None = None
        self.files_status = ""
        self.wants_files: Callable[[], None] | None = None
        # More slash commands to offer (the custom ones from Markdown files); set by the app.
        self.slash_extra: Callable[[], list[tuple[str, str]]] | None = None
        self._told_tab = False

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key in self.newline_keys:
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        if key == "enter":
            event.stop()
            event.prevent_default()
            if self.completions and self._completion_differs():
                self.action_complete()
            elif self._backslash_before_cursor():
                row, column = self.cursor_location
                self._replace_via_keyboard("\n", (row, column - 1), (row, column))
            else:
                self.action_submit()
            return
        if key == "tab":  # completes; with nothing to complete it stays here (it used to leave for a panel)
            event.stop()
            event.prevent_default()
            self.action_complete()
            return
        if key == "escape" and self.completions:
            event.stop()
            event.prevent_default()
            self.completions = []
            return
        if key in CHAT_KEYS and self._chat_may_have(key):
            event.stop()
            event.prevent_default()
            self.post_message(self.ScrollChat(CHAT_KEYS[key]))
            return
        await super()._on_key(event)
        if event.is_printable:
            return
        # Any other key bound on the prompt (Backspace, arrows, Ctrl+W, history…) runs here, in order
        # with the text around it, instead of after bubbling up to the app.
        active = self.screen.active_bindings.get(key)
        if active is not None and active.node is self and active.enabled:
            event.stop()
            event.prevent_default()
            await self.run_action(active.binding.action)

    async def action_approval_cycle(self) -> None:
        """Shift+Tab: the app steps the approval mode (`app.ui.approval_mode`)."""
        await self.run_action("app.approval_cycle")

    def _chat_may_have(self, key: str) -> bool:
        """PageUp / PageDown scroll the chat while all of the prompt's text is in view (it has nothing to page
        through); Home / End while the prompt is empty (no line to go along)."""
        if key in ("pageup", "pagedown"):
            return self.max_scroll_y == 0 and not self.completions
        return not self.text

    def _backslash_before_cursor(self) -> bool:
        """`\\` + Enter: a newline in any terminal (the backslash is replaced), as in Claude Code."""
        start, end = self.selection
        row, column = self.cursor_location
        return start == end and column > 0 and self.document.get_line(row)[column - 1] == "\\"

    def _completion_differs(self) -> bool:
        word = self.completions[self.selected][0]
        if word.startswith("@"):
            return word != self._mention_at_cursor()[0]
        return not self.text.strip().startswith(word) and word.startswith(self.text.strip())

    def _mention_at_cursor(self) -> tuple[str, tuple[int, int]]:
        """The `@…` word just before the cursor (else ""), and where it starts."""
        from app.engine.api.mentions import mention_at_end  # here: the first frame does not import the engine

        row, column = self.cursor_location
        word = mention_at_end(self.document.get_line(row)[:column])
        return word, (row, column - len(word))

    def typing_mention(self) -> bool:
        """The cursor is at the end of an `@…` word (its completion list is or would be showing)."""
        return bool(self._mention_at_cursor()[0])

    def action_submit(self) -> None:
        """Take the text out now (what is typed next is the next message) and hand it to the app;
        the app puts it back (`restore`) if it cannot take it."""
        text = self.text
        if not text.strip():
            return
        self.prompt_history.add(text)
        self.clear()
        self.post_message(self.Submitted(self, text))

    def restore(self, text: str) -> None:
        """Put back a submitted text the app could not take, before whatever was typed since."""
        typed = self.text
        self.set_text(f"{text}\n{typed}" if typed.strip() else text)

    def action_newline(self) -> None:
        start, end = self.selection
        self._replace_via_keyboard("\n", start, end)

    def set_text(self, text: str) -> None:
        self.load_text(text)
        last = self.document.line_count - 1
        self.cursor_location = (last, len(self.document.get_line(last)))

    # -- history ---------------------------------------------------------------------------------------
    def action_cursor_up(self, select: bool = False) -> None:
        if self.completions and not select:
            self.selected = (self.selected - 1) % len(self.completions)
            return
        if not select and self.cursor_location[0] == 0:
            entry = self.prompt_history.previous(self.text)
            if entry is not None:
                self.set_text(entry)
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if self.completions and not select:
            self.selected = (self.selected + 1) % len(self.completions)
            return
        if not select and self.cursor_location[0] == self.document.line_count - 1:
            entry = self.prompt_history.next()
            if entry is not None:
                self.set_text(entry)
            return
        super().action_cursor_down(select)

    # -- completion ------------------------------------------------------------------------------------
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.refresh_completions()

    def refresh_completions(self) -> None:
        completions = complete_slash(
            self.text,
            self.slash_arguments,
            self.slash_extra() if self.slash_extra and self.text.startswith("/") else (),
        )
        if not completions:
            word = self._mention_at_cursor()[0]
            completions = [c for c in self.complete_file(word) if c[0] != word] if word else []
        self.completions = completions
        self.selected = 0

    def complete_file(self, word: str) -> list[tuple[str, str]]:
        """`@…` completions: fuzzy over the workspace's files, segment by segment for a path outside it
        (or while the first listing is still running)."""
        from app.engine.api.mentions import complete_mention, describe_completion, is_explicit_path

        typed = word[1:]
        if self.wants_files is not None:
            self.wants_files()  # the app lists the files (again) in a worker when it has none or they are old
        if self.file_matcher is None or is_explicit_path(typed):
            return complete_mention(word, self.workspace)
        return [describe_completion(path, is_dir) for path, is_dir in self.file_matcher.complete(typed)]

    def watch_completions(self, completions: list[tuple[str, str]]) -> None:
        self.post_message(self.CompletionsChanged(completions, self.selected))

    def watch_selected(self, selected: int) -> None:
        self.post_message(self.CompletionsChanged(self.completions, selected))

    def action_complete(self) -> None:
        if not self.completions:
            if not self._told_tab:  # once: Tab completes; the chat and the panels have their own keys
                self._told_tab = True
                self.notify(
                    "Tab completes / commands and @ files — nothing to complete here. Ctrl+O moves to the "
                    "chat, Alt+1…7 to a panel; Esc comes back.",
                    timeout=5,
                )
            return
        word = self.completions[self.selected][0]
        if word.startswith("@"):
            _, start = self._mention_at_cursor()
            self.replace(word if word.endswith("/") else word + " ", start, self.cursor_location)
            return
        self.set_text(word + " ")


class PromptBox(Vertical):
    """The busy line, the completion list and the prompt."""

    busy: reactive[bool] = reactive(False, init=False)
    busy_text: reactive[str] = reactive("", init=False)
    waiting: reactive[str] = reactive("", init=False)  # a line about messages held until the session is ready

    def __init__(
        self, *, history: PromptHistory | None = None, workspace: Path | None = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self._history = history
        self._workspace = workspace

    def compose(self) -> ComposeResult:
        yield Static("", id="completions", markup=False)
        yield Static("", id="busy", markup=False)
        yield PromptArea(history=self._history, workspace=self._workspace, id="prompt")

    @property
    def prompt(self) -> PromptArea:
        return self.query_one(PromptArea)

    def on_prompt_area_completions_changed(self, event: PromptArea.CompletionsChanged) -> None:
        widget = self.query_one("#completions", Static)
        if not event.completions:
            widget.display = False
            return
        text = Text()
        for index, (word, help_) in enumerate(event.completions):
            style = "reverse bold" if index == event.selected else "bold"
            if index:
                text.append("\n")
            text.append(f" {display_line(word)} ", style=style)  # file names are outside text
            text.append(f"  {display_line(help_)}", style="dim")
        mention = event.completions[0][0].startswith("@")
        status = self.prompt.files_status if mention else ""
        text.append(
            "\n Tab completes · ↑/↓ choose · Enter "
            + ("takes it" if mention else "runs")
            + (f" · {status}" if status else ""),
            style="dim italic",
        )
        widget.update(text)
        widget.display = True

    def _busy_line(self) -> str:
        if self.busy:
            return f"● {self.busy_text or 'working'} — Esc cancels"
        return f"◌ {self.waiting}" if self.waiting else ""

    def _show_busy_line(self) -> None:
        widget = self.query_one("#busy", Static)
        line = self._busy_line()
        widget.update(line)
        widget.display = bool(line)

    def watch_busy(self, busy: bool) -> None:
        self._show_busy_line()
        self.set_class(busy, "-busy")

    def watch_busy_text(self, text: str) -> None:
        if self.busy:
            self._show_busy_line()

    def watch_waiting(self, text: str) -> None:
        self._show_busy_line()
