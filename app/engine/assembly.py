"""What `Engine` (app.engine.turn) is assembled from besides its parts, each made from the settings and the session:
the workspace, the built-in tools a request offers, the MCP toolset and the hook runner.

The parts themselves (budget, route link, turn loop, tool runner, history, MCP link, lifecycle) are built by
`Engine.__init__`, in order, with the engine as their host (app.engine.host).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from app.engine.hooks import HookRunner

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.session import Session
    from app.mcp.manager import McpManager
    from app.mcp.toolset import McpToolset
    from app.model.events import Event
    from app.model.tools import ToolSpec


def workspace_of(settings: Settings, session: Session, workspace: Path | None) -> Path:
    """The folder the session works in: the one given, else the settings', else the session's, else here."""
    return Path(workspace or settings.workspace or session.workspace or Path.cwd()).expanduser()


def builtin_tools(settings: Settings, route: Route, tools: Sequence[ToolSpec] | None) -> tuple[ToolSpec, ...]:
    """The built-in tools every request declares: those given, else what the settings offer on `route`."""
    from app.engine.tool_choice import offered_tools

    return tuple(offered_tools(settings, route) if tools is None else tools)


def mcp_toolset(mcp: McpManager | None, settings: Settings, session: Session) -> McpToolset | None:
    """The MCP servers' tools as a toolset (None without MCP); what it defers is kept in the session's flags."""
    if mcp is None:
        return None
    from app.mcp.toolset import McpToolset

    return McpToolset(mcp, settings, flags=session.flags, set_flag=session.set_flag)


def hook_runner(
    settings: Settings, session: Session, workspace: Path, emit: Callable[[Event], None]
) -> HookRunner:
    """The session's hooks (settings.hooks), run in `workspace`; each run and start is an event."""
    return HookRunner(
        settings.hooks,
        session_id=session.id,
        transcript_path=session.transcript_path,
        cwd=workspace,
        on_run=emit,
        on_start=emit,
        before_run=functools.partial(session.drain, quiet=True),  # a hook reads transcript_path
    )
