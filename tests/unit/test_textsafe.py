"""The sanitising seam: what a terminal would interpret is shown, never interpreted."""

from __future__ import annotations

import io
import json

from hypothesis import given
from hypothesis import strategies as st

from app.textsafe import SafeStream, display, display_data, display_line, is_safe, json_text, without_unsafe

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


# -- the front ends' choke points ---------------------------------------------------------------------------
def test_display_data_makes_every_string_safe_and_keeps_what_needs_nothing():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Event:
        text: str
        args: dict
        evidence: tuple = ()
        count: int = 0

    clean = Event("fine", {"path": "a.txt"}, ("status 400",), 3)
    assert display_data(clean) is clean

    dirty = Event(f"a{OSC52}", {f"k{C1_CSI}": [BIDI, 1]}, (CSI_CLEAR,), 3)
    made = display_data(dirty)
    assert made.text == "a\\x1b]52;c;aGVsbG8=\\x07" and made.count == 3
    assert made.args == {"k\\x9b31m": ["\\u202eevil\\u202c", 1]}
    assert made.evidence == ("\\x1b[2J\\x1b[H",)
    assert dirty.text.startswith("a\x1b")  # the original is untouched (the master log keeps exact bytes)


@given(
    st.recursive(
        st.text() | st.integers(), lambda children: st.lists(children) | st.dictionaries(st.text(), children)
    )
)
def test_display_data_leaves_no_unsafe_string(value):
    def strings(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for key, item in v.items():
                yield key
                yield from strings(item)
        elif isinstance(v, list):
            for item in v:
                yield from strings(item)

    assert all(is_safe(s) for s in strings(display_data(value)))


@given(st.text())
def test_json_text_is_the_same_json_and_safe_to_print(text):
    printed = json_text({"text": text, "list": [text]})
    assert json.loads(printed) == {"text": text, "list": [text]}
    assert is_safe(printed) and "\r" not in printed


def test_safe_stream_shows_escapes_and_keeps_a_crlf_split_between_writes():
    target = io.StringIO()
    stream = SafeStream(target)
    for chunk in (f"answer {OSC52}", "line one\r", "\nline two\r", "\n", "a lone\r", "cr"):
        stream.write(chunk)
    stream.end()
    assert target.getvalue() == "answer \\x1b]52;c;aGVsbG8=\\x07line one\nline two\na lone\\x0dcr"
    assert stream.isatty() is False and stream.wrapped is target


def test_without_unsafe_leaves_out_only_what_display_escapes():
    assert without_unsafe(f"a{OSC52}b{BIDI}\tc\n") == "a]52;c;aGVsbG8=bevil\tc\n"
    text = "ünïcødé\t日本語"
    assert without_unsafe(text) is text
