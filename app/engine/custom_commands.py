"""Custom slash commands: Markdown prompt files, as in Claude Code.

    .bulkhead/commands/review.md          → /review          (this project)
    .claude/commands/review.md            → /review          (this project, Claude Code's folder)
    .claude/commands/frontend/comp.md     → /frontend:comp   (a sub-folder becomes a prefix)
    <config folder>/commands/standup.md   → /standup         (yours, every project)

The folders are read in that order (the workspace's, then the repository root's when it differs,
then the global one); the first file of a name wins, and a built-in command's name is never taken.
`/review the parser` sends the file's text with `$ARGUMENTS` replaced by `the parser` (and `$1`,
`$2`, … by the words); a file without `$ARGUMENTS` gets `ARGUMENTS: …` appended when arguments are
given. A project's command folder, or a file in it, that is a link leading outside the project is
skipped (said in the problems). Optional YAML front matter: `description` (shown in /help and the palette, else the first
line) and `argument-hint` (shown after the name). Names and descriptions come from files: they are
shown through the textsafe seam.

A `CommandCatalog` keeps the commands of a workspace and reads the files again only when a stat of the
folders says a file was added, changed or removed — cheap enough to ask before each prompt and for each
completion, so a file added while bulkhead runs is a command at once (no /new).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_COMMAND_BYTES = 256 * 1024  # a prompt file bigger than this is not a command (a misplaced log)
_NAME_RE = re.compile(r"^\w[\w.-]*(?::\w[\w.-]*)*$")
_POSITIONAL_RE = re.compile(r"\$([1-9])")


@dataclass(frozen=True)
class CustomCommand:
    name: str  # what follows the "/": review, frontend:comp
    path: Path
    source: str  # .bulkhead/commands | .claude/commands | global
    description: str
    argument_hint: str
    body: str

    @property
    def slash(self) -> str:
        return f"/{self.name}"

    def expand(self, arguments: str) -> str:
        """The prompt this command sends with `arguments`."""
        arguments = arguments.strip()
        body = self.body
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        used = "$ARGUMENTS" in body or bool(_POSITIONAL_RE.search(body))
        body = _POSITIONAL_RE.sub(
            lambda m: words[int(m.group(1)) - 1] if int(m.group(1)) <= len(words) else "", body
        )
        body = body.replace("$ARGUMENTS", arguments)
        if arguments and not used:
            body = body.rstrip("\n") + f"\n\nARGUMENTS: {arguments}"
        return body


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """(`key: value` pairs of a leading `---` block, the rest)."""
    if not text.startswith("---"):
        return {}, text
    lines = text.splitlines(keepends=True)
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            meta: dict[str, str] = {}
            for line in lines[1:index]:
                key, colon, value = line.partition(":")
                if colon and key.strip():
                    meta[key.strip().lower()] = value.strip().strip("'\"")
            return meta, "".join(lines[index + 1 :]).lstrip("\n")
    return {}, text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if line:
            return line[:80]
    return ""


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def command_folders(workspace: Path, global_dir: Path) -> list[tuple[Path, str]]:
    from app.engine.instructions import project_root

    workspace = Path(workspace).expanduser()
    roots = [workspace]
    root = project_root(workspace)
    if root != workspace.resolve():
        roots.append(root)
    folders = [
        (base / folder / "commands", f"{folder}/commands")
        for base in roots
        for folder in (".bulkhead", ".claude")
    ]
    return [*folders, (Path(global_dir) / "commands", "global")]


def discover(
    workspace: Path, *, global_dir: Path | None = None, reserved: Iterable[str] = ()
) -> tuple[list[CustomCommand], list[str]]:
    """The custom commands for `workspace`, sorted by name, and what was skipped (and why)."""
    from app.engine.instructions import global_folder

    reserved = {name.lstrip("/").lower() for name in reserved}
    found: dict[str, CustomCommand] = {}
    problems: list[str] = []
    from app.engine.instructions import project_root

    project = Path(os.path.realpath(project_root(workspace)))
    for folder, source in command_folders(
        workspace, global_dir if global_dir is not None else global_folder()
    ):
        if not folder.is_dir():
            continue
        confine = None if source == "global" else project  # your own folder may link anywhere
        if confine is not None and not _inside(Path(os.path.realpath(folder)), confine):
            problems.append(
                f"{source} is a link to {os.path.realpath(folder)}, outside the project; its files are not "
                f"commands"
            )
            continue
        for path in sorted(folder.rglob("*.md")):
            if confine is not None and not _inside(Path(os.path.realpath(path)), confine):
                problems.append(
                    f"{source}/{path.relative_to(folder).as_posix()} is a link to a file outside the project; "
                    f"skipped"
                )
                continue
            relative = path.relative_to(folder).with_suffix("")
            name = ":".join(relative.parts)
            if not _NAME_RE.match(name):
                problems.append(
                    f"{source}/{relative.as_posix()}.md: {name!r} cannot be typed as a command name "
                    f"(letters, digits, _ . - only); skipped"
                )
                continue
            if name.lower() in reserved:
                problems.append(f"{source}/{relative.as_posix()}.md: /{name} is a built-in command; skipped")
                continue
            if name in found:
                continue
            try:
                if path.stat().st_size > MAX_COMMAND_BYTES:
                    problems.append(
                        f"{source}/{relative.as_posix()}.md is larger than {MAX_COMMAND_BYTES:,} bytes; "
                        f"skipped"
                    )
                    continue
                with path.open("rb") as handle:  # at most the limit, even if the file grew since
                    text = handle.read(MAX_COMMAND_BYTES + 1).decode("utf-8", errors="replace")
            except OSError as exc:
                problems.append(f"{path}: {exc.strerror or exc}; skipped")
                continue
            meta, body = _front_matter(text)
            found[name] = CustomCommand(
                name=name,
                path=path,
                source=source,
                description=meta.get("description") or _first_line(body),
                argument_hint=meta.get("argument-hint", ""),
                body=body,
            )
    return sorted(found.values(), key=lambda command: command.name), problems


Stamp = tuple[tuple[str, int, int], ...]


class CommandCatalog:
    """The custom commands of `workspace`, read again only when a command file was added, changed or removed.

    catalog = CommandCatalog(workspace, reserved=built_in_words)
    commands, problems = catalog.read()   # a stat of each folder and file; files read only on a change
    """

    def __init__(
        self, workspace: Path, *, global_dir: Path | None = None, reserved: Iterable[str] = ()
    ) -> None:
        from app.engine.instructions import global_folder

        self.workspace = Path(workspace)
        self.global_dir = Path(global_dir) if global_dir is not None else global_folder()
        self.reserved = tuple(reserved)
        self._folders = [folder for folder, _source in command_folders(self.workspace, self.global_dir)]
        self._seen: Stamp | None = None
        self._found: tuple[list[CustomCommand], list[str]] = ([], [])

    def stamp(self) -> Stamp:
        """(path, mtime_ns, size) of each command folder and each `.md` file in them."""
        stamps: list[tuple[str, int, int]] = []
        for folder in self._folders:
            try:
                found = folder.stat()
            except OSError:
                continue
            stamps.append((str(folder), found.st_mtime_ns, found.st_size))
            for path in folder.rglob("*"):  # a sub-folder's file changes the sub-folder, not the folder
                try:
                    found = path.stat()
                except OSError:
                    continue
                stamps.append((str(path), found.st_mtime_ns, found.st_size))
        return tuple(sorted(stamps))

    def read(self) -> tuple[list[CustomCommand], list[str]]:
        """The commands and what was skipped (and why), read again only when the files changed."""
        stamp = self.stamp()
        if stamp != self._seen:
            self._found = discover(self.workspace, global_dir=self.global_dir, reserved=self.reserved)
            self._seen = stamp
        return self._found


def expand_slash(text: str, workspace: Path) -> str | None:
    """`/name arguments` as the custom command's prompt, or None when no command has that name
    (`bulkhead -p "/review the parser"`)."""
    word, _, arguments = text.strip().partition(" ")
    name = word.removeprefix("/")
    for command in discover(workspace)[0]:
        if command.name == name:
            return command.expand(arguments)
    return None
