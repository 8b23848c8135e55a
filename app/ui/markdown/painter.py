"""The painter: the tokens of one top-level Markdown block drawn into lines of segments, in given styles.

    painter = Painter(base, styles, ansi=False, dark=True, table=[], index={})
    lines = painter.paint(tokens, width=80)     # list[list[Segment]]: pure, safe in a thread
    drawn = painter.encode(lines)               # (text, style number) pairs, the style table grows

`styles` maps each name of `STYLE_NAMES` to a Textual `Style` (the view reads them from its component classes, so
the theme decides every colour). Headings, lists (bullets by depth, numbers aligned), quotes with a border,
fenced code (highlighted with Textual's highlight themes), tables (columns shrunk to fit), rules, inline em /
strong / strike / code / links / images. Text is model output: everything drawn goes through `app.textsafe`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.content import Content, Span
from textual.style import Style

from app.textsafe import display, display_line
from app.ui.markdown.parser import LEXERS_READY, code_language

if TYPE_CHECKING:  # markdown-it comes with the first parse (`app.ui.markdown.parser`)
    from markdown_it.token import Token

# The languages coding answers fence most: their lexers are compiled in the background at start-up (`warm_lexers`).
WARM_LANGUAGES = ("python", "bash", "json", "javascript", "typescript", "diff", "yaml", "toml")

BULLETS = ("• ", "▪ ", "‣ ", "⭑ ", "◦ ")  # by list depth, as textual.widgets.Markdown
STYLE_NAMES = (
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "em",
    "strong",
    "strike",
    "link",
    "code-inline",
    "fence",
    "quote",
    "quote-border",
    "bullet",
    "hr",
    "table-header",
    "table-lines",
)


def block_margins(token: Token) -> tuple[int, int]:
    """Blank lines above and below a top-level block (collapsed between neighbours), as Markdown's CSS."""
    if token.type == "heading_open":
        return (2, 1) if token.tag in ("h1", "h2") else (1, 1)
    if token.type in ("fence", "code_block", "blockquote_open", "hr"):
        return 1, 1
    return 0, 1


# A drawn line: (text, index into the painter's style table) pairs. Tuples of str and int are not
# tracked by the garbage collector, so a long answer adds next to nothing to each full collection
# (Strips — 15 objects each — for every line of every answer made those collections take 150 ms+).
DrawnLine = tuple[tuple[str, int], ...]


class _Node:
    __slots__ = ("token", "kind", "children", "inline")

    def __init__(self, token: Token, kind: str) -> None:
        self.token = token
        self.kind = kind
        self.children: list[_Node] = []
        self.inline: Token | None = None


def _tree(tokens: list[Token]) -> list[_Node]:
    roots: list[_Node] = []
    stack: list[_Node] = []
    for token in tokens:
        if token.nesting == 1:
            node = _Node(token, token.type.removesuffix("_open"))
            (stack[-1].children if stack else roots).append(node)
            stack.append(node)
        elif token.nesting == -1:
            if stack:
                stack.pop()
        elif token.type == "inline" and stack:
            stack[-1].inline = token
        else:
            (stack[-1].children if stack else roots).append(_Node(token, token.type))
    return roots


Line = list[Segment]


class Painter:
    """Draws the tokens of one block into lines of segments, in the view's styles."""

    def __init__(
        self,
        base: Style,
        styles: dict[str, Style],
        ansi: bool,
        dark: bool,
        table: list[RichStyle | None],
        index: dict[RichStyle | None, int],
    ) -> None:
        self.base = base
        self.styles = styles
        self.ansi = ansi
        self.dark = dark
        self.table = table  # the style table of the drawn lines: the view's, kept across themes
        self._index = index

    def paint(self, tokens: list[Token], width: int) -> list[Line]:
        """The block's lines of segments (pure: safe to run in a thread)."""
        return self._flow(_tree(tokens), max(1, width), self.base, "top", 0)

    def encode(self, lines: list[Line]) -> list[DrawnLine]:
        """Lines as (text, style number) pairs (on the event loop: it grows the style table)."""
        index = self._index
        table = self.table
        drawn: list[DrawnLine] = []
        for line in lines:
            pairs = []
            for segment in line:
                style = segment.style
                number = index.get(style)
                if number is None:
                    number = index[style] = len(table)
                    table.append(style)
                pairs.append((segment.text, number))
            drawn.append(tuple(pairs))
        return drawn

    # -- structure -----------------------------------------------------------------------------------------
    def _flow(self, nodes: list[_Node], width: int, base: Style, context: str, depth: int) -> list[Line]:
        out: list[Line] = []
        previous_bottom: int | None = None
        for node in nodes:
            top, bottom = self._margins(node, context)
            lines = self._node(node, width, base, context, depth)
            if previous_bottom is not None:
                out.extend([] for _ in range(max(previous_bottom, top)))
            out.extend(lines)
            previous_bottom = bottom
        return out

    @staticmethod
    def _margins(node: _Node, context: str) -> tuple[int, int]:
        if context == "top":
            return block_margins(node.token)
        if node.kind in ("paragraph", "bullet_list", "ordered_list"):
            return (0, 1) if context == "quote" else (0, 0)
        return 1, 1

    def _node(self, node: _Node, width: int, base: Style, context: str, depth: int) -> list[Line]:
        kind = node.kind
        if kind == "paragraph":
            return self._text(self.inline(node.inline), width, base)
        if kind == "heading":
            return self._heading(node, width, base)
        if kind in ("bullet_list", "ordered_list"):
            return self._list(node, width, base, depth)
        if kind == "blockquote":
            return self._quote(node, width, base, depth)
        if kind in ("fence", "code_block"):
            return self._fence(node.token, width, base)
        if kind == "hr":
            return [[Segment("─" * width, (base + self.styles["hr"]).rich_style)]]
        if kind == "table":
            return self._table(node, width, base)
        if kind == "inline":
            return self._text(self.inline(node.token), width, base)
        if node.children:
            return self._flow(node.children, width, base, context, depth)
        text = display(node.token.content.rstrip("\n")) if node.token.content else ""
        return self._text(Content(text), width, base) if text else []

    # -- text ------------------------------------------------------------------------------------------------
    def inline(self, token: Token | None) -> Content:
        """Inline Markdown as Content (as Markdown's blocks do it: em, strong, s, code, links, images)."""
        if token is None or token.children is None:
            return Content("")
        parts: list[str] = []
        spans: list[Span] = []
        stack: list[tuple[Style, int]] = []
        position = 0
        styles = self.styles

        def add(text: str) -> None:
            nonlocal position
            parts.append(text)
            position += len(text)

        def close() -> None:
            if stack:
                style, start = stack.pop()
                if position > start:
                    spans.append(Span(start, position, style))

        for child in token.children:
            kind = child.type
            if kind == "text":
                add(
                    display(child.content)
                )  # a terminal shows spaces as they are: aligned columns stay aligned
            elif kind == "softbreak":
                add(
                    "\n"
                )  # a single line break is kept, as chat clients do (a plain-text table stays a table)
            elif kind == "hardbreak":
                add("\n")
            elif kind == "code_inline":
                stack.append((styles["code-inline"], position))
                add(display(child.content))
                close()
            elif kind == "em_open":
                stack.append((styles["em"], position))
            elif kind == "strong_open":
                stack.append((styles["strong"], position))
            elif kind == "s_open":
                stack.append((styles["strike"], position))
            elif kind == "link_open":  # the link goes into an OSC 8 sequence: made safe as well
                stack.append(
                    (styles["link"] + Style(link=display_line(str(child.attrs.get("href", "")))), position)
                )
            elif kind == "image":
                stack.append(
                    (styles["link"] + Style(link=display_line(str(child.attrs.get("src", "")))), position)
                )
                add("🖼  " + (f"({display(str(child.attrs.get('alt')))})" if child.attrs.get("alt") else ""))
                add(display("".join(grandchild.content for grandchild in child.children or ())))
                close()
            elif kind == "html_inline":
                add(display(child.content))
            elif kind.endswith("_close"):
                close()
        while stack:
            close()
        return Content("".join(parts), spans=spans)

    @staticmethod
    def _segments(content: Content, base: Style) -> Line:
        return [Segment(text, style.rich_style) for text, style in content.render(base, end="") if text]

    def _text(
        self, content: Content, width: int, base: Style, *, align: str = "left", fill: bool = False
    ) -> list[Line]:
        lines: list[Line] = []
        for line in content.wrap(width) or [Content("")]:
            segments = self._segments(line, base)
            spare = width - line.cell_length
            if align == "center" and spare > 0:
                segments.insert(0, Segment(" " * (spare // 2), base.rich_style))
                spare -= spare // 2
            if fill and spare > 0:
                segments.append(Segment(" " * spare, base.rich_style))
            lines.append(segments)
        return lines

    # -- blocks ----------------------------------------------------------------------------------------------
    def _heading(self, node: _Node, width: int, base: Style) -> list[Line]:
        level = node.token.tag if node.token.tag in ("h1", "h2", "h3", "h4", "h5", "h6") else "h6"
        style = base + self.styles[level]
        h1 = level == "h1"
        return self._text(self.inline(node.inline), width, style, align="center" if h1 else "left", fill=h1)

    def _list(self, node: _Node, width: int, base: Style, depth: int) -> list[Line]:
        items = [child for child in node.children if child.kind == "list_item"]
        if not items:
            return []
        if node.kind == "ordered_list":
            first = items[0].token.info
            start = int(first) if first.isdigit() else 1
            numbers = [f"{n}. " for n in range(start, start + len(items))]
            size = max(len(n) for n in numbers)
            symbols = [n.rjust(size + 1) for n in numbers]
            inner_depth = depth
        else:
            symbols = [BULLETS[depth % len(BULLETS)]] * len(items)
            inner_depth = depth + 1
        bullet = (base + self.styles["bullet"]).rich_style
        out: list[Line] = []
        for item, symbol in zip(items, symbols, strict=True):
            indent = cell_len(symbol)
            inner = self._flow(item.children, max(1, width - indent), base, "list", inner_depth) or [[]]
            for index, line in enumerate(inner):
                prefix = Segment(symbol, bullet) if index == 0 else Segment(" " * indent, base.rich_style)
                out.append([prefix, *line])
        return out

    def _quote(self, node: _Node, width: int, base: Style, depth: int) -> list[Line]:
        style = base + self.styles["quote"]
        border = Segment("▌", (style + self.styles["quote-border"]).rich_style)
        pad = style.rich_style
        inner_width = max(1, width - 3)
        out: list[Line] = []
        for line in self._flow(node.children, inner_width, style, "quote", depth) or [[]]:
            spare = max(0, inner_width - sum(segment.cell_length for segment in line))
            out.append([border, Segment(" ", pad), *line, Segment(" " * (spare + 1), pad)])
        return out

    def _fence(self, token: Token, width: int, base: Style) -> list[Line]:
        from textual.highlight import (
            ANSIDarkHighlightTheme,
            ANSILightHighlightTheme,
            HighlightTheme,
            highlight,
        )

        theme = (
            (ANSIDarkHighlightTheme if self.dark else ANSILightHighlightTheme)
            if self.ansi
            else HighlightTheme
        )
        code = display(token.content.rstrip())
        style = base + self.styles["fence"]
        pad = style.rich_style
        side = 2 if width >= 12 else 0
        inner = max(1, width - 2 * side)
        code_lines: list[Line] = []
        language = code_language(token.info)
        highlighted = highlight(code, language=language, theme=theme)
        LEXERS_READY.add(language)
        for line in highlighted.split("\n"):
            for piece in line.fold(inner) if line.cell_length > inner else [line]:
                segments = self._segments(piece, style)
                spare = max(0, inner - piece.cell_length)
                code_lines.append([Segment(" " * side, pad), *segments, Segment(" " * (spare + side), pad)])
        blank = [Segment(" " * width, pad)]
        return [blank, *code_lines, list(blank)]

    def _table(self, node: _Node, width: int, base: Style) -> list[Line]:
        head: list[list[Content]] = []
        body: list[list[Content]] = []
        for section in node.children:
            for row_node in section.children:
                contents = [self.inline(cell.inline) for cell in row_node.children]
                (head if section.kind == "thead" else body).append(contents)
        rows = head + body
        columns = max((len(row) for row in rows), default=0)
        if not columns:
            return []
        natural = [
            max((row[c].cell_length for row in rows if c < len(row)), default=0) for c in range(columns)
        ]
        widths = [max(1, w) for w in natural]
        available = max(columns, width - 3 * (columns - 1))
        while sum(widths) > available:
            widest = max(range(columns), key=widths.__getitem__)
            if widths[widest] <= 1:
                break
            widths[widest] -= 1
        rule_style = (base + self.styles["table-lines"]).rich_style
        header_style = base + self.styles["table-header"]
        out: list[Line] = []
        for index, row in enumerate(rows):
            style = header_style if index < len(head) else base
            cells = [
                self._text(row[c] if c < len(row) else Content(""), widths[c], style) for c in range(columns)
            ]
            for k in range(max(len(cell) for cell in cells)):
                line: Line = []
                for c, cell in enumerate(cells):
                    part: Line = cell[k] if k < len(cell) else []
                    spare = widths[c] - sum(segment.cell_length for segment in part)
                    line.extend(part)
                    if spare > 0:
                        line.append(Segment(" " * spare, base.rich_style))
                    if c < columns - 1:
                        line.append(Segment(" │ ", rule_style))
                out.append(line)
            if head and index == len(head) - 1:
                out.append([Segment("─┼─".join("─" * w for w in widths), rule_style)])
        return out


def warm_lexers(languages: tuple[str, ...] = WARM_LANGUAGES) -> None:
    """Compile the lexers of `languages` now and count them, and every other name of the same lexer, as used.

    A lexer's first use compiles its rules (Python: ~40 ms), so the answer view draws a block in a language not
    used yet in a thread, and the answer waits for it (~100 ms on a busy loop, mid-stream). Called in the SDK's
    import thread (`app.ui.startup`), this makes the first Python block of a session stream like the rest.
    """
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound
    from textual.highlight import highlight

    for language in languages:
        try:
            aliases = get_lexer_by_name(language).aliases
        except ClassNotFound:
            continue
        highlight("x = 1", language=language)
        LEXERS_READY.update(code_language(alias) for alias in aliases)


def lexers_warm() -> bool:
    """`warm_lexers` has run (or every language of `WARM_LANGUAGES` has been drawn already)."""
    return LEXERS_READY.issuperset(WARM_LANGUAGES)
