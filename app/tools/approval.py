"""Which tool calls may run without asking, and what the model is told when one may not.

Modes (`Settings.approval`):

| mode        | runs without asking                                    | asks                 |
|-------------|--------------------------------------------------------|----------------------|
| `ask`       | nothing                                                | every call           |
| `auto-read` | read_file, list_dir, glob, grep, recall   (default)    | shell, writes        |
| `auto-edit` | the reads, write_file and edit_file                    | shell, web_fetch     |
| `never-ask` | everything                                             | —                    |

(`auto-read` asks for web_fetch too: a fetch is a network action.) A web_fetch of `localhost`, a loopback,
private or link-local address always asks, whatever the mode, unless an allow rule names its host.

Whatever the mode — `never-ask` included — a call whose path lies outside the workspace
(after `~`, `..` and symlinks are resolved) always asks. Reads of `extra_read_roots`
(the session's spill folder, whose paths previews name) count as inside.

    ask, reason = needs_approval(name, args, settings.approval, workspace,
                                 extra_read_roots=[ctx.session_folder / "spill"])
    if ask and not await front_end.confirm(describe_call(name, args, workspace), reason):
        outcome = denied_outcome(name, reason)                  # the user said no
    # one-shot without a terminal and without --yes:
        outcome = denied_outcome(name, reason, by="no_terminal")
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.config import APPROVAL_MODES
from app.model.shell_syntax import parse_shell
from app.tools.base import ToolError, ToolOutcome, error, resolve_path
from app.tools.files import split_glob
from app.tools.registry import EDIT_TOOLS, READ_TOOLS, TOOLS

DeniedBy = Literal["user", "no_terminal", "hook", "rule"]
DENIAL_MAX_CHARS = 500  # a reason longer than this is cut (it is one line of the user's)


@dataclass(frozen=True)
class Denial:
    """An approver's "no, because …": `reason` goes back to the model as the tool result."""

    reason: str

    @property
    def said(self) -> str:
        """The reason as one line, at most DENIAL_MAX_CHARS."""
        return " ".join(self.reason.split())[:DENIAL_MAX_CHARS]


def _real(path: Path) -> Path:
    """`path` with every symlink resolved (also for parts that do not exist yet)."""
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def target_paths(name: str, args: Mapping[str, Any], workspace: Path) -> list[Path]:
    """The paths a call would touch, absolute and normalised as the tool will use them (symlinks kept)."""
    info = TOOLS.get(name)
    if info is None or not isinstance(args, Mapping):
        return []
    paths: list[Path] = []
    for arg in info.path_args:
        raw = args.get(arg, info.path_defaults.get(arg))
        if not isinstance(raw, str):
            continue
        try:
            path = resolve_path(raw, workspace)
        except ToolError:
            continue
        if name == "glob" and isinstance(args.get("pattern"), str):
            base, _rest = split_glob(args["pattern"].strip())
            path = Path(os.path.normpath(path / base))
        paths.append(path)
    return paths


@dataclass(frozen=True)
class ShellPaths:
    """The files a shell command's redirections open: `> x` writes, `< x` reads; `unknown` lists what
    bulkhead cannot name before the command runs (`> $F`, `> ~/x`, a relative path after `cd`)."""

    writes: tuple[Path, ...] = ()
    reads: tuple[Path, ...] = ()
    unknown: tuple[str, ...] = ()


_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero"})
_CHANGES_FOLDER = frozenset({"cd", "pushd", "popd"})


def shell_paths(command: str, workspace: Path) -> ShellPaths:
    """The paths a shell command redirects to or from, absolute (relative ones start at the workspace,
    where the command runs)."""
    syntax = parse_shell(command)
    if syntax.doubt:
        return ShellPaths(unknown=(f"cannot read the command for sure: {syntax.doubt}",))
    moves = any(c.words and c.words[0] in _CHANGES_FOLDER for c in syntax.commands)
    writes: list[Path] = []
    reads: list[Path] = []
    unknown: list[str] = []
    for redirection in syntax.redirections:
        target = redirection.target
        if target is None:
            unknown.append(f"{redirection.operator} (a target only known when it runs)")
            continue
        if target in _NOT_FILES or target.startswith("/dev/fd/"):
            continue
        if moves and not target.startswith("/"):
            unknown.append(f"{redirection.operator} {target} (after a cd)")
            continue
        path = Path(os.path.normpath(Path(workspace).expanduser() / target))
        (writes if redirection.writes else reads).append(path)
    return ShellPaths(tuple(writes), tuple(reads), tuple(unknown))


def _paths_of(name: str, args: Mapping[str, Any], workspace: Path) -> list[Path]:
    if name == "shell" and isinstance(args, Mapping) and isinstance(args.get("command"), str):
        found = shell_paths(args["command"], workspace)
        return [*found.writes, *found.reads]
    return target_paths(name, args, workspace)


def outside_workspace(
    name: str, args: Mapping[str, Any], workspace: Path, extra_read_roots: Iterable[Path] = ()
) -> list[Path]:
    """Paths of the call that resolve outside the workspace (empty when all are inside); for the shell,
    the files its redirections open."""
    root = _real(Path(workspace).expanduser())
    allowed = [root]
    if name in READ_TOOLS:
        allowed += [_real(Path(extra).expanduser()) for extra in extra_read_roots]
    return [
        path
        for path in _paths_of(name, args, workspace)
        if not any(_inside(_real(path), base) for base in allowed)
    ]


def landing_places(name: str, args: Mapping[str, Any], workspace: Path) -> tuple[Path, ...]:
    """Where the call's paths really lead now (every link resolved): taken before the user is asked and again
    after, so a link swapped in while they decide does not carry the approved call somewhere else."""
    return tuple(_real(path) for path in _paths_of(name, args, workspace))


# Files that decide what bulkhead (or an agent) does next, or that git runs: a write to them always asks.
PROTECTED_FOLDERS = frozenset({".claude", ".bulkhead", ".git"})
PROTECTED_NAMES = frozenset({".mcp.json", "agents.md", "claude.md"})


def _protected(path: Path, root: Path) -> bool:
    for candidate in {Path(os.path.normpath(path)), _real(path)}:
        try:
            parts = candidate.relative_to(root).parts
        except ValueError:
            continue
        lowered = [part.lower() for part in parts]  # a case-insensitive file system opens .Claude too
        if any(part in PROTECTED_FOLDERS for part in lowered) or (lowered and lowered[-1] in PROTECTED_NAMES):
            return True
    return False


def protected_writes(name: str, args: Mapping[str, Any], workspace: Path) -> list[Path]:
    """Files this call would write that always ask, whatever the approval mode, rules or hooks say:
    `.claude/`, `.bulkhead/`, `.git/`, `.mcp.json`, `AGENTS.md`, `CLAUDE.md` (a repository's settings,
    instructions and git's own files — writing them would change what runs next time)."""
    if name == "shell" and isinstance(args, Mapping) and isinstance(args.get("command"), str):
        paths = list(shell_paths(args["command"], workspace).writes)
    elif name in EDIT_TOOLS:
        paths = target_paths(name, args, workspace)
    else:
        return []
    workspace = Path(workspace).expanduser()
    roots = {Path(os.path.normpath(workspace)), _real(workspace)}
    return [path for path in paths if any(_protected(path, root) for root in roots)]


def always_asks(name: str, args: Mapping[str, Any], workspace: Path) -> str:
    """Why this call asks whatever the approval mode, the rules or a hook say ("" when nothing forces it):
    a protected file written, or a shell redirection bulkhead cannot name. (Paths outside the workspace
    are `outside_workspace`'s.)"""
    protected = protected_writes(name, args, workspace)
    if protected:
        shown = _shown(protected[0], workspace)
        return (
            f"{name} writes {shown}: a repository's settings, instructions and git files "
            f"(.claude/, .bulkhead/, .git/, .mcp.json, AGENTS.md, CLAUDE.md) always ask"
        )
    if name == "shell" and isinstance(args, Mapping) and isinstance(args.get("command"), str):
        unknown = shell_paths(args["command"], workspace).unknown
        if unknown:
            return f"shell opens a file bulkhead cannot name before it runs: {unknown[0]}"
    return ""


def _shown(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(Path(os.path.normpath(Path(workspace).expanduser()))).as_posix()
    except ValueError:
        return str(path)


def needs_approval(
    name: str, args: Mapping[str, Any], mode: str, workspace: Path, *, extra_read_roots: Iterable[Path] = ()
) -> tuple[bool, str]:
    """(True, why) when the user must approve this call first; (False, why not) when it may run."""
    outside = outside_workspace(name, args, workspace, extra_read_roots)
    if outside:
        path = outside[0]
        real = _real(path)
        shown = str(path) if real == path else f"{path} (resolves to {real})"
        return True, f"{name} touches a path outside the workspace: {shown}"
    forced = always_asks(name, args, workspace)
    if forced:
        return True, forced
    if name not in TOOLS:
        return True, f"unknown tool {name!r}"
    private = _private_fetch(name, args)
    if private:
        return True, private
    if mode == "never-ask":
        return False, "approval mode never-ask"
    if mode == "auto-read" and name in READ_TOOLS:
        return False, "read-only tool (approval mode auto-read)"
    if mode == "auto-edit" and (name in READ_TOOLS or name in EDIT_TOOLS):
        kind = "edit" if name in EDIT_TOOLS else "read-only"
        return False, f"{kind} tool inside the workspace (approval mode auto-edit)"
    what = {"shell": "runs a shell command", "edit": "changes files", "fetch": "fetches a web page"}.get(
        TOOLS[name].kind, "reads files"
    )
    if mode not in APPROVAL_MODES:
        return True, f"{name} {what}; unknown approval mode {mode!r}, so every call asks"
    return True, f"{name} {what} (approval mode {mode})"


def _private_fetch(name: str, args: Mapping[str, Any]) -> str:
    """Why a web_fetch of this machine or a private network asks whatever the mode ("" for other calls):
    the model must not reach the user's own services unasked. An allow rule naming the host still lets it
    run (`WebFetch(domain:localhost)`), as the "always" answer writes it."""
    if name != "web_fetch" or not isinstance(args, Mapping):
        return ""
    from app.tools.web_fetch import host_of, is_private_host

    host = host_of(str(args.get("url", "")))
    if not is_private_host(host):
        return ""
    return (
        f"web_fetch reaches {host}, this machine or a private network: it always asks unless a rule allows it"
    )


LONG_WHITESPACE_RE = re.compile(r"[ \t]{4,}")


def visible_whitespace(text: str) -> str:
    """Runs of four or more spaces or tabs as `⟨N spaces⟩`: padding cannot push `; touch …` out of sight."""

    def run(match: re.Match[str]) -> str:
        chunk = match.group(0)
        tabs = chunk.count("\t")
        what = f"{len(chunk)} spaces" if not tabs else f"{len(chunk) - tabs} spaces, {tabs} tabs"
        return f" ⟨{what}⟩ "

    return LONG_WHITESPACE_RE.sub(run, text)


def describe_call(name: str, args: Mapping[str, Any], workspace: Path, max_chars: int | None = None) -> str:
    """The approval prompt's text: `shell: make test`, `write_file app/x.py (12 lines)`. What is approved is
    shown whole — a shell command is never cut, long whitespace runs are shown with their length and
    newlines as ⏎ — unless `max_chars` asks for a short label (never for a question)."""
    args = args if isinstance(args, Mapping) else {}
    if name == "shell":
        text = f"shell: {args.get('command', '')}"
    elif name == "write_file":
        content = args.get("content", "")
        lines = (
            content.count("\n") + (1 if content and not content.endswith("\n") else 0)
            if isinstance(content, str)
            else 0
        )
        text = f"write_file {args.get('path', '')} ({lines} line{'' if lines == 1 else 's'})"
    elif name == "edit_file":
        text = f"edit_file {args.get('path', '')}" + (" (replace all)" if args.get("replace_all") else "")
    elif name == "recall":
        text = f"recall {args.get('keys', '')}"
    elif name == "web_fetch":
        text = f"web_fetch {args.get('url', '')}"
    else:
        shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
        text = f"{name} {shown}"
    text = " ".join(text.split()) if name != "shell" else visible_whitespace(text).replace("\n", " ⏎ ")
    return text if max_chars is None or len(text) <= max_chars else text[: max_chars - 1] + "…"


def denied_outcome(name: str, reason: str = "", *, by: DeniedBy = "user", said: str = "") -> ToolOutcome:
    """The tool result the model gets for a call that did not run.

    `by="user"`: the user said no (`reason`, if any, is why it asked; `said`, what they told the model);
    `by="no_terminal"`: one-shot mode with nobody to ask and no `--yes`;
    `by="hook"`: a PreToolUse hook blocked it (`reason` is the hook's);
    `by="rule"`: a deny rule of the permission settings (`reason` names the rule and its file).
    """
    detail = f": {reason}" if reason else ""
    if by == "no_terminal":
        return error(
            f"Not run: this {name} call needs approval{detail}, and there is no terminal to ask for "
            f"approval; rerun with --yes to allow tools. Continue without it, or tell the user what "
            f"you would have run."
        )
    if by == "hook":
        return error(f"Blocked by a PreToolUse hook; this {name} call was not run{detail}")
    if by == "rule":
        return error(
            f"Denied by the user's permission settings; this {name} call was not run{detail}. "
            f"Do not retry it; choose another approach or ask the user."
        )
    if said:
        return error(
            f"The user denied this {name} call and said: {said}\nIt was not run. Do what they said; do not "
            f"retry it unchanged."
        )
    return error(
        f"The user denied this {name} call{detail}. It was not run. Do not retry it unchanged; "
        f"ask the user how to proceed or choose another approach."
    )
