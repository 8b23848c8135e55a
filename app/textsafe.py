"""Untrusted text → display text: the one seam every renderer and printer goes through.

Whatever comes from outside — model text, tool output, file contents and names, HTTP bodies
and headers, hook output — may carry bytes a terminal *interprets*: ESC sequences (CSI clears
the screen, OSC 52 writes the clipboard, OSC 0 retitles the window, DCS/APC/PM/SOS reach the
terminal's own parsers), C0 and C1 controls, and bidi overrides that make text read in a
different order than it runs (Trojan Source, CVE-2021-42574).

`display()` makes such text safe to show: every control character except `\\n` and `\\t`
becomes a visible escape (`\\x1b`, `\\x9b`, `\\u202e`), so an ESC sequence is shown as
`\\x1b]52;c;…` and never interpreted. The mapping is per character, so text that arrives in
chunks (a streamed answer) is made safe chunk by chunk with the same result as the whole.
`\\r\\n` is shown as a line break; a lone `\\r` is escaped (it would overwrite the line).

What the model receives is never passed through here: the master log keeps the exact bytes.
JSON output and HAR escape control characters as JSON does and need nothing more.
"""

from __future__ import annotations

import re

# C0 except \t (09) and \n (0a); DEL; C1 (U+0080–U+009F); bidi embeddings/overrides
# (U+202A–U+202E) and isolates (U+2066–U+2069).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# For one-line contexts (a table cell, a header value, a file name): line breaks and tabs too.
_UNSAFE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def display(text: str) -> str:
    """`text` safe to render or print: controls (but `\\n`, `\\t`), ESC, C1 and bidi overrides escaped."""
    if not text:
        return text
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def display_line(text: str) -> str:
    """`display()` for one-line contexts: line breaks and tabs are escaped as well."""
    if not text or _UNSAFE_LINE.search(text) is None:
        return text
    return _UNSAFE_LINE.sub(_escape, text)


def is_safe(text: str) -> bool:
    """True when `text` holds nothing a terminal would interpret (what tests assert of output)."""
    return _UNSAFE.search(text.replace("\r\n", "\n")) is None
