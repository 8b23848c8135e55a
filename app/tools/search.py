"""grep: ripgrep when it is on PATH, a Python fallback otherwise — same output either way.

Output lines are `path:line:text`, paths relative to the workspace when the search is
inside it (absolute otherwise), files in path order (each folder's entries sorted by
name, depth first — what `rg --sort path` does). Both back ends skip hidden and binary
files and do not follow symlinks, and both honour .gitignore inside git repos (the fallback
asks `git ls-files` which paths git ignores, so its rules are git's own — through
`app.tools.gitsafe`, so no program the repository configures, e.g. core.fsmonitor, runs); the
fallback also always skips `node_modules` and `__pycache__`. Text is cut per line and the listing is
capped, identically for both (the cutting is done here, not by ripgrep).

Set `USE_RIPGREP = False` (or make `shutil.which("rg")` find nothing) to force the fallback.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from app.providers.base import ToolSpec
from app.tools.base import PATH_ARG, ToolContext, ToolError, ToolInfo, ToolOutcome, error, ok, schema
from app.tools.files import BINARY_SAMPLE_BYTES
from app.tools.gitsafe import run_git

USE_RIPGREP = True
MAX_MATCH_LINES = 500
MAX_COUNTED_LINES = 10_000  # past this we stop counting and say "10,000+"
MAX_TEXT_CHARS = 500
FALLBACK_SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
RG_TIMEOUT = 120.0
GIT_TIMEOUT = 10.0  # for the fallback's `git ls-files`; past it the search runs without .gitignore


def ripgrep_path() -> str | None:
    return shutil.which("rg") if USE_RIPGREP else None


def _cut_text(text: str) -> str:
    text = text.rstrip("\r")
    if len(text) > MAX_TEXT_CHARS:
        return text[:MAX_TEXT_CHARS] + f" … [line cut: {len(text):,} chars]"
    return text


def _format(raw_line: str) -> tuple[str, str] | None:
    """(path, `path:line:text` with the text cut) from ripgrep's `path\\0line:text`; None for a line that
    is not a match line."""
    path, nul, rest = raw_line.partition("\0")
    match = re.match(r"^(\d+):", rest) if nul else None
    if not match:
        return None
    return path, f"{path}:{rest[: match.end()]}{_cut_text(rest[match.end() :])}"


class _Collector:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.total = 0

    def add(self, line: str) -> bool:
        """Keep `line`; False once counting can stop."""
        self.total += 1
        if len(self.lines) < MAX_MATCH_LINES:
            self.lines.append(line)
        return self.total < MAX_COUNTED_LINES

    def render(self, pattern: str, where: str) -> ToolOutcome:
        if not self.lines:
            return ok(f"No matches for /{pattern}/ in {where}")
        text = "\n".join(self.lines)
        if self.total > len(self.lines):
            counted = f"{self.total:,}+" if self.total >= MAX_COUNTED_LINES else f"{self.total:,}"
            text += (
                f"\n[… showing the first {len(self.lines):,} of {counted} matching lines; "
                f"narrow the pattern, the path or the glob]"
            )
        return ok(text)


async def grep(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
    pattern: str = args["pattern"]
    if not pattern:
        return error("grep: pattern is empty")
    root = ctx.resolve(args.get("path", "."))
    shown = ctx.display(root)
    try:
        root.stat()
    except FileNotFoundError:
        return error(f"grep: path not found: {shown}")
    except OSError as exc:
        return error(f"grep: cannot access {shown}: {exc.strerror or exc}")
    file_glob = args.get("glob") or None
    where = "the workspace" if shown == "." else shown
    rg = ripgrep_path()
    if rg:
        return await _ripgrep(rg, pattern, shown, file_glob, where, ctx)
    return await asyncio.to_thread(_python_grep, pattern, root, file_glob, where, ctx)


# -- ripgrep -----------------------------------------------------------------------------------------
MAX_RAW_LINE_BYTES = 64 * 1024  # of one output line; the rest is dropped before decoding


async def _stream_lines(stream: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """Lines of `stream` without their newline, each at most MAX_RAW_LINE_BYTES (memory stays bounded)."""
    buffer = bytearray()
    overflow = False
    while chunk := await stream.read(1 << 16):
        start = 0
        while (newline := chunk.find(b"\n", start)) >= 0:
            if not overflow:
                buffer += chunk[start:newline]
            yield bytes(buffer[:MAX_RAW_LINE_BYTES])
            buffer.clear()
            overflow = False
            start = newline + 1
        if not overflow:
            buffer += chunk[start:]
            if len(buffer) > MAX_RAW_LINE_BYTES:
                del buffer[MAX_RAW_LINE_BYTES:]
                overflow = True
    if buffer:
        yield bytes(buffer)


async def _ripgrep(
    rg: str, pattern: str, shown: str, file_glob: str | None, where: str, ctx: ToolContext
) -> ToolOutcome:
    argv = [
        rg,
        "--line-number",
        "--no-heading",
        "--color",
        "never",
        "--with-filename",
        "--sort",
        "path",
        "--no-messages",
        "--null",  # the path ends at a NUL: a name with `:12:` in it cannot pass for another file
    ]
    if file_glob:
        argv += ["--glob", file_glob]
    argv += ["-e", pattern]
    if shown != ".":
        argv += ["--", shown]
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=ctx.workspace,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        return error(f"grep: could not start ripgrep: {exc.strerror or exc}")
    assert proc.stdout is not None and proc.stderr is not None
    collector = _Collector()
    stderr_task = asyncio.ensure_future(_drain(proc.stderr))
    finished = timed_out = False
    try:
        async with asyncio.timeout(RG_TIMEOUT):
            async for raw in _stream_lines(proc.stdout):
                found = _format(raw.decode("utf-8", "replace"))
                if found is None:
                    continue
                if ctx.hides(Path(os.path.normpath(ctx.workspace / found[0]))):
                    continue  # dropped without a word: a count would tell the model what the file holds
                if not collector.add(found[1]):
                    break
            else:
                finished = True
    except TimeoutError:
        timed_out = True
    finally:
        if not finished:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        returncode = await proc.wait()
        stderr = (await stderr_task).decode("utf-8", "replace").strip()
    if finished and returncode == 2 and not collector.lines:
        return error(_rg_error(pattern, stderr))
    outcome = collector.render(pattern, where)
    if timed_out:
        return error(outcome.content + f"\n[grep stopped after {RG_TIMEOUT:g} s; narrow the path or pattern]")
    return outcome


async def _drain(stream: asyncio.StreamReader, keep: int = 1 << 16) -> bytes:
    """Read `stream` to its end, keeping the first `keep` bytes."""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        if len(kept) < keep:
            kept += chunk[: keep - len(kept)]
    return bytes(kept)


def _rg_error(pattern: str, stderr: str) -> str:
    if "regex parse error" in stderr or "error parsing" in stderr.lower():
        detail = stderr.replace("regex parse error:", "").strip()
        return f"grep: invalid regular expression /{pattern}/: {detail}"
    return f"grep failed: {stderr or 'ripgrep exited with status 2'}"


# -- the Python fallback -----------------------------------------------------------------------------
def _glob_filter(file_glob: str | None) -> Any:
    """A predicate on (relative path, name) that mimics `rg --glob` (including `!` negation)."""
    if not file_glob:
        return lambda relative, name: True
    negate = file_glob.startswith("!")
    pattern = file_glob[1:] if negate else file_glob
    anchored = "/" in pattern.strip("/")
    pattern = pattern.lstrip("/")

    def matches(relative: str, name: str) -> bool:
        if anchored:
            hit = fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(
                relative, pattern.replace("**/", "")
            )
        else:
            hit = fnmatch.fnmatchcase(name, pattern)
        return hit != negate

    return matches


def _git_ignored(root: Path) -> frozenset[str]:
    """The paths under the folder `root` that git ignores, relative to it (folders end in "/").

    Empty outside a git work tree, without git, or when git is too slow: the search then
    simply includes those files, as ripgrep does outside a repository.
    """
    done = run_git(  # hardened: the repository's config cannot make this auto-approved read run a program
        root,
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
        timeout=GIT_TIMEOUT,
    )
    if done is None or done.returncode != 0:
        return frozenset()
    return frozenset(os.fsdecode(raw) for raw in done.stdout.split(b"\0") if raw)


def _walk(root: Path, ignored: frozenset[str] = frozenset(), prefix: str = "") -> Iterator[Path]:
    """Files under `root` in `rg --sort path` order: sorted by name per folder, depth first.

    `ignored` holds paths relative to the search root (`prefix` is `root`'s own relative path).
    """
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        relative = prefix + entry.name
        if entry.is_dir(follow_symlinks=False):
            if entry.name not in FALLBACK_SKIP_DIRS and relative + "/" not in ignored:
                yield from _walk(Path(entry.path), ignored, relative + "/")
        elif entry.is_file(follow_symlinks=False) and relative not in ignored:
            yield Path(entry.path)


def _python_grep(
    pattern: str, root: Path, file_glob: str | None, where: str, ctx: ToolContext
) -> ToolOutcome:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        return error(f"grep: invalid regular expression /{pattern}/: {exc}")
    except (OverflowError, RecursionError) as exc:
        return error(f"grep: invalid regular expression /{pattern}/: {exc}")
    keep = _glob_filter(file_glob)
    if root.is_dir():
        walked = _walk(root, _git_ignored(root))
        files: Iterator[Path] = (
            path for path in walked if keep(path.relative_to(root).as_posix(), path.name)
        )
    else:
        files = iter([root])
    collector = _Collector()
    for path in files:
        if ctx.cancel is not None and ctx.cancel.is_set():
            raise ToolError("cancelled by the user")
        shown = ctx.display(path)
        if ctx.hides(path):  # never opened: not even whether it matches is told
            continue
        try:
            with path.open("rb") as handle:
                if b"\x00" in handle.read(BINARY_SAMPLE_BYTES):
                    continue
                handle.seek(0)
                for number, raw in enumerate(handle, start=1):
                    text = raw.decode("utf-8", "replace").rstrip("\n")
                    if regex.search(text) and not collector.add(f"{shown}:{number}:{_cut_text(text)}"):
                        return collector.render(pattern, where)
        except OSError:
            continue
    return collector.render(pattern, where)


# -- what the model is told ---------------------------------------------------------------------------
TOOLS: tuple[ToolInfo, ...] = (
    ToolInfo(
        ToolSpec(
            "grep",
            "Search file contents with a regular expression. Each output line is the path, the line "
            "number and the text, joined by colons. Hidden and binary files are skipped. The glob "
            "argument, for example *.py, restricts which files are searched.",
            schema(
                {
                    "pattern": {
                        "type": "string",
                        "description": "Regular expression (use (?i) to ignore case).",
                    },
                    "path": {
                        **PATH_ARG,
                        "description": "File or directory to search (default: the workspace).",
                    },
                    "glob": {"type": "string", "description": "Only search files matching this glob."},
                },
                ["pattern"],
            ),
        ),
        "read",
        grep,
        ("path",),
        {"path": "."},
    ),
)
