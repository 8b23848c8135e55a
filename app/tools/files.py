"""File tools: read_file, list_dir, glob, write_file, edit_file.

Every problem is an error outcome worded for the model (what went wrong, what to do
instead); nothing here raises for a bad path or a strange file. Blocking file work runs
in a thread so the event loop (and the UI) never waits on a slow disk.
"""

from __future__ import annotations

import asyncio
import codecs
import difflib
import errno
import os
import stat
from pathlib import Path
from typing import Any

from app.fsutil import WriteFailed, atomic_write
from app.model.tools import ToolSpec
from app.sizes import format_size
from app.tools.base import (
    PATH_ARG,
    ToolContext,
    ToolError,
    ToolInfo,
    ToolOutcome,
    display_path,
    error,
    ok,
    schema,
)

DEFAULT_READ_LIMIT = 2000
UNRANGED_MAX_BYTES = 256 * 1024  # a read without offset/limit shows at most this much
MAX_LINE_CHARS = 2000  # longer lines are cut (minified files) and say so
BINARY_SAMPLE_BYTES = 8192
BINARY_NON_TEXT_RATIO = 0.30
LIST_MAX_ENTRIES = 500
GLOB_MAX_RESULTS = 500
DIFF_CONTEXT_LINES = 3
_TEXT_CONTROLS = {0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1B}


# -- shared helpers ----------------------------------------------------------------------------------
def _stat(path: Path, shown: str) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise ToolError(_not_found(path, shown)) from None
    except NotADirectoryError:
        raise ToolError(f"{shown} does not exist: a parent of it is a file, not a directory") from None
    except PermissionError:
        raise ToolError(f"permission denied: {shown}") from None
    except OSError as exc:
        raise ToolError(f"cannot access {shown}: {exc.strerror or exc}") from None


def _not_found(path: Path, shown: str) -> str:
    message = f"file not found: {shown}"
    parent = path.parent
    if parent.is_dir():
        try:
            names = [entry.name for entry in os.scandir(parent)]
        except OSError:
            names = []
        close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
        if close:
            message += " (did you mean " + ", ".join(close) + "?)"
    else:
        message += " (its folder does not exist either)"
    return message


def looks_binary(sample: bytes) -> bool:
    """NUL bytes, or mostly bytes that are neither text nor valid UTF-8."""
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(sample, final=False)
    if not text:
        return False
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ord(ch) not in _TEXT_CONTROLS))
    return odd / len(text) > BINARY_NON_TEXT_RATIO


def _binary_message(shown: str, size: int) -> str:
    return (
        f"{shown} is a binary file ({size:,} bytes, {format_size(size)}); its content is not shown. "
        f"Inspect it with shell (e.g. `file {shown}` or `xxd {shown} | head`)."
    )


def _read_sample(path: Path, shown: str) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(BINARY_SAMPLE_BYTES)
    except PermissionError:
        raise ToolError(f"permission denied: {shown}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None


def _require_regular_file(path: Path, shown: str, verb: str) -> os.stat_result:
    info = _stat(path, shown)
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(
            f"{shown} is a directory, not a file; use list_dir to see its entries"
            if verb == "read"
            else f"{shown} is a directory, not a file"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{shown} is not a regular file (a device, socket or pipe); it cannot be {verb}")
    return info


async def _in_thread(function: Any, *args: Any) -> ToolOutcome:
    return await asyncio.to_thread(function, *args)


# -- read_file ---------------------------------------------------------------------------------------
async def read_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    return await _in_thread(_read_file, args, ctx)


MAX_LINE_BYTES = 4 * MAX_LINE_CHARS + 4  # read at most this much of one line into memory


def _readline(handle: Any) -> tuple[bytes, int] | None:
    """The next line (at most MAX_LINE_BYTES of it) and its full length; None at the end."""
    chunk = handle.readline(MAX_LINE_BYTES)
    if not chunk:
        return None
    length = len(chunk)
    if not chunk.endswith(b"\n") and length == MAX_LINE_BYTES:
        while True:  # an overlong line: skip the rest without holding it
            more = handle.readline(1 << 20)
            length += len(more)
            if not more or more.endswith(b"\n"):
                break
    return chunk, length


def _count_rest(handle: Any) -> int:
    """Lines left in `handle` (a last line without a newline counts)."""
    count = 0
    last = b"\n"
    while block := handle.read(1 << 20):
        count += block.count(b"\n")
        last = block[-1:]
    return count + (1 if last != b"\n" else 0)


def _decode_line(raw: bytes, length: int) -> tuple[str, bool, bool, bool]:
    """(text, invalid UTF-8?, cut?, CRLF?) for one line as read."""
    body = raw[:-1] if raw.endswith(b"\n") else raw
    crlf = body.endswith(b"\r")
    if crlf:
        body = body[:-1]
    cut = length > len(raw)
    if cut:  # the read stopped mid-line: drop a possibly split last character
        body = body[: MAX_LINE_BYTES - 4]
    try:
        text = body.decode("utf-8")
        invalid = False
    except UnicodeDecodeError as exc:
        invalid = not (cut and exc.start >= len(body) - 3)
        text = body.decode("utf-8", "replace")
    if cut or len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f" … [line cut: {length:,} bytes]"
        cut = True
    return text, invalid, cut, crlf


def _read_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = ctx.resolve(args["path"])
    shown = ctx.display(path)
    info = _require_regular_file(path, shown, "read")
    size = info.st_size
    ranged = "offset" in args or "limit" in args
    offset = max(1, int(args.get("offset", 1)))
    limit = max(1, int(args.get("limit", DEFAULT_READ_LIMIT)))
    if size == 0:
        return ok(f"[{shown} is empty: 0 lines]")
    if looks_binary(_read_sample(path, shown)):
        return error(_binary_message(shown, size))

    byte_cap = None if ranged else UNRANGED_MAX_BYTES
    out: list[str] = []
    shown_bytes = 0
    number = 0
    invalid_lines = long_lines = 0
    crlf = False
    try:
        with path.open("rb") as handle:
            while (line := _readline(handle)) is not None:
                raw, length = line
                number += 1
                if number < offset:
                    continue
                if len(out) >= limit or (byte_cap is not None and out and shown_bytes + length > byte_cap):
                    number += _count_rest(handle)
                    break
                text, invalid, cut, is_crlf = _decode_line(raw, length)
                invalid_lines += invalid
                long_lines += cut
                crlf = crlf or is_crlf
                out.append(f"{number:>6}\t{text}")
                shown_bytes += length
    except PermissionError:
        return error(f"permission denied: {shown}")
    except OSError as exc:
        return error(f"cannot read {shown}: {exc.strerror or exc}")

    total_lines = number
    if not out:
        return error(
            f"{shown} has {total_lines:,} lines; offset {offset:,} is past the end. "
            f"Read from an offset between 1 and {total_lines:,}."
        )
    last_shown = offset + len(out) - 1
    notes: list[str] = []
    if last_shown < total_lines or offset > 1:
        notes.append(f"lines {offset:,}–{last_shown:,} of {total_lines:,} ({format_size(size)})")
    else:
        notes.append(f"{total_lines:,} lines, the whole file ({format_size(size)})")
    if last_shown < total_lines:
        more = f"read further with offset={last_shown + 1}"
        if not ranged:
            notes.append(
                f"large file: only the first chunk is shown; {more} and a limit, or grep it "
                f"for what you need instead of reading it whole"
            )
        else:
            notes.append(more)
    if invalid_lines:
        notes.append(
            f"not valid UTF-8: {invalid_lines:,} line{'s' if invalid_lines != 1 else ''} "
            f"decoded with U+FFFD replacement characters (the file itself is unchanged)"
        )
    if long_lines:
        notes.append(
            f"{long_lines:,} line{'s' if long_lines != 1 else ''} longer than {MAX_LINE_CHARS:,} chars cut"
        )
    if crlf:
        notes.append("CRLF line endings (shown without \\r)")
    return ok("\n".join(out) + "\n[" + "; ".join(notes) + "]")


# -- list_dir ----------------------------------------------------------------------------------------
async def list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    return await _in_thread(_list_dir, args, ctx)


def _list_dir(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = ctx.resolve(args.get("path", "."))
    shown = ctx.display(path)
    info = _stat(path, shown)
    if not stat.S_ISDIR(info.st_mode):
        return error(f"{shown} is a file, not a directory; use read_file to read it")
    try:
        entries = list(os.scandir(path))
    except PermissionError:
        return error(f"permission denied: {shown}")
    except OSError as exc:
        return error(f"cannot list {shown}: {exc.strerror or exc}")

    dirs: list[str] = []
    files: list[tuple[str, str]] = []
    for entry in entries:
        if ctx.hides(path / entry.name):  # left out without a word (a count would be an oracle on names)
            continue
        try:
            if entry.is_symlink():
                target = os.readlink(entry.path)
                suffix = "/" if entry.is_dir() else ""
                files.append((f"{entry.name}{suffix} -> {target}", ""))
            elif entry.is_dir(follow_symlinks=False):
                dirs.append(entry.name + "/")
            else:
                files.append((entry.name, format_size(entry.stat(follow_symlinks=False).st_size)))
        except OSError:
            files.append((entry.name, "?"))
    dirs.sort()
    files.sort()
    lines = dirs + [f"{name}  {size}" if size else name for name, size in files]
    header = (
        f"{shown}/ — {len(lines):,} entr{'y' if len(lines) == 1 else 'ies'} "
        f"({len(dirs):,} dir{'s' if len(dirs) != 1 else ''}, {len(files):,} "
        f"file{'s' if len(files) != 1 else ''})"
    )
    if not lines:
        return ok(f"{shown}/ is empty")
    if len(lines) > LIST_MAX_ENTRIES:
        hidden = len(lines) - LIST_MAX_ENTRIES
        lines = lines[:LIST_MAX_ENTRIES] + [
            f"[… {hidden:,} more entries not shown; use glob with a pattern to narrow the listing]"
        ]
    return ok(header + "\n" + "\n".join(lines))


# -- glob --------------------------------------------------------------------------------------------
_GLOB_CHARS = set("*?[")


def split_glob(pattern: str) -> tuple[str, str]:
    """(`base`, `rest`): the literal leading folders of `pattern`, and the part with wildcards.

    `../src/**/*.py` → (`../src`, `**/*.py`); `/etc/*.conf` → (`/etc`, `*.conf`). A `..` after a
    wildcard is kept in the base as well (`a/*/../../x` → (`a/*/../..`, `x`)), so callers that
    normalise the base see where the pattern can really reach.
    """
    expanded = os.path.expanduser(pattern)
    parts = expanded.split("/")
    last_dotdot = max((i for i, part in enumerate(parts) if part == ".."), default=-1)
    first_wild = next((i for i, part in enumerate(parts) if _GLOB_CHARS & set(part)), len(parts) - 1)
    cut = max(first_wild, last_dotdot + 1)
    base = "/".join(parts[:cut])
    if expanded.startswith("/") and not base:
        base = "/"
    return base or ".", "/".join(parts[cut:])


async def glob(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    return await _in_thread(_glob, args, ctx)


def _glob(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    pattern = args["pattern"].strip()
    if not pattern:
        return error("glob: pattern is empty; use e.g. `**/*.py`")
    root = ctx.resolve(args.get("path", "."))
    shown_root = ctx.display(root)
    info = _stat(root, shown_root)
    if not stat.S_ISDIR(info.st_mode):
        return error(f"{shown_root} is a file, not a directory; glob searches under a directory")
    base, rest = split_glob(pattern)
    search_root = Path(os.path.normpath(root / base))
    if not rest:
        matches = [search_root] if search_root.exists() else []
    elif not search_root.is_dir():
        matches = []
    else:
        try:
            matches = [
                p
                for p in search_root.glob(rest)
                if ".git" not in p.relative_to(search_root).parts or ".git" in rest.split("/")
            ]
        except (ValueError, NotImplementedError) as exc:
            return error(f"invalid glob pattern {pattern!r}: {exc}")
        except OSError as exc:
            return error(f"glob failed under {shown_root}: {exc.strerror or exc}")
    matches, behind_links = _within_reach(matches, ctx.workspace, search_root)
    matches = [match for match in matches if not ctx.hides(match)]  # Read deny rules: left out, unsaid
    note = ""
    if behind_links:
        links = ", ".join(sorted(behind_links)[:3])
        note = (
            f"[{sum(behind_links.values()):,} matches behind symlinked folders that lead outside the workspace "
            f"are not listed ({links}); glob that folder by its path to see them — the user will be asked]"
        )
    if not matches:
        where = "the workspace" if shown_root == "." else shown_root
        return ok(f"No files match {pattern} under {where}" + (f"\n{note}" if note else ""))

    def newest_first(path: Path) -> tuple[float, str]:
        try:
            return (-path.stat().st_mtime, str(path))
        except OSError:
            return (0.0, str(path))

    matches.sort(key=newest_first)
    lines = [ctx.display(p) + ("/" if p.is_dir() else "") for p in matches[:GLOB_MAX_RESULTS]]
    if len(matches) > GLOB_MAX_RESULTS:
        lines.append(
            f"[… {len(matches) - GLOB_MAX_RESULTS:,} more matches not shown (newest first); "
            f"use a narrower pattern or path]"
        )
    if note:
        lines.append(note)
    return ok("\n".join(lines))


def _within_reach(
    matches: list[Path], workspace: Path, search_root: Path
) -> tuple[list[Path], dict[str, int]]:
    """(matches whose folder really lies in the workspace or the searched folder, {symlink shown: matches
    hidden}): `*/*` must not walk through a symlinked folder out of the workspace without asking."""
    roots = [Path(os.path.realpath(workspace)), Path(os.path.realpath(search_root))]
    kept: list[Path] = []
    hidden: dict[str, int] = {}
    for match in matches:
        folder = Path(os.path.realpath(match.parent))
        if any(folder == root or folder.is_relative_to(root) for root in roots):
            kept.append(match)
            continue
        link = next((p for p in [match.parent, *match.parent.parents] if p.is_symlink()), match.parent)
        shown = f"{display_path(link, workspace)}/ -> {os.path.realpath(link)}"
        hidden[shown] = hidden.get(shown, 0) + 1
    return kept, hidden


# -- write_file and edit_file ------------------------------------------------------------------------
def unified_diff(old: str, new: str, shown: str) -> str:
    """A unified diff of `old` → `new`, with git-style a/ b/ names and no-newline markers."""

    def lines(text: str) -> list[str]:
        out = text.splitlines(keepends=True)
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n\\ No newline at end of file\n"
        return out

    return "".join(
        difflib.unified_diff(lines(old), lines(new), f"a/{shown}", f"b/{shown}", n=DIFF_CONTEXT_LINES)
    )


def diff_counts(diff: str) -> tuple[int, int]:
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def _read_text_for_change(path: Path, shown: str, verb: str) -> str:
    """The current text of `path`, strictly UTF-8 (a lossy read would corrupt the file)."""
    try:
        data = path.read_bytes()
    except PermissionError:
        raise ToolError(f"permission denied: {shown}") from None
    except OSError as exc:
        raise ToolError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if looks_binary(data[:BINARY_SAMPLE_BYTES]):
        raise ToolError(_binary_message(shown, len(data)) + f" It cannot be {verb} as text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start:,}); editing it as text would corrupt "
            f"it. Use shell (e.g. sed) for this file."
        ) from None


def _write_text(path: Path, shown: str, text: str) -> None:
    """Replace the file atomically (`app.fsutil`): on any failure the original is left as it was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ToolError(
            f"cannot write {shown}: cannot create its folder ({exc.strerror or exc}); nothing was written"
        ) from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"cannot write {shown}: the content is not valid Unicode text (position {exc.start:,}); "
            f"nothing was written"
        ) from None
    try:
        atomic_write(path, data)
    except WriteFailed as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            reason = "permission denied"
        elif exc.errno == errno.ENOSPC:
            reason = "no space left on the device"
        else:
            reason = exc.reason
        raise ToolError(f"cannot write {shown}: {reason} — {exc.unchanged}") from None


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _lines(count: int) -> str:
    return f"{count:,} line{'' if count == 1 else 's'}"


async def write_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    return await _in_thread(_write_file, args, ctx)


def _write_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = ctx.resolve(args["path"])
    shown = ctx.display(path)
    content: str = args["content"]
    old: str | None = None
    if path.exists() or path.is_symlink():
        _require_regular_file(path, shown, "written")
        try:
            old = _read_text_for_change(path, shown, "diffed")
        except ToolError:
            old = None  # binary or not UTF-8: overwritten without a diff
            size = path.stat().st_size
            _write_text(path, shown, content)
            return ok(
                f"Overwrote {shown} (was {size:,} bytes of non-text data; now {_lines(_line_count(content))})"
            )
    if old is not None and old == content:
        return ok(f"No changes: {shown} already has this content ({_lines(_line_count(content))})")
    _write_text(path, shown, content)
    if old is None:
        size = len(content.encode("utf-8"))
        return ok(
            f"Created {shown}: {_lines(_line_count(content))} ({size:,} byte{'' if size == 1 else 's'})"
        )
    diff = unified_diff(old, content, shown)
    added, removed = diff_counts(diff)
    return ok(f"Updated {shown} (+{added} −{removed} lines)\n{diff}")


async def edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    return await _in_thread(_edit_file, args, ctx)


def _line_numbers(text: str, needle: str, limit: int = 10) -> list[int]:
    numbers: list[int] = []
    start = 0
    while len(numbers) < limit:
        index = text.find(needle, start)
        if index < 0:
            break
        numbers.append(text.count("\n", 0, index) + 1)
        start = index + len(needle)
    return numbers


def _edit_file(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = ctx.resolve(args["path"])
    shown = ctx.display(path)
    old_string: str = args["old_string"]
    new_string: str = args["new_string"]
    replace_all = bool(args.get("replace_all", False))
    if not old_string:
        return error("old_string is empty; to create or overwrite a whole file use write_file")
    if old_string == new_string:
        return error("old_string and new_string are identical; nothing to change")
    try:
        _require_regular_file(path, shown, "edited")
    except ToolError as exc:
        if not path.exists() and not path.is_symlink():
            return error(f"{exc}; to create a new file use write_file")
        raise
    text = _read_text_for_change(path, shown, "edited")
    try:
        new_text, count = replaced_text(text, old_string, new_string, replace_all, shown)
    except ToolError as exc:
        return error(str(exc))
    _write_text(path, shown, new_text)
    diff = unified_diff(text, new_text, shown)
    added, removed = diff_counts(diff)
    replaced = f"{count} replacements" if count > 1 else "1 replacement"
    return ok(f"Edited {shown}: {replaced} (+{added} −{removed} lines)\n{diff}")


def replaced_text(
    text: str, old_string: str, new_string: str, replace_all: bool, shown: str
) -> tuple[str, int]:
    """(`text` after edit_file's replacement, how many were replaced), or a ToolError saying why it cannot be
    made — the edit itself, and the diff an approval shows before it (`app.tools.change_preview`)."""
    count = text.count(old_string)
    if count == 0 and "\r\n" in text and "\n" in old_string and "\r\n" not in old_string:
        # The file uses CRLF; the model almost always sends LF.
        crlf_old = old_string.replace("\n", "\r\n")
        if text.count(crlf_old):
            old_string, new_string = crlf_old, new_string.replace("\r\n", "\n").replace("\n", "\r\n")
            count = text.count(old_string)
    if count == 0:
        hint = ""
        stripped = old_string.strip()
        if stripped and stripped != old_string and stripped in text:
            hint = (
                f" Text equal to it except for leading/trailing whitespace is at line "
                f"{_line_numbers(text, stripped, 1)[0]}; copy it exactly, whitespace included."
            )
        raise ToolError(
            f"old_string was not found in {shown}; nothing was changed. Read the file again "
            f"and copy the exact text (indentation and line breaks included).{hint}"
        )
    if count > 1 and not replace_all:
        lines = _line_numbers(text, old_string)
        where = ", ".join(str(n) for n in lines) + (", …" if count > len(lines) else "")
        raise ToolError(
            f"old_string appears {count} times in {shown} (at lines {where}); nothing was changed. "
            f"Include more surrounding lines to make it unique, or set replace_all=true to "
            f"replace every occurrence."
        )
    new_text = (
        text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    )
    return new_text, count


# -- what the model is told ---------------------------------------------------------------------------
TOOLS: tuple[ToolInfo, ...] = (
    ToolInfo(
        ToolSpec(
            "read_file",
            "Read a text file. Returns numbered lines, like cat -n, and a final note with the total "
            "line count. Reads at most limit lines, from line offset on (the first line is 1); prefer "
            "ranged reads of large files. Binary files are not shown.",
            schema(
                {
                    "path": PATH_ARG,
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to read (1-based).",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Most lines to read (default 2000).",
                    },
                },
                ["path"],
            ),
        ),
        "read",
        read_file,
        ("path",),
    ),
    ToolInfo(
        ToolSpec(
            "list_dir",
            "List a directory: sub-directories (ending in /) first, then files with their sizes.",
            schema({"path": {**PATH_ARG, "description": "Directory (default: the workspace)."}}, []),
        ),
        "read",
        list_dir,
        ("path",),
        {"path": "."},
    ),
    ToolInfo(
        ToolSpec(
            "glob",
            "Find files by glob pattern, newest first. A pattern such as *.py matches in the folder itself; "
            "put ** and a slash before it to match at any depth.",
            schema(
                {
                    "pattern": {"type": "string", "description": "Glob pattern; ** matches any depth."},
                    "path": {**PATH_ARG, "description": "Directory to search (default: the workspace)."},
                },
                ["pattern"],
            ),
        ),
        "read",
        glob,
        ("path",),
        {"path": "."},
    ),
    ToolInfo(
        ToolSpec(
            "write_file",
            "Write a whole file, creating it and its parent folders when missing, overwriting it "
            "otherwise. Returns a unified diff against the previous content. Prefer edit_file for changes.",
            schema(
                {
                    "path": PATH_ARG,
                    "content": {"type": "string", "description": "The complete new content."},
                },
                ["path", "content"],
            ),
        ),
        "edit",
        write_file,
        ("path",),
    ),
    ToolInfo(
        ToolSpec(
            "edit_file",
            "Replace an exact string in a file and return the unified diff. The old_string must occur "
            "exactly once, so include surrounding lines to make it unique, unless replace_all is true.",
            schema(
                {
                    "path": PATH_ARG,
                    "old_string": {
                        "type": "string",
                        "description": "Exact text to replace, whitespace included.",
                    },
                    "new_string": {"type": "string", "description": "Replacement text."},
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence (default false).",
                    },
                },
                ["path", "old_string", "new_string"],
            ),
        ),
        "edit",
        edit_file,
        ("path",),
    ),
)
