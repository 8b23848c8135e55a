"""What an edit_file / write_file call would change, before it runs: the diff an approval card shows.

    preview = preview_change("edit_file", args, workspace, max_lines=40)
    preview.summary   # "app/x.py: +3 −1 lines"
    preview.text      # the unified diff (a new file: its first lines), at most max_lines
    preview.problem   # "old_string was not found …" — the call would fail as it is

Nothing is written: the file is read (at most PREVIEW_MAX_BYTES) and the change made in memory with the
tools' own code (`app.tools.files.replaced_text`, `unified_diff`), so the card shows exactly what the
tool would do. Any other tool: None.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.sizes import format_size
from app.tools.base import ToolError, display_path, resolve_path
from app.tools.files import diff_counts, looks_binary, replaced_text, unified_diff

PREVIEW_MAX_BYTES = 2 * 1024 * 1024  # a larger file is not read for a preview (the card says so)
CHANGE_TOOLS = ("edit_file", "write_file")


@dataclass(frozen=True)
class ChangePreview:
    summary: str  # one line: the file and what changes
    text: str = ""  # a unified diff, or a new file's first lines (`new_file`)
    new_file: bool = False
    more_lines: int = 0  # lines of the diff (or file) left out of `text`
    problem: str = ""  # the call would fail: why (the tool's own words)


def _cut(lines: list[str], max_lines: int) -> tuple[str, int]:
    shown = lines[:max_lines]
    return "".join(shown), max(0, len(lines) - len(shown))


def _current_text(path: Path, shown: str) -> tuple[str | None, str]:
    """(the file's text, "") — or (None, why it is not previewed)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return None, f"{shown}: {exc.strerror or exc}"
    if size > PREVIEW_MAX_BYTES:
        return None, f"{shown} is {format_size(size)}: too large to preview here"
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read {shown}: {exc.strerror or exc}"
    if looks_binary(data[:8192]):
        return None, f"{shown} is binary ({format_size(size)}): no text diff"
    try:
        return data.decode("utf-8"), ""
    except UnicodeDecodeError:
        return None, f"{shown} is not UTF-8 text: no diff"


def preview_change(
    name: str, args: Mapping[str, Any], workspace: Path, *, max_lines: int = 40
) -> ChangePreview | None:
    """What `name(args)` would change (see the module's doc); None for a tool that changes no file."""
    if name not in CHANGE_TOOLS or not isinstance(args, Mapping) or max_lines <= 0:
        return None
    try:
        path = resolve_path(str(args.get("path", "")), workspace)
    except ToolError as exc:
        return ChangePreview(summary=str(exc), problem=str(exc))
    shown = display_path(path, workspace)
    exists = os.path.lexists(path)
    if name == "write_file":
        content = args.get("content")
        if not isinstance(content, str):
            return ChangePreview(summary=f"{shown}: no content given", problem="content is missing")
        if not exists:
            lines = content.splitlines(keepends=True)
            text, more = _cut(lines, max_lines)
            size = format_size(len(content.encode("utf-8", "surrogatepass")))
            return ChangePreview(
                summary=f"{shown}: a new file, {len(lines):,} line{'' if len(lines) == 1 else 's'} ({size})",
                text=text,
                new_file=True,
                more_lines=more,
            )
        old, why = _current_text(path, shown)
        if old is None:
            return ChangePreview(summary=f"{shown}: replaced whole — {why}")
        if old == content:
            return ChangePreview(summary=f"{shown}: no change (it already has this content)")
        diff = unified_diff(old, content, shown)
    else:
        old_string, new_string = args.get("old_string"), args.get("new_string")
        if not isinstance(old_string, str) or not isinstance(new_string, str) or not old_string:
            return ChangePreview(
                summary=f"{shown}: old_string / new_string missing", problem="arguments missing"
            )
        if not exists:
            problem = (
                f"{shown} does not exist; edit_file will fail (to create a file the model uses write_file)"
            )
            return ChangePreview(summary=problem, problem=problem)
        old, why = _current_text(path, shown)
        if old is None:
            return ChangePreview(summary=f"{shown}: {why}", problem=why)
        try:
            new, _count = replaced_text(old, old_string, new_string, bool(args.get("replace_all")), shown)
        except ToolError as exc:
            return ChangePreview(summary=f"{shown}: the edit will fail", problem=str(exc))
        diff = unified_diff(old, new, shown)
    added, removed = diff_counts(diff)
    body = diff.splitlines(keepends=True)[2:]  # the --- / +++ header names the file the summary names
    text, more = _cut(body, max_lines)
    return ChangePreview(summary=f"{shown}: +{added} −{removed} lines", text=text, more_lines=more)
