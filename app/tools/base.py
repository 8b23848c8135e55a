"""The tool contract: what a tool is (`ToolInfo`), what a call gets and gives back.

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

Each tool module (`files`, `search`, `shell`, `recall`, `web_fetch`) declares its own `ToolInfo(spec, kind, handler)`s;
`app.tools.registry` gathers them into `TOOLS` / `TOOL_SPECS` and holds `run_tool`. This module is the contract
they share (the kind drives approvals, `app.tools.approval`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from app.model.messages import Image
from app.model.tools import ToolSpec

ToolKind = Literal["read", "edit", "shell", "recall", "fetch"]
RecallLookup = Callable[[str], str | None]
FetchRule = Callable[[str], tuple[str | None, str]]  # a URL → (the deciding rule's kind or None, its reason)

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
    read_denied: Callable[[Path], bool] | None = None  # the user's Read deny rules: kept out of every listing
    fetch_max_bytes: int = 200 * 1024  # web_fetch: text returned at most (web_fetch_max_bytes)
    fetch_timeout: float = 30.0  # web_fetch: seconds per hop (web_fetch_timeout)
    fetch_max_redirects: int = 5  # web_fetch: redirects followed (web_fetch_max_redirects)
    fetch_verify: Any = (
        True  # web_fetch: httpx `verify=`, the providers' CA bundle (app.ca_bundle.fetch_verify)
    )
    fetch_problem: str = ""  # web_fetch: why the configured CA bundle cannot be used ("" when it can)
    fetch_rule: FetchRule | None = (
        None  # web_fetch: the WebFetch(domain:…) rules, asked for each redirect hop
    )

    def hides(self, path: Path) -> bool:
        """Does a Read deny rule cover `path`? grep, glob and list_dir leave such files out of what they show."""
        return self.read_denied is not None and self.read_denied(path)

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
Handler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutcome]]


@dataclass(frozen=True)
class ToolInfo:
    """One tool, declared in its own module: its schema, its kind (approvals), its handler, its path arguments."""

    spec: ToolSpec
    kind: ToolKind
    handler: Handler
    path_args: tuple[str, ...] = ()
    path_defaults: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


PATH_ARG = {"type": "string", "description": "File path, relative to the workspace or absolute (~ expands)."}


def with_result_limit(ctx: ToolContext, result_max_chars: int) -> ToolContext:
    """A copy of `ctx` with another per-result budget (L1 halving, turn budget running out)."""
    return replace(ctx, result_max_chars=result_max_chars)
