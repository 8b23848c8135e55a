"""The sanitising seam: what a terminal would interpret is shown, never interpreted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from app.textsafe import display, display_line, is_safe

OSC52 = "\x1b]52;c;aGVsbG8=\x07"
CSI_CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;pwned\x1b\\"
C1_CSI = "\x9b31m"
BIDI = "\u202eevil\u202c"
DCS = "\x1bP1$r\x1b\\"


def test_escape_sequences_become_visible_text():
    shown = display(f"a{OSC52}b{CSI_CLEAR}c{TITLE}d")
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == "a\\x1b]52;c;aGVsbG8=\\x07b\\x1b[2J\\x1b[Hc\\x1b]0;pwned\\x1b\\d"


def test_c1_bidi_dcs_and_del_are_escaped():
    shown = display(f"{C1_CSI}|{BIDI}|{DCS}|\x7f")
    assert shown == "\\x9b31m|\\u202eevil\\u202c|\\x1bP1$r\\x1b\\|\\x7f"


def test_newlines_tabs_and_ordinary_unicode_are_untouched():
    text = "line one\n\tindented — “quoted” ≈ ünïcødé 日本語 🙂 \u200d"
    assert display(text) is text


def test_crlf_is_a_line_break_and_a_lone_cr_is_escaped():
    assert display("a\r\nb") == "a\nb"
    assert display("progress 10%\rprogress 99%") == "progress 10%\\x0dprogress 99%"


def test_display_line_escapes_line_breaks_too():
    assert display_line("name\nwith\ttab\x1b") == "name\\x0awith\\x09tab\\x1b"


@given(st.text())
def test_output_is_always_safe(text):
    assert is_safe(display(text))
    assert is_safe(display_line(text)) and "\n" not in display_line(text)


@given(st.lists(st.text(), max_size=6))
def test_chunk_by_chunk_equals_whole_without_cr(chunks):
    chunks = [chunk.replace("\r", "") for chunk in chunks]
    assert "".join(display(chunk) for chunk in chunks) == display("".join(chunks))
