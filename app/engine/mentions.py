"""`@path` in a prompt attaches that file (or lists that folder), as in other coding agents.

A mention is `@` at the start of a word (or after an opening bracket or quote) followed by a path to an existing file or folder:
relative to the workspace, absolute, or `~/…`. Anything else — an e-mail address, a
decorator, `@recall` in a stub, a path that does not exist — is left alone, as is trailing
punctuation (`see @README.md.`). Each distinct path is attached once, in order, at most
`max_mentions` of them.

The turn loop attaches them the way the model would have read them: `read_file` /
`list_dir` calls recorded as if asked for (origin `mention`), so budgets, spill files,
dedup of repeated reads and microcompaction treat them like any other read. As in Claude
Code, a mention is the user's own request: no PreToolUse hook and no approval prompt — inside the
workspace. A path outside it asks, like any read there (refused when nobody can be asked). Only
text the user typed carries mentions: text piped into `bulkhead -p` is data (`Engine.submit(typed=…)`).

Completion (the prompt's `@` list) is fuzzy over the workspace's files (`app.engine.file_index`:
git's view of them, so nothing .gitignore'd is offered); a path that leaves the workspace —
absolute, `~/…`, `./…`, `../…` — completes one segment at a time, like a shell, and never
offers the generated folders the index skips (`__pycache__`, `node_modules`, …).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from app.engine.file_index import SKIP_DIRS

_STARTS_A_MENTION = r"(?<![^\s(\[{\"'])@"  # `@` at the start, or after a space, an opening bracket or quote
MENTION_RE = re.compile(_STARTS_A_MENTION + r"(\S+)")
MENTION_AT_END_RE = re.compile(_STARTS_A_MENTION + r"\S*$")
TRAILING_PUNCTUATION = ".,;:!?)]}'\"`"
MAX_COMPLETIONS = 8


@dataclass(frozen=True)
class Mention:
    path: str  # as typed: relative to the workspace, absolute, or ~/…
    is_dir: bool

    @property
    def tool(self) -> str:
        return "list_dir" if self.is_dir else "read_file"


def _resolve(path: str, workspace: Path) -> Path:
    candidate = Path(os.path.expanduser(path))
    return candidate if candidate.is_absolute() else workspace / candidate


def find_mentions(prompt: str, workspace: Path, limit: int) -> tuple[list[Mention], int]:
    """The distinct `@paths` that name something on disk, in order (at most `limit`), and how
    many more there were."""
    found: list[Mention] = []
    seen: set[Path] = set()
    extra = 0
    for match in MENTION_RE.finditer(prompt):
        path = match.group(1)
        while path and not _resolve(path, workspace).exists() and path[-1] in TRAILING_PUNCTUATION:
            path = path[:-1]
        target = _resolve(path, workspace) if path else None
        if target is None or not (target.is_file() or target.is_dir()):
            continue
        key = target.resolve()
        if key in seen:
            continue
        seen.add(key)
        if len(found) >= limit:
            extra += 1
            continue
        found.append(Mention(path, target.is_dir()))
    return found, extra


def mention_at_end(text: str) -> str:
    """The `@…` word `text` ends with (what the prompt holds before the cursor), or ""."""
    match = MENTION_AT_END_RE.search(text)
    return match.group(0) if match else ""


def is_explicit_path(typed: str) -> bool:
    """What follows `@` names a place itself (absolute, home, ./ or ../): complete it segment by segment."""
    return typed.startswith(("/", "~", "./", "../")) or typed in (".", "..")


def describe_completion(path: str, is_dir: bool) -> tuple[str, str]:
    """A fuzzy match as a completion row: (`@path`, "file" | "folder")."""
    return f"@{path}", "folder" if is_dir else "file"


def complete_mention(token: str, workspace: Path) -> list[tuple[str, str]]:
    """Completions for the word being typed when it starts with `@`: `(@path, "file"|"folder")`,
    one segment at a time; folders end in `/`. Hidden entries only when the segment starts with `.`."""
    if not token.startswith("@"):
        return []
    typed = token[1:]
    head, slash, prefix = typed.rpartition("/")
    folder, base = (_resolve(head or "/", workspace), head + "/") if slash else (workspace, "")
    hidden = prefix.startswith(".")
    try:
        with os.scandir(folder) as scan:
            entries = sorted(
                (
                    entry
                    for entry in scan
                    if entry.name.startswith(prefix)
                    and entry.name not in SKIP_DIRS
                    and (hidden or not entry.name.startswith("."))
                ),
                key=lambda entry: entry.name,
            )
    except OSError:
        return []
    completions: list[tuple[str, str]] = []
    for entry in entries[:MAX_COMPLETIONS]:
        try:
            is_dir = entry.is_dir()
        except OSError:
            continue
        completions.append((f"@{base}{entry.name}{'/' if is_dir else ''}", "folder" if is_dir else "file"))
    return completions
