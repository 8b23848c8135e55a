"""The answer view: a streamed answer, drawn line by line: one widget however long the answer grows.

Mounting a Markdown block widget per paragraph made Textual re-lay out the whole screen
for each block (≈1,000 mounts for a 32 KB answer): typing stalled for seconds while an
answer streamed. `AnswerView` parses the text into top-level blocks (as Textual's
MarkdownStream does), draws each finished block once per width with the theme's Markdown
styles, and re-parses only the open last block — in time slices that give the event loop
back every few milliseconds.

The text is model output: it goes through `app.textsafe.display` as it comes in, and so does what
Markdown makes of it (a character reference such as `&#x202e;` decodes to a bidi override), so
nothing drawn holds an escape sequence, a C1 control or a bidi override.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from time import perf_counter
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.color import Color
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.geometry import Region, Size
from textual.message import Message
from textual.selection import Selection
from textual.strip import Strip
from textual.style import Style
from textual.timer import Timer
from textual.widget import Widget

from app.textsafe import display, display_line
from app.ui.markdown.painter import STYLE_NAMES, DrawnLine, Line, Painter, block_margins
from app.ui.markdown.parser import (
    REFERENCE_DEFINITION,
    cold_languages,
    main_parser,
    parse_markdown,
    split_blocks,
)
from app.ui.selection import selected_cells
from app.ui.textual_ext.quiet_resize import QuietResize, forget_measures, measure_again

if TYPE_CHECKING:  # markdown-it comes with the first parse (`app.ui.markdown.parser`)
    from markdown_it.token import Token

SLICE_S = 0.012  # the most drawing one slice does before it gives the event loop back
SLICE_GAP_S = 0.004  # the pause between two slices: frames, keys and timers run in it
SYNC_PARSE_CHARS = (
    24_000  # parse a whole answer on the loop up to this size (≈15 ms); larger ones in a thread
)
BIG_BLOCK_CHARS = 4_000  # a block larger than this is parsed and drawn in a thread (a code block: ≈12 ms)
TAIL_DUTY = 0.25  # the open last block is re-parsed and redrawn at most this share of the time


class _Block:
    """One top-level block of an answer: its source, and its lines for one (width, palette)."""

    __slots__ = ("source", "tokens", "top", "bottom", "lines", "drawn_for", "_estimate")

    def __init__(self, source: str, tokens: list[Token] | None) -> None:
        self.source = source
        self.tokens = tokens  # dropped once drawn; parsed again from the source if it must be redrawn
        self.top, self.bottom = block_margins(tokens[0]) if tokens else (0, 0)
        self.lines: list[DrawnLine] | None = None
        self.drawn_for: tuple | None = None
        self._estimate: tuple[int, int] = (-1, 0)

    def height(self, width: int, key: tuple) -> int:
        if self.lines is not None and self.drawn_for == key:
            return len(self.lines)
        if self._estimate[0] != width:  # not drawn at this width yet: a guess from the source
            lines = self.source.rstrip("\n").split("\n")
            usable = max(1, width - 4)
            self._estimate = (width, sum(max(1, -(-cell_len(line) // usable)) for line in lines))
        return self._estimate[1]


def _swap_background(strip: Strip, old: object, new: RichStyle) -> Strip:
    """The strip with the background it was drawn on replaced (the cursor highlights an item)."""
    segments = []
    for text, style, control in strip:
        if style is not None and style.bgcolor == old:
            style = style + new
        segments.append(Segment(text, style, control))
    return Strip(segments, strip.cell_length)


class AnswerView(QuietResize, Widget):
    """An answer's Markdown drawn as lines (the line API): one widget however long the answer is.

    The text is split into top-level blocks. While it streams, every block but the last is final —
    it is drawn once per width — and only the open last block is re-parsed and redrawn as text
    arrives (at most `TAIL_DUTY` of the time). `finish()` parses the whole text once as a document
    (in a thread when it is large) and redraws only the blocks that came out different. Drawing on
    the loop happens in slices of at most `SLICE_S`; a block too big for a slice (a 50 KB code
    block, the lab's one-paragraph `!big`) is parsed and drawn in a thread instead. Blocks not drawn
    yet at this width keep a height guessed from their source until they are.
    """

    DEFAULT_CSS = """
    AnswerView {
        height: auto;
        width: 1fr;
    }
    AnswerView > .answer--h1 {
        color: $markdown-h1-color; background: $markdown-h1-background; text-style: $markdown-h1-text-style;
    }
    AnswerView > .answer--h2 {
        color: $markdown-h2-color; background: $markdown-h2-background; text-style: $markdown-h2-text-style;
    }
    AnswerView > .answer--h3 {
        color: $markdown-h3-color; background: $markdown-h3-background; text-style: $markdown-h3-text-style;
    }
    AnswerView > .answer--h4 {
        color: $markdown-h4-color; background: $markdown-h4-background; text-style: $markdown-h4-text-style;
    }
    AnswerView > .answer--h5 {
        color: $markdown-h5-color; background: $markdown-h5-background; text-style: $markdown-h5-text-style;
    }
    AnswerView > .answer--h6 {
        color: $markdown-h6-color; background: $markdown-h6-background; text-style: $markdown-h6-text-style;
    }
    AnswerView > .answer--em { text-style: italic; }
    AnswerView > .answer--strong { text-style: bold; }
    AnswerView > .answer--strike { text-style: strike; }
    AnswerView > .answer--link { text-style: underline; }
    AnswerView > .answer--code-inline { background: $warning 10%; color: $text-warning 95%; }
    AnswerView:light > .answer--code-inline { background: $error 5%; color: $text-error 95%; }
    AnswerView > .answer--fence { color: $foreground 85%; background: $background-darken-1; }
    AnswerView:light > .answer--fence { background: $background-lighten-1; }
    AnswerView > .answer--quote { background: $boost; }
    AnswerView > .answer--quote-border { color: $text-primary 50%; }
    AnswerView:light > .answer--quote-border { color: $text-secondary; }
    AnswerView > .answer--bullet { color: $text-primary; }
    AnswerView:light > .answer--bullet { color: $text-secondary; }
    AnswerView > .answer--hr { color: $secondary; }
    AnswerView > .answer--table-header { color: $primary; text-style: bold; }
    AnswerView > .answer--table-lines { color: $foreground 20%; }
    AnswerView > .answer--caption { color: $text-muted; text-style: bold; }
    """

    STYLE_NAMES = STYLE_NAMES
    COMPONENT_CLASSES = {f"answer--{name}" for name in STYLE_NAMES} | {"answer--caption"}

    class Grew(Message):
        """The answer got taller outside a chat append (a slice drew more of it): keep following."""

    def __init__(self, text: str = "", *, streaming: bool = False, caption: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        text = display(text)
        # A caption (the chat's "assistant") is the first row, drawn here: one widget fewer per answer.
        self._caption = display_line(caption)
        self._top = 1 if caption else 0  # the row the first block starts on
        self._text = text
        self._streaming = streaming
        self._settled_chars = 0  # while streaming: text before this offset is in final blocks
        self._blocks: list[_Block] = []  # final blocks (all of them once parsed as one document)
        self._tail: _Block | None = None  # while streaming: the open last block
        self._parsed = False  # the whole text is parsed as one document
        self._parse_pending = False
        self._ingest_pending = False
        self._tail_due = 0.0
        self._generation = 0  # bumped whenever the text is replaced: late thread results are dropped
        self._jobs = 0  # parses or big blocks' drawings running in a thread (one started at a time)
        self._width = 0
        self._painter: Painter | None = None
        self._painter_key: tuple = ()
        self._painted_bg: Color | None = None
        self._line_background = None
        self._display: list[_Block] = []
        self._ys: list[int] = []
        self._height = self._top
        # The height the last layout request was made for. Not what the last layout measured: a layout can
        # measure the answer in one container size while its item's height comes from an older measure (see
        # `quiet_resize.measure_again`), and taking that measure for "laid out" left the item short for good.
        self._measured_height = -1
        self._announced_height = 0  # the height the chat was last told of (Grew) or grew by an append
        # What the drawn lines Textual has cached were made of: (block, top row, its lines) as last repainted.
        # A change repaints from the first row that differs, not the whole answer (see `_repaint_changed`).
        self._painted: list[tuple[_Block, int, list[DrawnLine] | None]] = []
        self._painted_height = 0
        self._timer: Timer | None = None
        self._keep_tokens = False  # the document defines reference links: a block alone would lose them
        self._style_table: list[RichStyle | None] = [None]
        self._caption_style: RichStyle | None = None
        self._style_index: dict[RichStyle | None, int] = {None: 0}
        if not streaming:
            if not text:  # nothing to parse (the chat's hidden style holder): markdown-it waits for an answer
                self._adopt(text, [], {})
            elif len(text) <= SYNC_PARSE_CHARS:
                self._adopt(text, *parse_markdown(text))
            else:
                self._parse_pending = True

    # -- state ---------------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        return self._text

    @property
    def rendered(self) -> bool:
        """Parsed as one document and every block drawn at the current width."""
        return self._parsed and not self._streaming and not self._jobs and not self._draw_pending()

    @property
    def block_sources(self) -> list[str]:
        """The Markdown source of each block shown, in order (put together: the text)."""
        return [block.source for block in self._display]

    def rendered_text(self) -> str:
        """The text of the drawn lines (what the screen shows, without styles)."""
        selected = self.get_selection(Selection(None, None))
        return selected[0] if selected is not None else ""

    def on_mount(self) -> None:
        if self._parse_pending:
            self._start_parse()

    def on_unmount(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    # -- feeding -------------------------------------------------------------------------------------------
    def append(self, fragment: str) -> None:
        """More streamed text: the new final blocks and the open one are drawn now (within a slice)."""
        if not fragment:
            return
        self._text += display(fragment)
        self._parsed = False
        self._ingest_pending = True
        self._work(announce=False)

    def set_text(self, text: str) -> None:
        """Replace the whole text; blocks whose source is unchanged keep their drawing."""
        self._text = text = display(text)
        self._generation += 1  # a parse or an ingest still running in a thread is for the old text
        self._parsed = False
        if self._streaming:  # take it in again from the start, as streamed text
            self._blocks, self._tail, self._settled_chars = [], None, 0
            self._ingest_pending = True
            self._work()
        else:
            self._start_parse()

    def finish(self, text: str | None = None) -> None:
        """The stream ended (with `text` if the engine's final text differs from what streamed).

        The blocks already final stay as they are: a top-level block that a later line has closed
        parses the same in the whole document (as Markdown's own stream assumes), so only the text
        after them is parsed, and its last block becomes final too. The whole text is parsed again as
        one document (in a thread when large) only where that does not hold: a text that defines
        reference links (`[x]: url` changes how earlier blocks read), or a final text that differs.
        """
        self._streaming = False
        self._ingest_pending = False
        self._generation += 1  # an ingest still running in a thread is for the stream: dropped
        text = display(text) if text is not None else None
        if text is not None and text != self._text:
            self._text = text
            self._parsed = False
            self._start_parse()
        elif not self._parsed:
            if REFERENCE_DEFINITION.search(self._text):
                self._start_parse()
            elif len(self._text) - self._settled_chars > BIG_BLOCK_CHARS:
                self._ingest_in_thread(final=True)
            else:
                tail = self._text[self._settled_chars :]
                self._take_pieces(split_blocks(tail, main_parser().parse(tail)), final=True)
                self._relayout()
                self._kick(0)

    def _start_parse(self) -> None:
        text = self._text
        self._parse_pending = False
        if len(text) <= SYNC_PARSE_CHARS or not self.is_attached:
            self._adopt(text, *parse_markdown(text))
            self._kick(0)
            return
        generation = self._generation

        async def parse() -> None:
            try:
                tokens, env = await asyncio.to_thread(parse_markdown, text)
            finally:
                self._jobs -= 1
            if generation == self._generation and text == self._text:
                self._adopt(text, tokens, env)
            self._kick(0)

        self._jobs += 1
        self.run_worker(parse(), group="answer-parse", exit_on_error=False, name="parse answer")

    def _adopt(self, text: str, tokens: list[Token], env: dict) -> None:
        """Take the whole-document parse: keep every block whose source did not change."""
        reusable: dict[str, list[_Block]] = {}
        self._keep_tokens = bool(env.get("references"))
        if not self._keep_tokens:  # reference links change how other blocks render: redraw all
            for block in [*self._blocks, *([self._tail] if self._tail else [])]:
                reusable.setdefault(block.source, []).append(block)
        blocks = []
        for source, group in split_blocks(text, tokens):
            same = reusable.get(source)
            blocks.append(same.pop(0) if same else _Block(source, group))
        self._blocks = blocks
        self._tail = None
        self._settled_chars = len(text)
        self._parsed = True
        self._relayout()

    def _take_pieces(self, pieces: list[tuple[str, list[Token]]], *, final: bool = False) -> None:
        """A parse of the text after the final blocks: all of its blocks but the last become final
        (all of them when the stream has ended); an open block whose source did not change keeps its drawing."""
        tail = self._tail
        if tail is not None and pieces and tail.source == pieces[-1][0]:
            pieces = [*pieces[:-1], (tail.source, tail)]  # type: ignore[list-item]
        for source, group in pieces if final else pieces[:-1]:
            self._blocks.append(group if isinstance(group, _Block) else _Block(source, group))
            self._settled_chars += len(source)
        if final:
            self._tail = None
            self._parsed = True
        elif not pieces:
            self._tail = None
        elif not isinstance(pieces[-1][1], _Block):
            self._tail = _Block(*pieces[-1])

    def _ingest(self) -> None:
        self._ingest_pending = False
        tail = self._text[self._settled_chars :]
        self._take_pieces(split_blocks(tail, main_parser().parse(tail)))

    def _ingest_in_thread(self, *, final: bool = False) -> None:
        """The open block is too big to parse on the loop at every append: parse (and draw) it in a thread."""
        self._ingest_pending = False
        tail = self._text[self._settled_chars :]
        generation, settled = self._generation, self._settled_chars
        painter, width = self._ensure_painter() if self._width else None, self._width

        def work() -> tuple[list, list[Line] | None]:
            pieces = split_blocks(tail, parse_markdown(tail)[0])
            lines = painter.paint(pieces[-1][1], width) if pieces and painter is not None else None
            return pieces, lines

        async def job() -> None:
            try:
                pieces, lines = await asyncio.to_thread(work)
            finally:
                self._jobs -= 1
            if generation == self._generation and settled == self._settled_chars and self._streaming != final:
                self._take_pieces(pieces, final=final)
                last = self._display_last() if final else self._tail
                if (
                    lines is not None
                    and last is not None
                    and painter is not None
                    and painter is self._painter
                ):
                    last.lines = painter.encode(lines)
                    last.drawn_for = (width, self._painter_key)
                self._relayout()
            self._kick(0)

        self._jobs += 1
        self.run_worker(job(), group="answer-parse", exit_on_error=False, name="parse answer")

    def _display_last(self) -> _Block | None:
        return self._tail if self._tail is not None else (self._blocks[-1] if self._blocks else None)

    def _draw_in_thread(self, block: _Block) -> None:
        painter, width, key, generation = self._ensure_painter(), self._width, self._key(), self._generation
        tokens = block.tokens

        def work() -> list[Line]:
            return painter.paint(tokens if tokens is not None else parse_markdown(block.source)[0], width)

        async def job() -> None:
            try:
                lines = await asyncio.to_thread(work)
            finally:
                self._jobs -= 1
            if generation == self._generation and key == self._key() and block in self._display:
                block.lines = painter.encode(lines)
                block.drawn_for = key
                if not self._keep_tokens and block is not self._tail:
                    block.tokens = None
            self._kick(0)

        self._jobs += 1
        self.run_worker(job(), group="answer-draw", exit_on_error=False, name="draw answer block")

    # -- drawing ---------------------------------------------------------------------------------------------
    def _key(self) -> tuple:
        return self._width, self._painter_key

    def _theme_key(self) -> tuple:
        app = self.app
        return app.theme, app.current_theme.dark if app.current_theme else True, app.native_ansi_color

    def style_source(self) -> Widget:
        """The widget whose component classes (`answer--*`) give this answer's styles: this one (see
        `SharedStylesAnswerView` for views that share one)."""
        return self

    def _ensure_painter(self) -> Painter:
        key = self._theme_key()
        if self._painter is None or key != self._painter_key:
            base = self.visual_style
            source = self.style_source()
            styles = {
                name: source.get_visual_style(f"answer--{name}", partial=True) for name in self.STYLE_NAMES
            }
            self._caption_style = (base + source.get_visual_style("answer--caption", partial=True)).rich_style
            styles["em"] = styles["em"] + Style(italic=True)
            styles["strong"] = styles["strong"] + Style(bold=True)
            styles["strike"] = styles["strike"] + Style(strike=True)
            self._painter = Painter(
                base,
                styles,
                ansi=bool(key[2]),
                dark=bool(key[1]),
                table=self._style_table,
                index=self._style_index,
            )
            self._painter_key = key
            self._painted_bg = base.rich_style.bgcolor
        return self._painter

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self._painter is not None and self.is_attached and self._theme_key() != self._painter_key:
            self._kick(0)  # a new theme: redraw every block in slices (the old lines show until then)

    def _draw_pending(self) -> bool:
        if not self._width:  # not laid out yet: everything is still to draw (if it is to be shown at all)
            return bool(self._display) and self.is_attached and self.display
        key = self._key() if self._painter is not None else None
        return any(block.drawn_for != key for block in self._display)

    def _draw(self, deadline: float) -> bool:
        """Draw blocks not drawn at this width until the deadline (at least one); True if any was.
        A block too big for a slice goes to a thread (one at a time) and keeps its guessed height."""
        if not self._width or not self.is_attached:
            return False
        painter = self._ensure_painter()
        key = self._key()
        drew = False
        for block in self._display:
            if block.drawn_for == key:
                continue
            # A block too big for a slice, or with code whose lexer was never used (its first use compiles
            # the lexer's rules: 45 ms for Python) is drawn in a thread.
            if len(block.source) > BIG_BLOCK_CHARS or (
                block.tokens is not None and cold_languages(block.tokens)
            ):
                if not self._jobs:
                    self._draw_in_thread(block)
                continue
            if drew and perf_counter() > deadline:
                break
            tokens = block.tokens if block.tokens is not None else main_parser().parse(block.source)
            block.lines = painter.encode(painter.paint(tokens, self._width))
            block.drawn_for = key
            if block is not self._tail and not self._keep_tokens:
                block.tokens = None
            drew = True
        return drew

    def _relayout(self) -> None:
        display = [*self._blocks, *([self._tail] if self._tail is not None else [])]
        key = self._key()
        ys: list[int] = []
        y = self._top
        previous: _Block | None = None
        for block in display:
            if previous is not None:
                y += max(previous.bottom, block.top)
            ys.append(y)
            y += block.height(self._width, key)
            previous = block
        self._display = display
        self._ys = ys
        if y != self._height and self.is_attached:  # no measure of the old height may be used again
            self._layout_updates += 1
            forget_measures(self)
        self._height = y

    def _on_timer(self) -> None:
        self._timer = None
        self._work()

    def _work(self, announce: bool = True) -> None:
        """One slice: take in new text (if due), draw what is not drawn, and resize if the height changed."""
        if not self.is_attached:
            return
        started = perf_counter()
        if self._ingest_pending and self._streaming and not self._jobs:
            if len(self._text) - self._settled_chars > BIG_BLOCK_CHARS:
                self._ingest_in_thread()
            elif started < self._tail_due:
                self._kick(self._tail_due - started)
            else:
                self._ingest()
                self._relayout()
                tail = self._tail
                self._draw(started + SLICE_S)
                if tail is not None and tail.drawn_for == self._key():  # the open block was redrawn: pace it
                    self._tail_due = perf_counter() + (perf_counter() - started) * (1 - TAIL_DUTY) / TAIL_DUTY
        self._draw(started + SLICE_S)
        self._relayout()
        # Repaint from the first row that changed; lay out again only if the height did.
        self._repaint_changed(layout=self._height != self._measured_height)
        # Said against what was last said, not against the last layout: a layout that ran in between
        # (another widget's) must not swallow the news that the answer grew.
        if announce and self._height > self._announced_height:
            self.post_message(self.Grew())
        self._announced_height = self._height
        if not self._jobs and (self._draw_pending() or (self._ingest_pending and self._streaming)):
            self._kick()

    def _kick(self, delay: float = SLICE_GAP_S) -> None:
        if self._timer is None and self.is_attached:
            self._timer = self.set_timer(
                max(delay, 0.001), self._on_timer, name="answer slice"
            )  # 0 divides by 0

    # -- repainting only what changed ----------------------------------------------------------------------
    def _first_changed_row(self) -> int | None:
        """The first row whose drawing differs from what was last repainted (None: no row does)."""
        painted = self._painted
        for index, block in enumerate(self._display):
            if index >= len(painted):
                return min(self._ys[index], self._painted_height)
            old_block, old_y, old_lines = painted[index]
            if old_block is not block or old_y != self._ys[index] or old_lines is not block.lines:
                return min(old_y, self._ys[index])
        if len(painted) > len(self._display):  # blocks went away (the text was replaced)
            return min(painted[len(self._display)][1], self._height)
        return None

    def _repaint_changed(self, *, layout: bool = False) -> None:
        """Repaint the rows from the first that changed to the end (of the old or new height, the longer):
        Textual keeps its cached lines above it. A streamed flush changes the open last block only, so a
        frame draws a few lines of the answer again, not every line on screen."""
        if layout:
            measure_again(self)  # the height changed: no measure of the old one may be used again
            self._measured_height = self._height
        first = self._first_changed_row()
        if first is None and self._height == self._painted_height:
            return
        if first is None:
            first = min(self._height, self._painted_height)
        bottom = max(self._height, self._painted_height)
        self._painted = [(block, y, block.lines) for block, y in zip(self._display, self._ys, strict=True)]
        self._painted_height = self._height
        if bottom > first:
            self.refresh(Region(0, first, max(self._width, self.size.width, 1), bottom - first))

    def _repaint_resized(self, old: Size, size: Size) -> None:
        """Textual repaints every line of a widget whose size changed; an answer that only got taller (or
        shorter) at the same width repaints from its first changed row (see `QuietResize`)."""
        self._repaint_changed()

    # -- the line API --------------------------------------------------------------------------------------
    def get_content_height(self, container, viewport, width: int) -> int:
        if width != self._width:
            self._width = width
            self._draw(perf_counter() + SLICE_S)
            self._relayout()
            if self._draw_pending():
                self._kick()
        return self._height

    def render_lines(self, crop):
        # One look at the background for the lines of this render (it walks the ancestors' styles).
        self._line_background = self.rich_style.bgcolor
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = bisect_right(self._ys, y) - 1
        strip = Strip.blank(0)
        if y < self._top:
            self._ensure_painter()
            strip = Strip([Segment(self._caption, self._caption_style)])
        elif index >= 0:
            block = self._display[index]
            row = y - self._ys[index]
            if block.lines is not None and row < len(block.lines):
                table = self._style_table
                strip = Strip([Segment(text, table[number]) for text, number in block.lines[row]])
        background = self._line_background
        if self._painted_bg is not None and background is not None and background != self._painted_bg:
            strip = _swap_background(strip, self._painted_bg, RichStyle(bgcolor=background))
        if (cells := selected_cells(self, y, strip.cell_length)) is not None:
            start, end = cells
            selected = self.screen.get_component_rich_style("screen--selection")
            before, middle, after = strip.divide([start, end, strip.cell_length])
            middle = Strip(list(Segment.apply_style(middle, post_style=selected)), middle.cell_length)
            strip = Strip.join([before, middle, after])
        return strip.apply_offsets(0, y)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        lines: list[str] = []
        for index, block in enumerate(self._display):
            lines.extend("" for _ in range(max(0, self._ys[index] - len(lines))))
            if block.lines is not None:
                lines.extend("".join(text for text, _ in line).rstrip() for line in block.lines)
            else:
                lines.extend(block.source.rstrip("\n").split("\n"))
        return selection.extract("\n".join(lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


class SharedStylesAnswerView(AnswerView):
    """An AnswerView without component classes of its own: it draws in the styles of the nearest ancestor's
    `answer_styles` view (the chat keeps one, hidden, for all its answers).

    Textual applies the stylesheet to every component class of every widget that has them, at mount and at
    each restyle: ~30 per answer, 40% of the styling of a resumed screen, and ~30 style objects kept per
    answer. One shared set costs that once.
    """

    def style_source(self) -> Widget:
        for node in self.ancestors:
            source = getattr(node, "answer_styles", None)
            if isinstance(source, AnswerView):
                return source
        raise RuntimeError("a SharedStylesAnswerView must be inside a widget that has `answer_styles`")


# DOMNode's `inherit_component_classes=False` class argument, which `Widget.__init_subclass__` does not pass on.
SharedStylesAnswerView._inherit_component_classes = False
