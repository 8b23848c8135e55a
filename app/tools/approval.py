"""Which tool calls may run without asking, and what the model is told when one may not.

Modes (`Settings.approval`):

| mode        | runs without asking                                    | asks                 |
|-------------|--------------------------------------------------------|----------------------|
| `ask`       | nothing                                                | every call           |
| `auto-read` | read_file, list_dir, glob, grep, recall   (default)    | shell, writes        |
| `auto-edit` | the reads, write_file and edit_file                    | shell                |
| `never-ask` | everything                                             | —                    |

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from app.config import APPROVAL_MODES
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


def outside_workspace(
    name: str, args: Mapping[str, Any], workspace: Path, extra_read_roots: Iterable[Path] = ()
) -> list[Path]:
    """Paths of the call that resolve outside the workspace (empty when all are inside)."""
    root = _real(Path(workspace).expanduser())
    allowed = [root]
    if name in READ_TOOLS:
        allowed += [_real(Path(extra).expanduser()) for extra in extra_read_roots]
    return [
        path
        for path in target_paths(name, args, workspace)
        if not any(_inside(_real(path), base) for base in allowed)
    ]


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
    if name not in TOOLS:
        return True, f"unknown tool {name!r}"
    if mode == "never-ask":
        return False, "approval mode never-ask"
    if mode == "auto-read" and name in READ_TOOLS:
        return False, "read-only tool (approval mode auto-read)"
    if mode == "auto-edit" and (name in READ_TOOLS or name in EDIT_TOOLS):
        kind = "edit" if name in EDIT_TOOLS else "read-only"
        return False, f"{kind} tool inside the workspace (approval mode auto-edit)"
    what = {"shell": "runs a shell command", "edit": "changes files"}.get(TOOLS[name].kind, "reads files")
    if mode not in APPROVAL_MODES:
        return True, f"{name} {what}; unknown approval mode {mode!r}, so every call asks"
    return True, f"{name} {what} (approval mode {mode})"


def describe_call(name: str, args: Mapping[str, Any], workspace: Path, max_chars: int = 200) -> str:
    """One line for the approval prompt: `shell: make test`, `write_file app/x.py (12 lines)`."""
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
        text = f"write_file {args.get('path', '')} ({lines} lines)"
    elif name == "edit_file":
        text = f"edit_file {args.get('path', '')}" + (" (replace all)" if args.get("replace_all") else "")
    elif name == "recall":
        text = f"recall {args.get('keys', '')}"
    else:
        shown = ", ".join(f"{key}={value!r}" for key, value in args.items())
        text = f"{name} {shown}"
    text = " ".join(text.split()) if name != "shell" else text.replace("\n", " ⏎ ")
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


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
