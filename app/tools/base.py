"""The tool contract: what the model is told (`TOOL_SPECS`), what a call gets and gives back.

    outcome = await run_tool("read_file", {"path": "app/cli.py"}, ctx)
    ToolResult(call_id, outcome.content, outcome.is_error)

`run_tool` is the one entry point. It never raises for anything a tool or the model did
wrong (unknown tool, bad arguments, missing file, failing command, a bug in a tool):
every problem comes back as an outcome with `is_error=True` and a sentence the model can
act on. Only cancellation of the calling task propagates (after the tool cleaned up).

Every result except recall's goes through the per-result budget (`app.tools.budget`): a
result longer than `ctx.result_max_chars` keeps its head and tail, and its full text is
spilled to `ctx.session_folder / "spill"`, the preview naming that file.

One tool call in the turn loop, end to end:

    ctx = ToolContext(workspace, session.folder, result_max_chars=turn_budget.limit(per_result),
                      recall=lookup, cancel=esc_event)
    hook = await hooks.pre_tool_use(call.name, call.args)                 # app.engine.hooks
    if hook.blocked:
        outcome = denied_outcome(call.name, hook.reason, by="hook")       # app.tools.approval
    else:
        ask, why = needs_approval(call.name, call.args, settings.approval, workspace,
                                  extra_read_roots=[spill_folder(session.folder)])
        ask = (ask or hook.permission == "ask") and not (hook.permission == "allow" and
                                                         not outside_workspace(call.name, call.args, workspace))
        if ask and not approved_by_user:
            outcome = denied_outcome(call.name, why, by="user" or "no_terminal")
        else:
            outcome = await run_tool(call.name, call.args, ctx)
            await (hooks.post_tool_use_failure(..., error=...) if outcome.is_error
                   else hooks.post_tool_use(call.name, call.args, outcome.content))
    turn_budget.charge(outcome)

The implementations live in `files`, `search`, `shell` and `recall`; this module only
knows their names, schemas and kinds (the kind drives approvals, `app.tools.approval`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from app.engine.messages import Image
from app.providers.base import ToolSpec

ToolKind = Literal["read", "edit", "shell", "recall"]
RecallLookup = Callable[[str], str | None]

DEFAULT_SHELL_TIMEOUT = 120.0
MAX_SHELL_TIMEOUT = 600.0


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool call may use. Built by the turn loop once per turn (or per call).

    `result_max_chars` is the per-result budget (DESIGN §4: 20,000, halved at L1; the
    turn loop may lower it further as the turn budget runs out, see `budget.TurnBudget`).
    `recall` looks an archive key up (`None` when unknown). `cancel` is set when the user
    presses Esc: a running shell command is then stopped with its whole process group.
    """

    workspace: Path
    session_folder: Path
    result_max_chars: int = 20_000
    recall: RecallLookup | None = None
    cancel: asyncio.Event | None = None
    shell_timeout_default: float = DEFAULT_SHELL_TIMEOUT
    shell_env_passthrough: tuple[str, ...] = ()  # provider credentials the shell may still see
    credential_env_names: tuple[str, ...] = ()  # the routes' api_key_env: dropped from the shell's env

    def resolve(self, raw: str | os.PathLike[str]) -> Path:
        """`raw` as an absolute, normalised path: `~` expanded, relative to the workspace.

        `..` is collapsed textually; symlinks are kept (approvals resolve them separately).
        """
        return resolve_path(raw, self.workspace)

    def display(self, path: Path) -> str:
        """How a path is shown to the model: relative to the workspace when inside it."""
        return display_path(path, self.workspace)


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced, ready to become a `ToolResult`.

    `content` is what the model sees (possibly a head+tail preview); `chars_total` is the
    length of the full text before any cut; `spill_path` names the file holding the full
    text when it was cut; `preserve_verbatim` marks recall output, which compaction must
    keep as is (message meta `preserve_verbatim`). `images` are shown to the model with the
    result (an MCP tool's image content); `references` name deferred tools a `tool_search`
    result loads (Anthropic's `tool_reference` blocks).
    """

    content: str
    is_error: bool = False
    spill_path: Path | None = None
    preserve_verbatim: bool = False
    chars_total: int = 0
    images: tuple[Image, ...] = ()
    references: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.chars_total:
            object.__setattr__(self, "chars_total", len(self.content))

    @property
    def truncated(self) -> bool:
        return self.chars_total > len(self.content) or self.spill_path is not None


def ok(content: str, **extra: Any) -> ToolOutcome:
    return ToolOutcome(content=content, **extra)


def error(content: str, **extra: Any) -> ToolOutcome:
    return ToolOutcome(content=content, is_error=True, **extra)


class ToolError(Exception):
    """Raised inside a tool for a problem the model caused; `run_tool` turns it into an error outcome."""


# -- paths -----------------------------------------------------------------------------------------
def resolve_path(raw: str | os.PathLike[str], workspace: Path) -> Path:
    text = os.fspath(raw)
    if not isinstance(text, str) or not text.strip():
        raise ToolError("path is empty")
    if "\x00" in text:
        raise ToolError("path contains a NUL character")
    path = Path(os.path.expanduser(text.strip()))
    if not path.is_absolute():
        path = Path(workspace).expanduser() / path
    return Path(os.path.normpath(path))


def display_path(path: Path, workspace: Path) -> str:
    try:
        relative = Path(os.path.normpath(path)).relative_to(os.path.normpath(Path(workspace).expanduser()))
    except ValueError:
        return str(path)
    return relative.as_posix() or "."


# -- the tools the model is told about ---------------------------------------------------------------
@dataclass(frozen=True)
class ToolInfo:
    """A tool's schema plus what approvals need: its kind and which arguments are paths."""

    spec: ToolSpec
    kind: ToolKind
    path_args: tuple[str, ...] = ()
    path_defaults: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "description": "File path, relative to the workspace or absolute (~ expands)."}

TOOLS: Mapping[str, ToolInfo] = {
    info.name: info
    for info in (
        ToolInfo(ToolSpec(
            "read_file",
            "Read a text file. Returns numbered lines (cat -n style) and a final note with the total "
            "line count. Reads at most `limit` lines from `offset` (1-based); prefer ranged reads of "
            "large files. Binary files are not shown.",
            _schema({
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read (default 2000)."},
            }, ["path"])), "read", ("path",)),
        ToolInfo(ToolSpec(
            "list_dir",
            "List a directory: sub-directories (ending in /) first, then files with their sizes.",
            _schema({"path": {**_PATH, "description": "Directory (default: the workspace)."}}, [])),
            "read", ("path",), {"path": "."}),
        ToolInfo(ToolSpec(
            "glob",
            "Find files by glob pattern (e.g. `**/*.py`, `src/**/test_*.py`), newest first.",
            _schema({
                "pattern": {"type": "string", "description": "Glob pattern; ** matches any depth."},
                "path": {**_PATH, "description": "Directory to search (default: the workspace)."},
            }, ["pattern"])), "read", ("path",), {"path": "."}),
        ToolInfo(ToolSpec(
            "grep",
            "Search file contents with a regular expression. Output lines are `path:line:text`. "
            "Hidden and binary files are skipped. Use `glob` (e.g. `*.py`) to restrict which files.",
            _schema({
                "pattern": {"type": "string", "description": "Regular expression (use (?i) to ignore case)."},
                "path": {**_PATH, "description": "File or directory to search (default: the workspace)."},
                "glob": {"type": "string", "description": "Only search files matching this glob."},
            }, ["pattern"])), "read", ("path",), {"path": "."}),
        ToolInfo(ToolSpec(
            "shell",
            "Run a shell command in the workspace (bash -c) and return its stdout, stderr and exit code. "
            "No terminal and no input: interactive programs get end-of-file. Killed, with every process "
            "it started, at the timeout or when the user cancels.",
            _schema({
                "command": {"type": "string", "description": "The command line."},
                "timeout": {"type": "number", "minimum": 1, "maximum": MAX_SHELL_TIMEOUT,
                            "description": f"Seconds before it is killed (default {DEFAULT_SHELL_TIMEOUT:g})."},
            }, ["command"])), "shell"),
        ToolInfo(ToolSpec(
            "write_file",
            "Write a whole file (created with its parent folders if missing, else overwritten). "
            "Returns a unified diff against the previous content. Prefer edit_file for changes.",
            _schema({
                "path": _PATH,
                "content": {"type": "string", "description": "The complete new content."},
            }, ["path", "content"])), "edit", ("path",)),
        ToolInfo(ToolSpec(
            "edit_file",
            "Replace an exact string in a file and return the unified diff. `old_string` must occur "
            "exactly once (include surrounding lines to make it unique) unless replace_all is true.",
            _schema({
                "path": _PATH,
                "old_string": {"type": "string", "description": "Exact text to replace, whitespace included."},
                "new_string": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."},
            }, ["path", "old_string", "new_string"])), "edit", ("path",)),
        ToolInfo(ToolSpec(
            "recall",
            "Restore archived content by its key, exactly as it was. Keys appear in markers like "
            "<<ccr:0123456789abcdef>>; pass one key or several.",
            _schema({
                "keys": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                         "description": "One key, several keys separated by spaces, or a list of keys."},
            }, ["keys"])), "recall"),
    )
}

TOOL_SPECS: tuple[ToolSpec, ...] = tuple(info.spec for info in TOOLS.values())
NEVER_BUDGETED = frozenset({"recall"})  # the model asked for the full content
READ_TOOLS = frozenset(name for name, info in TOOLS.items() if info.kind in ("read", "recall"))
EDIT_TOOLS = frozenset(name for name, info in TOOLS.items() if info.kind == "edit")

Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutcome]]


def _handlers() -> dict[str, Handler]:
    # Imported here: the implementations import this module for its types.
    from app.tools import files, recall, search, shell

    return {
        "read_file": files.read_file, "list_dir": files.list_dir, "glob": files.glob,
        "write_file": files.write_file, "edit_file": files.edit_file,
        "grep": search.grep, "shell": shell.shell, "recall": recall.recall,
    }


# -- arguments ---------------------------------------------------------------------------------------
def _check_args(info: ToolInfo, args: Any) -> dict[str, Any]:
    """Arguments checked against the schema, leniently: numbers given as strings are accepted."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolError(f"arguments must be a JSON object, got {type(args).__name__}")
    schema = info.spec.input_schema
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", ()) if args.get(name) is None]
    if missing:
        raise ToolError(f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    checked: dict[str, Any] = {}
    for key, value in args.items():
        prop = properties.get(key)
        if prop is None:
            known = ", ".join(properties) or "none"
            raise ToolError(f"unknown argument {key!r} (arguments: {known})")
        if value is None:
            continue
        checked[key] = _coerce(key, value, prop)
    return checked


def _coerce(key: str, value: Any, prop: Mapping[str, Any]) -> Any:
    kind = prop.get("type")
    if kind == "string" and not isinstance(value, str):
        raise ToolError(f"{key} must be a string, got {type(value).__name__}")
    if kind in ("integer", "number"):
        if isinstance(value, bool):
            raise ToolError(f"{key} must be a number, got a boolean")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ToolError(f"{key} must be a number, got {value!r}") from None
        if not isinstance(value, int | float) or value != value:
            raise ToolError(f"{key} must be a number, got {type(value).__name__}")
        if kind == "integer":
            if not float(value).is_integer():
                raise ToolError(f"{key} must be a whole number, got {value!r}")
            value = int(value)
        minimum = prop.get("minimum")
        if minimum is not None and value < minimum:
            raise ToolError(f"{key} must be at least {minimum}, got {value!r}")
        maximum = prop.get("maximum")
        if maximum is not None and value > maximum:
            raise ToolError(f"{key} must be at most {maximum:g}, got {value!r}")
    if kind == "boolean" and not isinstance(value, bool):
        lowered = str(value).strip().lower()
        if lowered not in ("true", "false", "1", "0"):
            raise ToolError(f"{key} must be true or false, got {value!r}")
        value = lowered in ("true", "1")
    if "anyOf" in prop and not isinstance(value, str | list):
        raise ToolError(f"{key} must be a string or a list of strings, got {type(value).__name__}")
    return value


# -- the one entry point -----------------------------------------------------------------------------
async def run_tool(name: str, args: Mapping[str, Any] | None, ctx: ToolContext) -> ToolOutcome:
    """Run tool `name` with the model's `args`; every failure is an error outcome, never an exception.

    Approvals are not checked here (see `app.tools.approval.needs_approval`): call this only
    for calls that may run. The result is already budget-cut (except recall's).
    """
    from app.tools.budget import apply_budget

    info = TOOLS.get(name)
    if info is None:
        return error(f"Unknown tool {name!r}. Available tools: {', '.join(TOOLS)}.")
    try:
        checked = _check_args(info, args)
    except ToolError as exc:
        return error(f"Invalid arguments for {name}: {exc}.")
    try:
        outcome = await _handlers()[name](checked, ctx)
    except ToolError as exc:
        outcome = error(f"{name}: {exc}")
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug in a tool must not end the turn
        outcome = error(f"{name} failed unexpectedly: {type(exc).__name__}: {exc}")
    if outcome.preserve_verbatim or name in NEVER_BUDGETED:
        return outcome
    return apply_budget(name, outcome, ctx)


def with_result_limit(ctx: ToolContext, result_max_chars: int) -> ToolContext:
    """A copy of `ctx` with another per-result budget (L1 halving, turn budget running out)."""
    return replace(ctx, result_max_chars=result_max_chars)
