"""The Markdown painter in isolation: tokens of one block → lines of segments, in the styles it is given.

No app, no theme: each style name gets a distinct Style, so a test can tell which part of a line was drawn in
which style (`app/ui/markdown/painter.py`).
"""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from rich.segment import Segment
from textual.style import Style

from app.ui.markdown.painter import BULLETS, STYLE_NAMES, Painter
from app.ui.markdown.parser import PARSER, split_blocks

# A distinct, recognisable style per name: reverse for headings, italic/bold/strike for inline, etc.
STYLES = {
    **{name: Style(bold=True) for name in ("h1", "h2", "h3", "h4", "h5", "h6")},
    "em": Style(italic=True),
    "strong": Style(bold=True),
    "strike": Style(strike=True),
    "link": Style(underline=True),
    "code-inline": Style(reverse=True),
    "fence": Style(dim=True),
    "quote": Style(italic=True),
    "quote-border": Style(bold=True),
    "bullet": Style(bold=True),
    "hr": Style(dim=True),
    "table-header": Style(bold=True),
    "table-lines": Style(dim=True),
}


def painter(*, dark: bool = True) -> Painter:
    assert set(STYLES) == set(STYLE_NAMES)
    return Painter(Style(), STYLES, ansi=False, dark=dark, table=[], index={})


def paint(source: str, width: int = 40) -> list[list[Segment]]:
    return painter().paint(PARSER.parse(source), width)


def text(lines: list[list[Segment]]) -> list[str]:
    return ["".join(segment.text for segment in line) for line in lines]


def styled(lines: list[list[Segment]], needle: str):
    return next(segment.style for line in lines for segment in line if needle in segment.text)


def test_h1_is_centred_and_filled_to_the_width_other_headings_are_left_aligned():
    h1 = text(paint("# Title", 20))
    h2 = text(paint("## Section", 20))

    assert h1 == ["       Title        "]
    assert h2 == ["Section"]
    assert styled(paint("## Section", 20), "Section").bold


def test_bullets_change_with_depth_and_ordered_lists_align_their_numbers():
    bullets = text(paint("- a\n- b\n  - c\n    - d"))
    numbers = text(paint("9. nine\n10. ten"))

    assert bullets == [f"{BULLETS[0]}a", f"{BULLETS[0]}b", f"  {BULLETS[1]}c", f"    {BULLETS[2]}d"]
    assert numbers == ["  9. nine", " 10. ten"]


def test_a_list_item_that_wraps_is_indented_under_its_text():
    lines = text(paint("- " + "word " * 8, 16))

    assert lines[0].startswith(BULLETS[0]) and len(lines) > 1
    assert all(line.startswith("  ") and not line.startswith("   ") for line in lines[1:])


def test_a_quote_has_a_border_on_every_line_and_is_padded_to_the_width():
    lines = paint("> first line of a quote that wraps at this width", 20)

    assert len(lines) > 1
    assert all(line[0].text == "▌" for line in lines)
    assert all(sum(segment.cell_length for segment in line) == 20 for line in lines)
    assert lines[0][0].style.bold  # the border's own style


def test_a_fence_is_a_padded_box_with_a_blank_line_above_and_below():
    lines = paint("```python\nx = 1\nprint(x)\n```", 20)
    rows = text(lines)

    assert rows[0] == " " * 20 and rows[-1] == " " * 20
    assert rows[1].startswith("  x = 1") and rows[2].startswith("  print(x)")
    assert all(cell_len(row) == 20 for row in rows)
    assert all(segment.style.dim for line in lines for segment in line if segment.text.strip() == "")


def test_a_long_code_line_folds_instead_of_running_off_the_box():
    rows = text(paint("```\n" + "x" * 50 + "\n```", 20))

    assert all(cell_len(row) == 20 for row in rows)
    assert "".join(row.strip() for row in rows) == "x" * 50


def test_a_table_has_columns_a_header_rule_and_a_bold_header():
    lines = paint("| name | n |\n|---|---|\n| alpha | 1 |\n| b | 22 |")
    rows = text(lines)

    assert rows == ["name  │ n ", "──────┼───", "alpha │ 1 ", "b     │ 22"]
    assert styled(lines, "name").bold


def test_a_table_wider_than_the_view_shrinks_its_widest_column():
    rows = text(paint("| a | b |\n|---|---|\n| " + "long " * 10 + "| x |", 20))

    assert all(cell_len(row) <= 20 for row in rows)


@pytest.mark.parametrize("source", ["| 名前 | n |\n|---|---|\n| 日本語 | 1 |", "- 日本語のテキスト " * 3])
def test_wide_characters_are_measured_in_cells(source):
    lines = paint(source, 12)

    assert all(sum(segment.cell_length for segment in line) <= 12 for line in lines)
    joined = "".join(text(lines))
    assert "日本語" in joined


def test_wide_characters_in_a_table_keep_the_columns_aligned():
    rows = text(paint("| 名前 | n |\n|---|---|\n| 日本語 | 1 |\n| ab | 2 |"))

    separators = {cell_len(row.split("│")[0]) for row in rows if "│" in row}
    assert len(separators) == 1  # the rule sits at the same cell column on every row


def test_inline_styles_links_and_code():
    lines = paint("*em* **strong** ~~gone~~ `code` [site](https://example.com)")

    assert styled(lines, "em").italic
    assert styled(lines, "strong").bold
    assert styled(lines, "gone").strike
    assert styled(lines, "code").reverse
    link = styled(lines, "site")
    assert link.underline and link.link == "https://example.com"


def test_an_archive_marker_is_drawn_as_written():
    assert text(paint("see <<ccr:0123456789abcdef>> for the rest", 60)) == [
        "see <<ccr:0123456789abcdef>> for the rest"
    ]


def test_escape_sequences_and_bidi_overrides_in_model_text_are_never_drawn():
    lines = text(paint("evil \x1b[31mred\x1b[0m and &#x202e;rtl\n\n```\n\x1b]0;title\x07\n```"))

    joined = "".join(lines)
    assert "\x1b" not in joined and "\u202e" not in joined and "\x07" not in joined


def test_a_horizontal_rule_fills_the_width():
    assert text(paint("---", 12)) == ["─" * 12]


def test_blocks_split_back_into_their_sources():
    source = "# T\n\npara one\n\n- a\n- b\n\n```\ncode\n```\n"
    blocks = split_blocks(source, PARSER.parse(source))

    assert "".join(block for block, _tokens in blocks) == source
    assert len(blocks) == 4


def test_encode_shares_one_style_table_across_blocks():
    p = painter()
    first = p.encode(p.paint(PARSER.parse("**a** b"), 20))
    second = p.encode(p.paint(PARSER.parse("**c** d"), 20))

    assert [number for _text, number in first[0]] == [number for _text, number in second[0]]
    assert len(p.table) == len(set(p.table))


def test_a_whole_document_is_parsed_by_one_parser_per_thread_with_the_markers_kept():
    """`parse_markdown` no longer makes (and compiles) a parser per call: the loop's is `PARSER`, a thread
    makes one and keeps it; each still knows the archive marker."""
    import threading

    from app.ui.markdown import parser as markdown_parser

    source = "keep <<ccr:abc123>> here\n\n[x]: https://example.com\n"
    tokens, env = markdown_parser.parse_markdown(source)
    assert markdown_parser._thread_parser() is PARSER
    assert "X" in env["references"]
    assert "references" not in markdown_parser.parse_markdown("no links")[1]  # each parse has its own env
    seen = []

    def in_a_thread():
        first, second = markdown_parser._thread_parser(), markdown_parser._thread_parser()
        seen.append((first is second, first is not PARSER, markdown_parser.parse_markdown(source)[0]))

    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    ((same, own, thread_tokens),) = seen
    assert same and own
    assert [t.content for t in thread_tokens if t.type == "inline"] == [
        t.content for t in tokens if t.type == "inline"
    ]
    inline = next(t for t in thread_tokens if t.type == "inline")
    assert "".join(child.content for child in inline.children) == "keep <<ccr:abc123>> here"
    assert not any(child.type in ("link_open", "html_inline") for child in inline.children)  # not an autolink
