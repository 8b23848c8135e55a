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

The front ends each have one choke point: the TUI turns every engine event into display data
(`display_data`) where it becomes a Textual message, and reads from the store go through it
where a panel loads them; the command line wraps stdout and stderr (`SafeStream`) for every
sub-command but the TUI. JSON output escapes as JSON does (`json_text` adds C1, DEL and the bidi
controls, which `json.dumps` leaves raw), so it stays valid JSON and safe to print.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from typing import Any, TextIO

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


def without_unsafe(text: str) -> str:
    """`text` with what `display()` would escape left out, for where an escape cannot be drawn: a
    line of a text editor counts these characters as zero cells wide, so its layout stays right."""
    if not text or _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub("", text)


def is_safe(text: str) -> bool:
    """True when `text` holds nothing a terminal would interpret (what tests assert of output)."""
    return _UNSAFE.search(text.replace("\r\n", "\n")) is None


def display_data(value: Any) -> Any:
    """`value` with every string in it made safe by `display()`: strings, and the strings inside
    dicts (keys too), lists, tuples and dataclass instances (a changed one is copied with
    `dataclasses.replace`). Anything else is returned as it is; so is a value with nothing to change."""
    if isinstance(value, str):
        return display(value)
    if isinstance(value, dict):
        items = [(display_data(k), display_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return type(value)(items) if type(value) is not dict else dict(items)
    if isinstance(value, list | tuple):
        items = [display_data(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (list, tuple) else type(value)(*items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for field in dataclasses.fields(value):
            if not field.init:
                continue
            old = getattr(value, field.name)
            new = display_data(old)
            if new is not old:
                changes[field.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


# json.dumps(ensure_ascii=False) escapes C0 and leaves these raw; \uXXXX keeps the JSON valid.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(value: Any, **dumps: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **dumps)` with DEL, C1 and bidi controls escaped as
    `\\uXXXX`: the same JSON once parsed, and nothing in it a terminal would interpret."""
    dumps.setdefault("ensure_ascii", False)
    text = json.dumps(value, **dumps)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class SafeStream:
    """A text stream (stdout, stderr) whose every write goes through `display()`.

    A `\\r` that ends a write is held back until the next one, so a CRLF split between two
    writes (a streamed answer) is still one line break; `end()` shows one still held.
    Everything else (`isatty`, `fileno`, `buffer`, `encoding`…) is the wrapped stream's.
    """

    def __init__(self, stream: TextIO) -> None:
        self.wrapped = stream
        self._held_cr = False
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        written = len(text)
        with self._lock:
            if self._held_cr:
                text = "\r" + text
                self._held_cr = False
            if text.endswith("\r"):
                text = text[:-1]
                self._held_cr = True
            if text:
                self.wrapped.write(display(text))
        return written

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def end(self) -> None:
        """Show a `\\r` still held back (the output ended with one)."""
        with self._lock:
            if self._held_cr:
                self._held_cr = False
                self.wrapped.write(display("\r"))

    def flush(self) -> None:
        self.wrapped.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)
