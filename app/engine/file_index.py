"""The workspace's files, for fuzzy `@` completion: listed once off the UI thread, matched in memory.

    index = build_file_index(workspace, max_files=200_000)      # a worker thread: git or a walk
    FuzzyPaths(index).complete("clipy")                          # → [("app/cli.py", False), …]

Listing: inside a git work tree `git ls-files --cached --others --exclude-standard` gives exactly
the files git does not ignore (its own .gitignore rules, nested ones and `.git/info/exclude`
included); elsewhere (or without git) a walk that skips version-control folders and the usual
generated ones (`__pycache__`, `node_modules`, virtualenvs, tool caches). Folders are derived
from the files (`app/`), so an ignored folder never appears. Each path is stat'ed once for its
modification time; the list is kept in *static order*: recently modified first, then shallow,
then short — what the completion shows for a bare `@` and how it breaks ties.

Matching (`FuzzyPaths.complete`): the typed letters must appear in order (case-insensitive), as
in fzf — `clipy` finds `app/cli.py`. Matches rank by how the query lands, best first: the file
name itself, the start of the name, inside the name, inside the path, letters in order within the
name, letters in order across the path; within a rank, static order decides. A keystroke costs a
few C-speed passes over the candidates, never a Python loop per path per letter: a bitmask of the
letters each path holds rules most paths out, the narrowed set carries over while the query grows,
and each rank stops scanning as soon as it has filled the list.
"""

from __future__ import annotations

import os
import re
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add
from pathlib import Path

from app.tools.gitsafe import run_git

GIT_LIST_TIMEOUT_S = 20.0  # past this, the walk lists the files instead
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
        ".eggs",
        ".idea",
        ".DS_Store",
    }
)
RECENT_SECONDS = 7 * 24 * 3600  # a file modified in the last week, and newer than most, ranks as recent
RECENT_SHARE = 0.10  # "newer than most": newer than the file at this share from the newest end
PROGRESS_EVERY = 5_000  # files between two progress callbacks while listing
MAX_COMPLETIONS = 8


@dataclass(frozen=True)
class FileIndex:
    """The workspace's paths (relative, POSIX; folders end in "/"), in static order."""

    root: Path
    paths: tuple[str, ...]
    built_at: float
    source: str  # "git" | "walk"
    truncated: bool = False  # stopped at max_files
    files: int = 0
    elapsed_s: float = 0.0

    def __len__(self) -> int:
        return len(self.paths)


def _git_files(root: Path) -> list[str] | None:
    """The files git does not ignore under `root` (relative to it), or None outside a work tree. Through
    `app.tools.gitsafe`: typing `@` must not run the repository's `core.fsmonitor` (or anything else)."""
    done = run_git(
        root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=GIT_LIST_TIMEOUT_S
    )
    if done is None or done.returncode != 0:
        return None
    return list(dict.fromkeys(os.fsdecode(raw) for raw in done.stdout.split(b"\0") if raw))


def _walk_files(root: Path, limit: int, progress: Callable[[int], None] | None) -> list[str]:
    """Files under `root` (relative), skipping SKIP_DIRS and symlinked folders; at most `limit` + 1."""
    found: list[str] = []
    stack = [(root, "")]
    while stack and len(found) <= limit:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        stack.append((Path(entry.path), f"{prefix}{entry.name}/"))
                elif entry.name not in SKIP_DIRS:
                    found.append(prefix + entry.name)
                    if progress is not None and len(found) % PROGRESS_EVERY == 0:
                        progress(len(found))
            except OSError:
                continue
    return found


def build_file_index(
    root: str | Path,
    *,
    max_files: int = 200_000,
    progress: Callable[[int], None] | None = None,
    now: Callable[[], float] = time.time,
) -> FileIndex:
    """List `root`'s files (git's view when it is a work tree), stat them, and order them statically."""
    started = time.perf_counter()
    root = Path(root).expanduser()
    listed = _git_files(root)
    source = "git"
    if listed is None:
        source = "walk"
        listed = _walk_files(root, max_files, progress)
    truncated = len(listed) > max_files
    listed = listed[:max_files]
    mtimes: dict[str, float] = {}
    folders: dict[str, float] = {}
    for number, relative in enumerate(listed, start=1):
        try:
            stat = os.stat(root / relative, follow_symlinks=False)
        except OSError:  # deleted since git listed it
            continue
        if relative.endswith("/") or (stat.st_mode & 0o170000) == 0o040000:  # a submodule: a folder
            folders[relative.rstrip("/") + "/"] = stat.st_mtime
            continue
        mtimes[relative] = stat.st_mtime
        parts = relative.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) + "/"
            if folders.get(folder, -1.0) < stat.st_mtime:
                folders[folder] = stat.st_mtime
        if progress is not None and source == "git" and number % PROGRESS_EVERY == 0:
            progress(number)
    everything = {**folders, **mtimes}
    ordered = static_order(everything, now())
    return FileIndex(
        root=root,
        paths=tuple(ordered),
        built_at=now(),
        source=source,
        truncated=truncated,
        files=len(mtimes),
        elapsed_s=time.perf_counter() - started,
    )


def static_order(mtimes: dict[str, float], now: float) -> list[str]:
    """Paths ordered for display: recent first (see RECENT_*), then shallow, files before folders, short."""
    if not mtimes:
        return []
    times = sorted(mtimes.values(), reverse=True)
    threshold = times[min(len(times) - 1, int(len(times) * RECENT_SHARE))]
    recent_after = max(threshold, now - RECENT_SECONDS)

    def key(path: str) -> tuple[bool, float, int, bool, int, str]:
        modified = mtimes[path]
        recent = modified > recent_after
        return (
            not recent,
            -modified if recent else 0.0,
            path.count("/", 0, len(path) - 1),
            path.endswith("/"),
            len(path),
            path,
        )

    return sorted(mtimes, key=key)


# -- matching ---------------------------------------------------------------------------------------

FUZZY_RANKED = (
    100  # fuzzy matches ranked by tightness when the candidates are many (the first, in static order)
)
SUBSET_SHARE = 0.15  # scan only the candidates' text when they are at most this share of all paths
_SEPARATORS = "/._- "


def _char_bit(char: str) -> int:
    code = ord(char)
    if 97 <= code <= 122:  # a-z
        return 1 << (code - 97)
    if 48 <= code <= 57:  # 0-9
        return 1 << (26 + code - 48)
    return 1 << (36 + code % 27)  # everything else shares 27 bits: a cheap, conservative filter


def letter_mask(text: str) -> int:
    """Which characters `text` holds, and (bits 63+) which letters it holds twice or more."""
    mask = 0
    seen: set[str] = set()
    for char in text:
        if char in seen:
            if "a" <= char <= "z":
                mask |= 1 << (63 + ord(char) - 97)
        else:
            seen.add(char)
            mask |= _char_bit(char)
    return mask


def fuzzy_pattern(query: str) -> re.Pattern[str]:
    """The letters of `query` in order, each gap possessive (no backtracking): `c[^l\\n]*+l…`."""
    parts = [re.escape(query[0])]
    for char in query[1:]:
        parts.append(f"[^{re.escape(char)}\\n]*+{re.escape(char)}")
    return re.compile("".join(parts))


class _Text:
    """Lines joined into one string, so a regex scans them all at C speed; a match maps back to its path."""

    def __init__(self, lines: list[str], ids: list[int] | None = None) -> None:
        # A newline before every line too: "\nquery" finds the lines that start with the query with a
        # fast literal search, where `(?m)^query` tests every position.
        self.text = "\n" + "\n".join(lines) + "\n"
        self.lines = lines
        self.ids = ids  # line number → path index (None: the same)
        self.starts = list(accumulate(map(add, map(len, lines), repeat(1)), initial=1))[:-1]  # all at C speed

    def scan(self, pattern: re.Pattern[str], limit: int) -> list[tuple[int, tuple[int, int]]]:
        """(path index, looseness) of the first match in each of the first `limit` matching lines."""
        found: list[tuple[int, tuple[int, int]]] = []
        last = -1
        starts, ids, lines = self.starts, self.ids, self.lines
        text = self.text
        for match in pattern.finditer(text):
            position = match.start() + (text[match.start()] == "\n")  # a "\nquery" match: the next line
            line = bisect_right(starts, position) - 1
            if line != last:
                last = line
                start = position - starts[line]
                mid_word = start > 0 and lines[line][start - 1] not in _SEPARATORS
                found.append(
                    (line if ids is None else ids[line], (match.end() - match.start(), int(mid_word)))
                )
                if len(found) >= limit:
                    break
        return found


@dataclass
class FuzzyPaths:
    """Fuzzy completion over one FileIndex; keeps the narrowed candidates of the previous keystroke."""

    index: FileIndex
    _lower: list[str] = field(init=False, repr=False)
    _names: list[str] = field(init=False, repr=False)
    _masks: list[int] = field(init=False, repr=False)
    _last: tuple[str, list[int]] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self._lower = [path.lower() for path in self.index.paths]
        self._names = [path.rstrip("/").rsplit("/", 1)[-1] for path in self._lower]
        self._masks = [letter_mask(path) for path in self._lower]
        self._all = (_Text(self._names), _Text(self._lower))

    def complete(self, query: str, limit: int = MAX_COMPLETIONS) -> list[tuple[str, bool]]:
        """The best `limit` paths for `query`: (path, is_folder), best first."""
        query = query.lower()
        paths = self.index.paths
        if not query:
            chosen: list[int] = list(range(min(limit, len(paths))))
        else:
            candidates = self._candidates(query)
            if candidates is None or len(candidates) > len(paths) * SUBSET_SHARE:
                names, full = self._all  # scanning everything costs less than gathering the many
            else:
                names = _Text([self._names[i] for i in candidates], candidates)
                full = _Text([self._lower[i] for i in candidates], candidates)
            chosen = self._rank(query, names, full, limit)
        return [(paths[i], paths[i].endswith("/")) for i in chosen]

    def _candidates(self, query: str) -> list[int] | None:
        """Paths holding every letter of the query (None for one or two letters: nearly everything
        does), narrowed from the previous keystroke's when the query grew."""
        if len(query) < 3:
            self._last = None
            return None
        wanted = letter_mask(query)
        masks = self._masks
        last = self._last
        if last is not None and query.startswith(last[0]):
            candidates = [i for i in last[1] if masks[i] & wanted == wanted]
        else:
            candidates = [i for i, mask in enumerate(masks) if mask & wanted == wanted]
        self._last = (query, candidates)
        return candidates

    @staticmethod
    def _rank(query: str, names: _Text, paths: _Text, limit: int) -> list[int]:
        """Ranks, best first — 0: the name is the query (any extension), 1: the name starts with it,
        2: the name holds it, 3: the path holds it (a query with a "/"), 4: its letters in order in the
        name, 5: in the path. Within ranks 0–3 static order decides; within 4–5 the tightest match (fewest letters
        skipped, then starting a word), among the first FUZZY_RANKED in static order."""
        escaped = re.escape(query)
        chosen: list[int] = []
        taken: set[int] = set()

        def add(found: list[tuple[int, tuple[int, int]]]) -> bool:
            for i, _looseness in found:
                if i not in taken:
                    taken.add(i)
                    chosen.append(i)
            return len(chosen) >= limit

        tiers = [(names, rf"\n{escaped}(?:\.[^\n]*)?(?=\n)"), (names, f"\n{escaped}"), (names, escaped)]
        if "/" in query:  # else a folder holding the query is a fuzzy match of looseness 0: found below
            tiers.append((paths, escaped))
        for text, pattern in tiers:
            if add(text.scan(re.compile(pattern), limit + len(chosen))):
                return chosen[:limit]
        fuzzy = fuzzy_pattern(query)
        for text in (names, paths):
            found = [hit for hit in text.scan(fuzzy, FUZZY_RANKED + len(chosen)) if hit[0] not in taken]
            found.sort(key=lambda hit: hit[1])  # stable: static order among equals
            if add(found[:limit]):
                break
        return chosen[:limit]
