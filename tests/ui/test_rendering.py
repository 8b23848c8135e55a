"""Answers are drawn as the user wrote them where Markdown would lose it: single line breaks are kept
(the lab's `!help` table stays a table in the chat, as in F1), spaces are not folded, and archive
markers `<<ccr:KEY>>` are shown — and copied — verbatim. The lab's own answer comes from the lab; the
answers the tests write into the chat are drawn on a scripted session (`tests/ui/fake_session.py`)."""

from __future__ import annotations

from app.ui.chat_items import AssistantItem
from app.ui.headless import ready, until
from tests.ui.conftest import lab_settings
from tests.ui.fake_session import FakeSession, app_on
from tests.ui.test_app import make_app, send

SIZE = (160, 45)
MARKER = "<<ccr:0123456789abcdef>>"


async def test_the_lab_help_table_keeps_its_lines_and_columns(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "!help")
        answer = app.chat.last_answer()
        drawn = [line.rstrip() for line in answer.view.rendered_text().splitlines()]
        rows = [line for line in answer.raw.splitlines() if line.startswith("  !")]
        assert len(rows) >= 8
        for row in rows:  # every row starts a line of its own, its column gap intact (a long one wraps)
            assert any(line.startswith(row.strip()[:40]) for line in drawn), row
        read = next(line for line in drawn if line.startswith("!read"))
        ls = next(line for line in drawn if line.startswith("!ls"))
        assert read.index("call read_file") == ls.index("call list_dir")  # the columns line up


async def test_a_marker_is_drawn_and_copied_verbatim(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = f"The log was archived as {MARKER} — recall it with `/recall`.\n\n- see also {MARKER}\n"
        item = AssistantItem(text)
        await app.chat.add(item)
        await until(pilot, lambda: item.rendered, "the answer to be drawn")
        drawn = item.view.rendered_text()
        assert drawn.count(MARKER) == 2 and "<ccr:" not in drawn.replace(MARKER, "")
        item.view.text_select_all()
        await pilot.pause()
        assert MARKER in (app.screen.get_selected_text() or "")  # what a mouse selection copies
        assert item.copy_text() == text


async def test_a_link_in_angle_brackets_is_still_a_link(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        item = AssistantItem("docs at <https://example.org/docs>\n")
        await app.chat.add(item)
        await until(pilot, lambda: item.rendered, "the answer to be drawn")
        assert item.view.rendered_text().strip() == "docs at https://example.org/docs"


async def test_chat_answers_share_one_set_of_answer_styles_and_follow_a_theme_change(tmp_path):
    """A chat's answers have no component classes of their own (styling each one's ~20 cost most of a
    resumed screen's styling): they draw in the chat's hidden `answer_styles`, theme changes included."""
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.theme = "textual-dark"
        item = AssistantItem("# Title\n\nplain words\n")
        await app.chat.add(item)
        await until(pilot, lambda: item.rendered, "the answer to be drawn")
        assert not item.view._get_component_classes() and item.view.style_source() is app.chat.answer_styles

        def heading_color():
            row = next(y for y in range(1, 6) if "Title" in item.view.render_line(y).text)
            return next(s.style.color for s in item.view.render_line(row) if "Title" in s.text)

        def h1_color():
            return app.chat.answer_styles.get_visual_style("answer--h1", partial=True).rich_style.color

        assert item.view.render_line(0).text.startswith("assistant")  # the caption row
        dark = heading_color()
        assert dark is not None and dark == h1_color()
        app.theme = "textual-light"
        await until(pilot, lambda: heading_color() != dark, "the answer redrawn in the new theme")
        assert heading_color() == h1_color()
