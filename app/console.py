"""Output that survives any locale: a terminal that is not UTF-8 gets fallbacks, never a crash or a
lost chunk.

Under `LANG=en_US.ISO-8859-1` (or `LC_ALL=C` where Python does not switch to UTF-8) the standard
streams encode strictly: one `≈` in an answer raised UnicodeEncodeError (the answer's chunk was lost,
`--help` and `config show` crashed), and the TUI, which writes to stderr (whose errors policy is
`backslashreplace`), drew `\\u256d` for every corner. `prepare_streams()` switches stdout and stderr
of such a terminal to the `bulkhead.fallback` error policy: each character the encoding lacks becomes
an ASCII stand-in of the same width on screen (box drawing → `+ - |`, quotes → `" '`, `≈` → `~`,
`✓` → `v`, a wide character → two), so the TUI keeps its layout and text stays readable. What is
stored, sent to the model or printed as JSON (`\\uXXXX` escapes) is never altered.
"""

from __future__ import annotations

import codecs
import sys
import unicodedata

from rich.cells import cell_len

ERRORS = "bulkhead.fallback"

_FALLBACKS = {
    "—": "-",
    "–": "-",
    "‐": "-",
    "−": "-",
    "‘": "'",
    "’": "'",
    "‚": ",",
    "“": '"',
    "”": '"',
    "„": '"',
    "«": '"',
    "»": '"',
    "…": ".",
    "·": ".",
    "•": "*",
    "‣": ">",
    "⭑": "*",
    "◦": "o",
    "▪": "*",
    "●": "*",
    "◌": "o",
    "◆": "*",
    "○": "o",
    "≈": "~",
    "≠": "#",
    "≤": "<",
    "≥": ">",
    "×": "x",
    "÷": "/",
    "±": "+",
    "→": ">",
    "←": "<",
    "↑": "^",
    "↓": "v",
    "⇒": ">",
    "↺": "@",
    "↻": "@",
    "⏎": "^",
    "✓": "v",
    "✔": "v",
    "✖": "x",
    "✗": "x",
    "⚠": "!",
    "ℹ": "i",
    "⛑": "+",
    "⚓": "#",
    "▸": ">",
    "▾": "v",
    "▴": "^",
    "▼": "v",
    "▲": "^",
    "►": ">",
    "◀": "<",
    "§": "S",
    "¶": "P",
    "£": "L",
    "€": "E",
    "¢": "c",
    "°": "o",
    "µ": "u",
    "\u00a0": " ",
    "\u2009": " ",
    "\u202f": " ",
    "▏": "|",
    "▕": "|",
    "▌": "|",
    "▐": "|",
    "▁": "_",
    "▔": "-",
    "━": "-",
    "┃": "|",
    "╸": "-",
    "╺": "-",
    "╹": "|",
    "╻": "|",
}


def fallback(character: str) -> str:
    """An ASCII stand-in for `character`, as wide on screen as it is (one cell, or two)."""
    width = max(1, cell_len(character))
    if character in _FALLBACKS:
        return _FALLBACKS[character].ljust(width)
    code = ord(character)
    if 0x2500 <= code <= 0x257F:  # box drawing
        name = unicodedata.name(character, "")
        if "HORIZONTAL" in name and "VERTICAL" not in name:
            return "-"
        if "VERTICAL" in name and "HORIZONTAL" not in name and "AND" not in name:
            return "|"
        return "+"
    if 0x2580 <= code <= 0x259F:  # block elements (bars, gauges, scrollbars)
        return "#"
    plain = unicodedata.normalize("NFKD", character).encode("ascii", "ignore").decode("ascii")
    if plain and cell_len(plain) == width:
        return plain  # é → e, ﬁ → fi is two cells, kept as "?" below
    return "?" * width


def _handle(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(fallback(character) for character in text), error.end


codecs.register_error(ERRORS, _handle)


def is_utf8(encoding: str | None) -> bool:
    try:
        return encoding is not None and encoding != "" and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def json_text(value, **options) -> str:
    """JSON for stdout: non-ASCII kept as is on a UTF-8 stream, `\\uXXXX` escapes (lossless) on any other;
    never a control character a terminal would interpret (`app.textsafe.json_text`)."""
    from app.textsafe import json_text as safe_json_text

    return safe_json_text(value, ensure_ascii=not stream_is_utf8(), **options)


def stream_is_utf8(stream=None) -> bool:
    """Whether `stream` (stdout by default) writes UTF-8: JSON may then keep non-ASCII text as is."""
    stream = sys.stdout if stream is None else stream
    return is_utf8(getattr(stream, "encoding", None))


def prepare_streams() -> None:
    """Give stdout and stderr the fallback policy when their encoding is not UTF-8 (idempotent)."""
    for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__) if s}.values():
        if stream_is_utf8(stream) or not hasattr(stream, "reconfigure"):
            continue
        try:
            stream.reconfigure(errors=ERRORS)
        except (ValueError, OSError):  # a stream already closed or detached: nothing to prepare
            pass
