"""The CCR archive: content-addressed copies of everything a view dropped or cut.

Key = first 16 lowercase hex digits of SHA-256 of the content; marker `<<ccr:KEY>>`
(ChatCLI's marker, so transcripts interoperate); stubs end with
`[full content recoverable via @recall <<ccr:KEY>>]`.

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
from dataclasses import dataclass, field

MARKER_RE = re.compile(r"<<ccr:([0-9a-f]{16})>>")
# Lenient, for what people and models type: ccr:KEY, <ccr:KEY>, CCR:KEY, @recall KEY, bare KEY.
_LENIENT_RE = re.compile(r"(?i)(?:ccr:\s*)?(?<![0-9a-z])([0-9a-f]{16})(?![0-9a-z])")
MAX_ENTRY_BYTES = 64 * 1024 * 1024

REASONS = ("microcompact", "dedup", "budget", "L1", "L2", "L3", "shrink", "summary", "recovery")


def archive_key(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def marker(key: str) -> str:
    return f"<<ccr:{key}>>"


def stub_suffix(key: str) -> str:
    return f"[full content recoverable via @recall {marker(key)}]"


def markers_in(text: str) -> list[str]:
    """Keys of every marker in `text`, in order, without repeats."""
    return list(dict.fromkeys(MARKER_RE.findall(text)))


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


def make_entry(content: str, reason: str, source_ids: tuple[str, ...] = (),
               max_bytes: int = MAX_ENTRY_BYTES) -> ArchiveEntry | None:
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
