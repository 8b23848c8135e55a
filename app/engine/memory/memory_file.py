"""`memory = "auto"`: the facts live in a file of bulkhead's, outside the repository, and join the system prompt.

    path = memory_path(workspace)            # <data home>/memory/<project>-<hash>.md (BULKHEAD_HOME moves it)
    append_facts(path, facts, max_bytes)     # one "- fact" line each; the oldest leave once over max_bytes
    section = prompt_section(path, max_bytes)   # what joins the system prompt ("" when there is nothing)

The file is the user's to read and edit (plain Markdown, 0600, its folder 0700); bulkhead only appends and, past
`memory_max_bytes`, drops the oldest facts. It is never written into the workspace: a repository never receives
what bulkhead remembered unless the user accepts a fact (`memory = "suggest"`, `/memory review`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

from app.fsutil import atomic_write

HEADER = (
    "# Remembered by bulkhead\n"
    'Facts bulkhead\'s memory worker kept from earlier sessions of this project (memory = "auto"). They may be '
    "out of date: the code and the project's instructions win where they differ.\n"
)
_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")


def memory_folder() -> Path:
    from app.config import data_home

    return data_home() / "memory"


def project_key(workspace: Path) -> str:
    """The project the facts belong to: the repository root above the workspace (else the workspace)."""
    from app.engine.instructions import project_root

    return str(project_root(Path(workspace)))


def memory_path(workspace: Path) -> Path:
    """`<data home>/memory/<folder name>-<8 hex of its path>.md` — one file per project, named so a person finds it."""
    project = project_key(workspace)
    name = _SLUG_RE.sub("-", Path(project).name or "root").strip("-") or "project"
    digest = hashlib.sha256(project.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return memory_folder() / f"{name}-{digest}.md"


def read_facts(path: Path) -> list[str]:
    """The file's fact lines (`- …`), oldest first; a missing or unreadable file has none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line[2:].strip() for line in text.splitlines() if line.startswith("- ") and line[2:].strip()]


def _within(facts: Sequence[str], max_bytes: int) -> list[str]:
    """The newest facts whose lines (with the header) fit `max_bytes`."""
    room = max_bytes - len(HEADER.encode("utf-8")) - 1
    kept: list[str] = []
    for fact in reversed(facts):
        size = len(f"- {fact}\n".encode())
        if size > room:
            break
        kept.append(fact)
        room -= size
    return kept[::-1]


def append_facts(path: Path, facts: Sequence[str], max_bytes: int) -> tuple[int, int]:
    """Add `facts` (one line each) and keep the file within `max_bytes` by dropping the oldest: (added, dropped)."""
    if not facts:
        return 0, 0
    existing = read_facts(path)
    every = [*existing, *(f for f in facts if f not in existing)]
    kept = _within(every, max_bytes) if max_bytes > 0 else every
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with_mode = 0o600
    atomic_write(path, HEADER + "\n" + "".join(f"- {fact}\n" for fact in kept), with_mode)
    added = len(every) - len(existing)
    return added, len(every) - len(kept)


def prompt_section(path: Path, max_bytes: int) -> str:
    """What joins the system prompt: the header and the newest facts within `max_bytes` ("" when none, or 0)."""
    if max_bytes <= 0 or not path.is_file():
        return ""
    facts = _within(read_facts(path), max_bytes)
    if not facts:
        return ""
    return HEADER + "\n" + "".join(f"- {fact}\n" for fact in facts).rstrip("\n")
