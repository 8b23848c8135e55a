"""The CCR archive: content-addressed copies of everything a view dropped or cut.

Key = first 16 lowercase hex digits of SHA-256 of the content; marker `[[ccr:KEY]]`; stubs end with
`[full content recoverable via @recall [[ccr:KEY]]]`. ChatCLI's `<<ccr:KEY>>` (bulkhead's marker before
issue 36) is still read everywhere a marker is, but never written: a stock OWASP CRS at paranoia level 2
blocks `<<` as an SQL operator (rule 942120), and every archived message carries a marker.

Rules (DESIGN.md §3):
- content that already holds a marker is never archived (markers never nest); a stub
  that replaces it carries its markers forward instead;
- an entry too large to store is not cut (no dangling markers).

Persistence is in `app.store` (table `archive` + FTS5); this module holds the pure parts.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

MARKER_RE = re.compile(r"(?:<<ccr:([0-9a-f]{16})>>|\[\[ccr:([0-9a-f]{16})\]\])")
LEGACY_MARKER_PREFIX = "<<ccr:"
MARKER_PREFIX = "[[ccr:"
# Lenient, for what people and models type: ccr:KEY, <ccr:KEY>, CCR:KEY, @recall KEY, bare KEY.
_LENIENT_RE = re.compile(r"(?i)(?:ccr:\s*)?(?<![0-9a-z])([0-9a-f]{16})(?![0-9a-z])")
MAX_ENTRY_BYTES = 64 * 1024 * 1024

REASONS = ("microcompact", "dedup", "budget", "L1", "L2", "L3", "shrink", "summary", "recovery", "withheld")


def archive_key(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def marker(key: str) -> str:
    return f"[[ccr:{key}]]"


def stub_suffix(key: str) -> str:
    return f"[full content recoverable via @recall {marker(key)}]"


def markers_in(text: str) -> list[str]:
    """Keys of every marker in `text`, in order, without repeats."""
    return list(dict.fromkeys(a or b for a, b in MARKER_RE.findall(text)))


def has_marker(text: str) -> bool:
    """True when `text` holds a marker (either form): it must not be archived or cut without carrying it."""
    return (MARKER_PREFIX in text or LEGACY_MARKER_PREFIX in text) and MARKER_RE.search(text) is not None


_LEGACY_MARKER_RE = re.compile(r"<<ccr:([0-9a-f]{16})>>")


def current_markers(text: str) -> str:
    """`text` with every legacy `<<ccr:KEY>>` written as today's `[[ccr:KEY]]` (a stock CRS at paranoia
    level 2 refuses the old form: rule 942120 reads `<<` as an SQL operator). The same text, the same key."""
    if LEGACY_MARKER_PREFIX not in text:
        return text
    return _LEGACY_MARKER_RE.sub(r"[[ccr:\1]]", text)


def parse_recall_keys(text: str) -> list[str]:
    """Every key named in `text`, leniently: `ccr:KEY`, `<ccr:KEY>`, upper case, prose, several."""
    return list(dict.fromkeys(m.lower() for m in _LENIENT_RE.findall(text or "")))


@dataclass(frozen=True)
class ArchiveEntry:
    key: str
    content: str
    reason: str
    source_ids: tuple[str, ...] = ()
    created_at: float = field(default_factory=time.time)
    session_id: str = ""

    @property
    def bytes(self) -> int:
        return len(self.content.encode("utf-8", "surrogatepass"))


def make_entry(
    content: str, reason: str, source_ids: tuple[str, ...] = (), max_bytes: int = MAX_ENTRY_BYTES
) -> ArchiveEntry | None:
    """An entry for `content`, or None when it must not be archived (holds a marker, too large).

    A caller that gets None must not cut the content unless it carries the existing
    markers forward (`markers_in`) — that is what keeps every marker resolvable.
    """
    if MARKER_RE.search(content):
        return None
    if len(content.encode("utf-8", "surrogatepass")) > max_bytes:
        return None
    return ArchiveEntry(key=archive_key(content), content=content, reason=reason, source_ids=source_ids)


def stub_text(summary_line: str, keys: list[str] | tuple[str, ...]) -> str:
    """A one-line stub that names every key it stands for (carried-forward markers included)."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return summary_line
    if len(keys) == 1:
        return f"{summary_line} {stub_suffix(keys[0])}"
    return f"{summary_line} [full content recoverable via @recall " + " ".join(marker(k) for k in keys) + "]"


# -- helpers the compaction passes and the recall tool share ---------------------------------------

# A stub's recall suffix, with one or several markers (what `stub_text` and `stub_suffix` write).
STUB_SUFFIX_RE = re.compile(
    r"\s*\[full content recoverable via @recall(?:\s+(?:<<ccr:[0-9a-f]{16}>>|\[\[ccr:[0-9a-f]{16}\]\]))+\]"
)


def defang_markers(text: str) -> str:
    """`text` with every `[[ccr:KEY]]` (or `<<ccr:KEY>>`) written as `ccr:KEY` — still a key recall accepts, no longer a marker.

    Archived content must never hold a marker (markers never nest). When content that holds
    markers has to be archived (a dropped segment that contains stubs, an original message that
    quotes a marker), the markers are defanged in the archived copy and carried forward, as real
    markers, by the stub or notice that replaces it.
    """
    return MARKER_RE.sub(lambda m: f"ccr:{m.group(1) or m.group(2)}", text)


def strip_markers(text: str) -> str:
    """`text` without its stub suffixes and with any other marker defanged (the body to cut again)."""
    return defang_markers(STUB_SUFFIX_RE.sub("", text))


def recall_suffix(keys: Sequence[str]) -> str:
    """`[full content recoverable via @recall [[ccr:A]] [[ccr:B]]]`, or "" without keys."""
    keys = list(dict.fromkeys(keys))
    if not keys:
        return ""
    return "[full content recoverable via @recall " + " ".join(marker(k) for k in keys) + "]"


def format_recall(entries_by_key: dict[str, str | None]) -> str:
    """What the `recall` tool returns for the keys asked, in the order asked.

    One key: the archived content alone, byte for byte. Several keys: one section each,
    headed `=== ccr:KEY (N chars) ===`. A missing key is said in words. The output never holds
    a marker (headers use the bare `ccr:KEY` form), so it can itself be archived again later.
    """
    if not entries_by_key:
        return "No archive key given. Pass keys like [[ccr:0123456789abcdef]] or ccr:0123456789abcdef."
    if len(entries_by_key) == 1:
        key, content = next(iter(entries_by_key.items()))
        if content is None:
            return f"No archived content for ccr:{key} (unknown key, or archived in another database)."
        return content
    sections: list[str] = []
    for key, content in entries_by_key.items():
        if content is None:
            sections.append(f"=== ccr:{key}: not found in the archive ===")
        else:
            sections.append(f"=== ccr:{key} ({len(content):,} chars) ===\n{content}")
    return "\n\n".join(sections)
