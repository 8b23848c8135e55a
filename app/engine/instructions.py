"""Project instructions: `AGENTS.md` and `CLAUDE.md`, joined into the system prompt.

Where they are read from, in this order (later ones are more specific, so they come later):

1. the global config folder (beside `config.toml`): your instructions for every project;
2. the repository root (the nearest folder above the workspace holding `.git`; without one, the
   workspace itself), then every folder between it and the workspace, ending with the workspace.

In each folder `AGENTS.md` (the cross-tool convention) comes before `CLAUDE.md` (Claude Code's name).

`@path` imports work as in Claude Code: a `@path` word (not inside a code span or a fenced block)
names a file relative to the importing file (`~/` and absolute paths too); imported files may
import in turn, at most `MAX_IMPORT_DEPTH` (5) hops deep; each file is included once. Imports from
project files must stay inside the project (the repository root): a checked-out repository cannot
pull `~/.ssh/…` into the prompt; a project's own `AGENTS.md`/`CLAUDE.md` that is a link to a file outside
it is not read, and a file is read up to `instructions_max_bytes` only. Imports from your global file may
name any file you can read. `/memory` and `#` never write through a link.

Everything is part of the system prompt — the non-compactable floor — and is capped at
`instructions_max_bytes` (0 turns project instructions off).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
MAX_IMPORT_DEPTH = 5  # Claude Code's documented limit on nested imports
_FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN_RE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_IMPORT_RE = re.compile(r"(?<![\w@`])@([^\s`@]+)")
_TRAILING = ".,;:!?)]}'\"`"
HEADER = (
    "# Project instructions\n"
    "The user keeps these instructions in AGENTS.md / CLAUDE.md files. Follow them; "
    "the more specific (later) ones win where they differ."
)


@dataclass(frozen=True)
class InstructionFile:
    path: Path
    scope: str  # global | project | import
    bytes: int
    imported_by: Path | None = None
    shown: str = ""  # relative to the repository root, ~/… or absolute


@dataclass(frozen=True)
class Instructions:
    text: str  # what joins the system prompt; "" when there is nothing
    files: tuple[InstructionFile, ...] = ()
    problems: tuple[str, ...] = ()  # imports refused, unreadable files, the cut

    @property
    def bytes(self) -> int:
        return len(self.text.encode("utf-8"))


def join_system(base: str, instructions: str) -> str:
    """The system prompt sent: bulkhead's (or the session's own) followed by the instructions."""
    return f"{base}\n\n{instructions}" if instructions else base


def global_folder() -> Path:
    """The folder of `config.toml` (BULKHEAD_CONFIG moves it): global AGENTS.md / CLAUDE.md live here."""
    from app.config import config_path

    return config_path().parent


def project_root(workspace: Path) -> Path:
    """The repository root above (or at) the workspace; the workspace itself outside a repository. A
    repository at your home folder or above it (dotfiles kept in git) is not "the project": a folder
    under it without a repository of its own is its own project, so its files cannot import `~/.ssh/…`."""
    workspace = Path(workspace).expanduser().resolve()
    home = Path.home().resolve()
    for folder in (workspace, *workspace.parents):
        if (folder / ".git").exists():
            if folder != workspace and (folder == home or home.is_relative_to(folder)):
                return workspace
            return folder
    return workspace


def project_folders(workspace: Path) -> list[Path]:
    """The root, then each folder down to the workspace."""
    workspace = Path(workspace).expanduser().resolve()
    root = project_root(workspace)
    folders = [workspace]
    while folders[-1] != root:
        folders.append(folders[-1].parent)
    return folders[::-1]


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def import_paths(text: str, base: Path) -> Iterator[tuple[str, Path]]:
    """The `@path` imports of `text` as (as written, resolved against `base`), skipping code."""
    fenced = False
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced or "@" not in line:
            continue
        for match in _IMPORT_RE.finditer(_CODE_SPAN_RE.sub(lambda m: " " * len(m.group()), line)):
            written = match.group(1).rstrip(_TRAILING)
            if not written:
                continue
            path = Path(os.path.expanduser(written))
            yield written, Path(os.path.normpath(path if path.is_absolute() else base / path))


def _read(path: Path, limit: int) -> str | None:
    """At most `limit` bytes of the file as text (a 1 GB file costs `limit`, not 1 GB); None for a binary or
    unreadable one."""
    try:
        with path.open("rb") as handle:
            data = handle.read(max(0, limit))
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


class _Loader:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.seen: set[Path] = set()
        self.files: list[InstructionFile] = []
        self.sections: list[str] = []
        self.problems: list[str] = []
        self.used = len(HEADER.encode("utf-8"))
        self.cut = False

    def label(self, path: Path) -> str:
        if _inside(path, self.root):
            return path.relative_to(self.root).as_posix() or path.name
        home = Path.home()
        return "~/" + path.relative_to(home).as_posix() if _inside(path, home) else str(path)

    def add(
        self,
        path: Path,
        scope: str,
        *,
        depth: int = 0,
        imported_by: Path | None = None,
        confine: Path | None = None,
    ) -> None:
        real = Path(os.path.realpath(path))
        if real in self.seen or self.cut:
            return
        if confine is not None and imported_by is None and not _inside(real, confine):
            self.problems.append(
                f"{self.label(path)} is a link to {real}, outside the project ({confine}); a project's "
                f"instructions are its own files — not read"
            )
            return
        text = _read(real, self.max_bytes + 1)
        if text is None:
            if imported_by is not None:
                self.problems.append(
                    f"{self.label(imported_by)}: @{self.label(path)} is not a readable text "
                    f"file; not imported"
                )
            return
        self.seen.add(real)
        what = {"global": "your global instructions", "project": "project instructions"}.get(
            scope, f"imported by {self.label(imported_by) if imported_by else '?'}"
        )
        section = f"## {self.label(path)} ({what})\n{text.rstrip()}\n"
        size = len(section.encode("utf-8")) + 2
        if self.used + size > self.max_bytes:
            room = self.max_bytes - self.used - 200
            self.cut = True
            self.problems.append(
                f"project instructions are cut at {self.max_bytes:,} bytes "
                f"(instructions_max_bytes): {self.label(path)} and what follows are "
                f"{'shortened' if room > 0 else 'left out'}"
            )
            if room <= 0:
                return
            section = (
                section.encode("utf-8")[:room].decode("utf-8", "ignore")
                + "\n[… cut: instructions_max_bytes]\n"
            )
            size = len(section.encode("utf-8")) + 2
        self.used += size
        self.sections.append(section)
        self.files.append(
            InstructionFile(path, scope, len(text.encode("utf-8")), imported_by, self.label(path))
        )
        for written, target in import_paths(text, path.parent):
            if not target.is_file():
                continue  # an e-mail handle, a decorator, a file that is not there: plain text
            if depth + 1 > MAX_IMPORT_DEPTH:
                self.problems.append(
                    f"{self.label(path)}: @{written} is more than {MAX_IMPORT_DEPTH} imports "
                    f"deep; not imported"
                )
                continue
            if confine is not None and not _inside(Path(os.path.realpath(target)), confine):
                self.problems.append(
                    f"{self.label(path)}: @{written} is outside the project ({confine}); "
                    f"imports from project files stay inside it — not imported"
                )
                continue
            self.add(target, "import", depth=depth + 1, imported_by=path, confine=confine)


def load_instructions(workspace: Path, *, max_bytes: int, global_dir: Path | None = None) -> Instructions:
    """Every instruction file for `workspace`, imports resolved, as one text for the system prompt."""
    if max_bytes <= 0:
        return Instructions("")
    root = project_root(workspace)
    loader = _Loader(root, max_bytes)
    folder = global_dir if global_dir is not None else global_folder()
    for name in INSTRUCTION_NAMES:
        if (folder / name).is_file():
            loader.add(folder / name, "global")
    real_root = Path(os.path.realpath(root))
    for project_folder in project_folders(workspace):
        for name in INSTRUCTION_NAMES:
            if (project_folder / name).is_file():
                loader.add(project_folder / name, "project", confine=real_root)
    if not loader.sections:
        return Instructions("", problems=tuple(loader.problems))
    text = HEADER + "\n\n" + "\n".join(loader.sections).rstrip() + "\n"
    return Instructions(text, tuple(loader.files), tuple(loader.problems))


# -- writing: /memory, `#`, /init ------------------------------------------------------------------
def memory_file(workspace: Path) -> Path:
    """Where `/memory TEXT` and a `#` line go: the workspace's AGENTS.md, else its CLAUDE.md, else the
    nearest one towards the repository root, else a new AGENTS.md at the root."""
    for folder in reversed(project_folders(workspace)):
        for name in INSTRUCTION_NAMES:
            if (folder / name).is_file():
                return folder / name
    return project_root(workspace) / "AGENTS.md"


def append_memory(path: Path, text: str) -> None:
    """Add `text` as one bullet at the end of `path` (created if missing). A symlink is never written
    through (it could lead anywhere: a repository's `AGENTS.md → ~/.bashrc`): OSError says so."""
    line = " ".join(text.split())
    if path.is_symlink():
        raise OSError(
            f"{path} is a link to {os.path.realpath(path)}; /memory and # do not write through links — "
            f"add the line to the file yourself"
        )
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became a link since the check
            raise OSError(f"{path} is a link; /memory and # do not write through links") from None
        raise
    with os.fdopen(fd, "r+b") as handle:
        size = os.fstat(fd).st_size
        last = b"\n"
        if size:
            handle.seek(size - 1)
            last = handle.read(1)
        prefix = "" if last == b"\n" else "\n"
        handle.write(f"{prefix}- {line}\n".encode())
