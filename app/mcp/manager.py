"""Every MCP server of a session: trust, start in the background, tools by name, calls, restart.

    manager = McpManager.from_settings(settings, workspace, log_folder=session.folder / "mcp", state=state)
    await manager.start(ask=front_end_asks)     # after the first frame; returns once started (not ready)
    await manager.wait_settled()                # before the first request that needs the tools
    specs = manager.tool_specs()                # mcp__SERVER__TOOL definitions of the ready servers
    outcome = await manager.call("mcp__demo__echo", {"text": "hi"}, ctx)

Servers from config.toml start at once. Servers from the workspace's `.mcp.json` start only
once the user said yes (remembered in state.toml per workspace and definition): `ask(specs)`
is the front end's question ("allow" | "deny" | None for "not now"); without one they stay
`pending` and the front end says how to allow them. The SDK is imported in a thread first
(it takes ~0.6 s), so the event loop never stalls on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from app.config_mcp import McpServerSpec, ProjectApprovals, merge_servers, read_project_servers
from app.mcp import adapter
from app.mcp.connection import (
    McpCallError,
    McpConnection,
    McpTool,
    ServerState,
    ServerStatus,
    route_sdk_logging,
    sdk_available,
)
from app.model.tools import ToolSpec

Ask = Callable[[list[McpServerSpec]], Awaitable[str | None]]  # -> "allow" | "deny" | None (not now)
SDK_MISSING = "the mcp package is not installed: python3 -m pip install 'mcp>=2.3,<3'"


class McpManager:
    def __init__(
        self,
        specs: Mapping[str, McpServerSpec],
        *,
        log_folder: Path,
        startup_timeout: float = 30.0,
        tool_timeout: float = 120.0,
        image_max_bytes: int = 1024 * 1024,
        approvals: ProjectApprovals | None = None,
        notes: tuple[str, ...] = (),
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log_max_bytes: int = 1024 * 1024,
        message_max_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.log_folder = Path(log_folder)
        route_sdk_logging(self.log_folder)  # the SDK's tracebacks go to the log, never to stderr
        self.image_max_bytes = image_max_bytes
        self.approvals = approvals
        self.notes = tuple(notes)  # problems reading .mcp.json, shadowed names: shown once
        self.connections: dict[str, McpConnection] = {
            name: McpConnection(
                spec,
                log_path=self.log_folder / f"{name}.stderr.log",
                startup_timeout=startup_timeout,
                tool_timeout=tool_timeout,
                on_change=self._changed,
                env=env,
                cwd=cwd,
                log_max_bytes=log_max_bytes,
                message_max_bytes=message_max_bytes,
            )
            for name, spec in specs.items()
        }
        self.generation = 0
        self._listeners: list[Callable[[McpConnection], None]] = []
        self._tools: tuple[tuple[McpTool, ToolSpec], ...] = ()
        self._tools_generation = -1
        self._by_name: dict[str, tuple[McpConnection, McpTool]] = {}
        self.started = False
        self.launched = asyncio.Event()  # `start` has launched what it may (the SDK is imported): set once
        self.closed = False

    @classmethod
    def from_settings(
        cls,
        settings: Any,
        workspace: Path,
        *,
        log_folder: Path,
        state: Any = None,
        env: Mapping[str, str] | None = None,
    ) -> McpManager | None:
        """The session's manager, or None when no server is configured anywhere (nothing is imported)."""
        project = read_project_servers(workspace, env)
        specs, notes = merge_servers(dict(settings.mcp_servers), project)
        if not specs and not notes:
            return None
        approvals = ProjectApprovals(state, workspace) if state is not None else None
        return cls(
            specs,
            log_folder=log_folder,
            startup_timeout=settings.mcp_startup_timeout,
            tool_timeout=settings.mcp_tool_timeout,
            image_max_bytes=settings.mcp_image_max_bytes,
            log_max_bytes=settings.mcp_log_max_bytes,
            message_max_bytes=settings.mcp_result_max_bytes,
            approvals=approvals,
            notes=tuple(notes),
            env=env,
            cwd=Path(workspace),
        )

    # -- listening --------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[McpConnection], None]) -> None:
        self._listeners.append(listener)

    def _changed(self, connection: McpConnection) -> None:
        self.generation += 1
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):
                listener(connection)

    # -- trust and start --------------------------------------------------------------------------
    def pending(self) -> list[McpServerSpec]:
        """Project servers nobody answered for yet (or whose definition changed since)."""
        out = []
        for connection in self.connections.values():
            spec = connection.spec
            if (
                spec.from_project
                and not spec.problem
                and spec.enabled
                and connection.state in (ServerState.STOPPED, ServerState.PENDING)
                and self._decision(spec) is None
            ):
                out.append(spec)
        return out

    def _decision(self, spec: McpServerSpec) -> str | None:
        return self.approvals.decision(spec) if self.approvals is not None else None

    async def start(self, *, ask: Ask | None = None, allow_project: bool = False) -> None:
        """Start every server that may start, in the background; ask about the project's new ones.

        `allow_project`: start project servers without asking and without remembering (`--yes`).
        """
        if self.started:
            return
        self.started = True
        try:
            launch = await self._launch(allow_project)
        finally:
            self.launched.set()
        if launch:
            await self._ask_pending(ask)

    async def _launch(self, allow_project: bool) -> bool:
        """The SDK imported and the servers that may start started; False when nothing more is to be done."""
        if not self.connections:
            return False
        self.expect_launch(allow_project=allow_project)
        imported = await asyncio.to_thread(_import_sdk)  # never stalls the event loop
        if self.closed:  # the session ended while the SDK was imported (`-p` answered first): start nothing
            return False
        if not imported:
            for connection in self.connections.values():
                if connection.state not in (ServerState.DISABLED,):
                    connection.mark(ServerState.FAILED, SDK_MISSING)
            return False
        for connection in self.connections.values():
            spec = connection.spec
            if not spec.from_project or spec.problem or not spec.enabled:
                connection.start()
            elif allow_project or self._decision(spec) == "allow":
                connection.start()
            elif self._decision(spec) == "deny":
                connection.mark(
                    ServerState.DENIED, "you chose not to start it (bulkhead mcp reset asks again)"
                )
        return True

    def mark_pending(self) -> list[McpServerSpec]:
        """Mark the project's servers nobody answered for as pending (no SDK needed: at once); returns them."""
        waiting = self.pending()
        for spec in waiting:
            connection = self.connections[spec.name]
            if connection.state != ServerState.PENDING:
                connection.mark(
                    ServerState.PENDING,
                    f"not started: it comes from this workspace's .mcp.json and was not allowed yet (bulkhead "
                    f"mcp approve {spec.name}, --yes, or /mcp restart {spec.name})",
                )
        return waiting

    async def _ask_pending(self, ask: Ask | None) -> None:
        """Mark the project's servers nobody answered for as pending, and ask about them."""
        waiting = self.mark_pending()
        if not waiting:
            return
        if ask is None:
            return
        try:
            answer = await ask(waiting)
        except asyncio.CancelledError:
            raise
        except Exception:  # a broken prompt is "not now"
            answer = None
        await self.answer(waiting, answer)

    def expect_launch(self, *, allow_project: bool = False) -> None:
        """Show every server `start` will launch as starting, at once — before the SDK import and any question —
        so a turn that comes first knows to wait for them (app.engine.mcp_link) instead of going without."""
        for connection in self.connections.values():
            spec = connection.spec
            if not spec.from_project or allow_project or self._decision(spec) == "allow":
                connection.expect()

    async def answer(self, specs: list[McpServerSpec], answer: str | None) -> None:
        """The user's answer for `specs`: "allow" starts them and remembers, "deny" remembers, None leaves
        them pending for this session."""
        if answer in ("allow", "deny") and self.approvals is not None:
            with contextlib.suppress(OSError):
                await asyncio.to_thread(self.approvals.remember, specs, answer)
        for spec in specs:
            connection = self.connections[spec.name]
            if answer == "allow":
                connection.start()
            elif answer == "deny":
                connection.mark(
                    ServerState.DENIED, "you chose not to start it (bulkhead mcp reset asks again)"
                )

    async def wait_settled(self, timeout: float | None = None) -> None:
        """Until no server is starting (each has its own startup timeout)."""
        starting = [c for c in self.connections.values() if c.state == ServerState.STARTING]
        if starting:
            await asyncio.gather(*(c.wait_settled(timeout) for c in starting))

    def starting(self) -> list[str]:
        return [name for name, c in self.connections.items() if c.state == ServerState.STARTING]

    async def restart(self, name: str) -> ServerStatus:
        connection = self.connections.get(name)
        if connection is None:
            known = ", ".join(self.connections) or "none"
            raise KeyError(f"no MCP server named {name!r} (servers: {known})")
        if connection.state in (ServerState.PENDING, ServerState.DENIED) and self.approvals is not None:
            await self.answer([connection.spec], "allow")  # restarting it by name is the user's yes
        else:
            if not sdk_available():
                connection.mark(ServerState.FAILED, SDK_MISSING)
                return connection.status()
            await connection.restart()
        await connection.wait_settled()
        return connection.status()

    async def close(self) -> None:
        self.closed = True
        await asyncio.gather(*(c.stop() for c in self.connections.values()), return_exceptions=True)

    # -- tools ------------------------------------------------------------------------------------
    def statuses(self) -> list[ServerStatus]:
        return [c.status() for c in self.connections.values()]

    def tools(self) -> tuple[tuple[McpTool, ToolSpec], ...]:
        """(tool, spec) for every tool of a ready server; the same objects until something changes."""
        if self._tools_generation != self.generation:
            taken: set[str] = set()
            pairs: list[tuple[McpTool, ToolSpec]] = []
            by_name: dict[str, tuple[McpConnection, McpTool]] = {}
            previous = {(t.server, t.name): spec for t, spec in self._tools}
            for connection in self.connections.values():
                if connection.state != ServerState.READY:
                    continue
                for tool in connection.tools:
                    spec = previous.get((tool.server, tool.name))
                    if spec is None or spec.name in taken:
                        spec = adapter.tool_spec(tool, adapter.tool_name(tool.server, tool.name, taken))
                    taken.add(spec.name)
                    pairs.append((tool, spec))
                    by_name[spec.name] = (connection, tool)
            self._tools, self._by_name = tuple(pairs), by_name
            self._tools_generation = self.generation
        return self._tools

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return tuple(spec for _tool, spec in self.tools())

    def servers_by_tool(self) -> dict[str, str]:
        return {spec.name: tool.server for tool, spec in self.tools()}

    def lookup(self, name: str) -> tuple[McpConnection, McpTool] | None:
        self.tools()
        return self._by_name.get(name)

    def read_only_tools(self) -> frozenset[str]:
        return frozenset(spec.name for tool, spec in self.tools() if tool.read_only)

    def needs_approval(self, name: str, mode: str) -> tuple[bool, str]:
        found = self.lookup(name)
        return adapter.needs_approval(name, found[1] if found else None, mode)

    async def call(
        self, name: str, args: Mapping[str, Any], *, spill_folder: Path, cancel: asyncio.Event | None = None
    ) -> Any:
        """Run tool `name`; an outcome (before the result budget) — never raises but for cancellation."""
        from app.tools.base import error

        found = self.lookup(name)
        if found is None:
            server = adapter.server_of(name)
            connection = next((c for c in self.connections.values() if adapter.safe(c.name) == server), None)
            if connection is not None and connection.state != ServerState.READY:
                why = f" ({connection.reason})" if connection.reason else ""
                return error(
                    f"MCP server {connection.name} is {connection.state.value}{why}, so {name} cannot run. "
                    f"Continue without it or tell the user; /mcp restart {connection.name} starts it again."
                )
            known = ", ".join(spec.name for spec in self.tool_specs()[:30]) or "none"
            return error(f"Unknown MCP tool {name!r}. MCP tools available: {known}.")
        connection, tool = found
        try:
            result = await connection.call(tool.name, args or {}, cancel=cancel)
        except McpCallError as exc:
            return error(f"{name} did not run to the end: {exc}")
        return adapter.convert_result(
            result, name=name, spill_folder=spill_folder, image_max_bytes=self.image_max_bytes
        )


def _import_sdk() -> bool:
    """Import the SDK (called in a thread: it takes ~0.6 s). False when it is not installed."""
    try:
        import mcp
        import mcp.client.stdio
        import mcp.client.streamable_http  # noqa: F401
    except ImportError:
        return False
    return True


def log_folder_for(session_folder: Path) -> Path:
    return Path(session_folder) / "mcp"


def cli_log_folder() -> Path:
    from app.config import data_home

    return data_home() / "mcp"


def default_env() -> Mapping[str, str]:
    return os.environ
