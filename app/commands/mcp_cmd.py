"""`bulkhead mcp list|tools NAME|ping NAME|approve [NAME…]|reset` — the MCP servers of this workspace.

`list` starts every server that may start (config.toml's; the workspace's `.mcp.json` ones once
allowed — asked on the terminal, or `--yes`), waits for each, and prints its state, tool count
and the bytes its definitions add to every request of the route (in that route's request
format), then whether they would be deferred. `tools NAME` lists one server's tools, `ping NAME`
times its start and a round trip. `approve` allows the workspace's servers without starting
them; `reset` forgets the answers given for this workspace. Server stderr goes to
`BULKHEAD_HOME/mcp/NAME.stderr.log`. Exit code 1 when a server named (or any, for `list`)
is not ready.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

from app.commands import settings_flags
from app.commands.oneshot import terminal_mcp_ask
from app.config import ConfigError, Route, Settings, load_settings
from app.sizes import format_size
from app.textsafe import display_line


def _workspace(args, settings: Settings) -> Path:
    return Path(args.workspace or settings.workspace or os.getcwd()).expanduser().resolve()


def _manager(args, settings: Settings):
    from app.mcp.manager import McpManager, cli_log_folder
    from app.state import State

    return McpManager.from_settings(
        settings, _workspace(args, settings), log_folder=cli_log_folder(), state=State()
    )


def run(args) -> int:
    settings = load_settings(flags=settings_flags(args))
    if args.action in ("approve", "reset"):
        return {"approve": approve, "reset": reset}[args.action](args, settings)
    manager = _manager(args, settings)
    if manager is None:
        print(
            "no MCP servers: add [mcp_servers.NAME] to config.toml (`bulkhead config path`) or a .mcp.json to "
            f"{_workspace(args, settings)}"
        )
        return 0
    if args.action != "list" and args.name not in manager.connections:
        known = ", ".join(manager.connections) or "none"
        print(f"bulkhead: no MCP server named {args.name!r} (servers: {known})", file=sys.stderr)
        return 2
    return asyncio.run({"list": _list, "tools": _tools, "ping": _ping}[args.action](args, settings, manager))


async def _start(args, manager, only: str | None = None) -> None:
    for note in manager.notes:
        print(f"⚠ {display_line(note)}", file=sys.stderr)
    if only is not None:
        manager.connections = {only: manager.connections[only]}
    yes = bool(getattr(args, "mcp_yes", False) or args.yes)
    await manager.start(ask=None if yes else terminal_mcp_ask(), allow_project=yes)
    await manager.wait_settled()


def _route(args, settings: Settings) -> Route:
    from app.engine.api.setup import choose_route

    try:
        return choose_route(settings, getattr(args, "route", None)).route
    except ConfigError:
        return Route(name="lab", provider="lab", model="lab-1")


def _measurer(route: Route, settings: Settings):
    """Bytes a list of tool specs adds to a request of `route`, in that route's request format."""
    from app.providers.factory import make_provider

    provider = make_provider(route, settings, None)
    base = provider.measure((), "", (), max_tokens=settings.max_output_tokens)

    def measure(specs) -> int:
        return (
            provider.measure((), "", tuple(specs), max_tokens=settings.max_output_tokens) - base
            if specs
            else 0
        )

    return measure


def _share(route: Route, settings: Settings) -> tuple[int, int | None, str]:
    """(share of the effective cap, share of the byte cap, what it is a share of)."""
    from app.providers.catalog import model_limits
    from app.state import State

    ratio = settings.mcp_defer_ratio
    caps = [c for c in (route.max_payload, settings.max_payload) if c]
    learned = State().learned_cap(route.endpoint_id)
    if learned:
        caps.append(learned.cap_bytes)
    cap = min(caps) if caps else None
    window = (
        route.context_window
        or settings.context_window
        or model_limits(route.provider, route.model).context_window
    )
    window_bytes = max(1024, window - settings.max_output_tokens) * 4
    if cap and cap <= window_bytes:
        return (
            int(ratio * cap),
            int(ratio * cap),
            f"mcp_defer_ratio {ratio:.0%} of the {format_size(cap)} cap",
        )
    return (
        int(ratio * window_bytes),
        int(ratio * cap) if cap else None,
        f"mcp_defer_ratio {ratio:.0%} of the {window:,}-token context window",
    )


async def _list(args, settings: Settings, manager) -> int:
    from app.mcp.deferral import plan_tools
    from app.mcp.report import plan_lines, server_table

    await _start(args, manager)
    try:
        route = _route(args, settings)
        measure = _measurer(route, settings)
        pairs = manager.tools()
        by_server: dict[str, list] = {}
        for tool, spec in pairs:
            by_server.setdefault(tool.server, []).append(spec)
        sizes = {name: measure(specs) for name, specs in by_server.items()}
        statuses = manager.statuses()
        budget, byte_budget, source = _share(route, settings)
        plan = plan_tools(
            [spec for _t, spec in pairs],
            manager.servers_by_tool(),
            budget_bytes=budget,
            byte_budget=byte_budget,
            measure=measure,
            setting=settings.mcp_tool_search,
            native_possible=route.provider == "anthropic",
        )
        if getattr(args, "mcp_json", False) or args.json:
            for status in statuses:
                print(
                    json.dumps(
                        {
                            "name": status.name,
                            "state": status.state.value,
                            "source": status.source,
                            "transport": status.transport,
                            "tools": len(status.tools),
                            "definition_bytes": sizes.get(status.name, 0),
                            "reason": status.reason,
                            "stderr_tail": list(status.stderr_tail),
                            "log": status.log_path,
                        },
                        ensure_ascii=False,
                    )
                )
            print(
                json.dumps(
                    {
                        "type": "result",
                        "route": route.name,
                        "format": route.provider,
                        "definition_bytes": plan.full_bytes,
                        "sent_bytes": plan.sent_bytes,
                        "budget_bytes": budget,
                        "mode": plan.mode,
                    }
                )
            )
        else:
            for line in server_table(statuses, sizes):
                print(line)
            if pairs:
                print(
                    f"\nMCP tool definitions add {format_size(plan.full_bytes)} to every request of route "
                    f"{route.name} ({route.provider} format)."
                )
                for line in plan_lines(plan, budget, source):
                    print(line)
    finally:
        await manager.close()
    return 0 if all(s.state in ("ready", "disabled", "denied") for s in statuses) else 1


async def _tools(args, settings: Settings, manager) -> int:
    from app.mcp.adapter import one_line

    await _start(args, manager, only=args.name)
    try:
        status = manager.connections[args.name].status()
        if status.state != "ready":
            from app.mcp.report import server_table

            print("\n".join(server_table([status], {})))
            return 1
        measure = _measurer(_route(args, settings), settings)
        pairs = manager.tools()
        width = max((len(spec.name) for _t, spec in pairs), default=10)
        for tool, spec in pairs:
            flag = "read-only" if tool.read_only else "         "
            print(
                f"{display_line(spec.name).ljust(width)}  {flag}  {format_size(measure([spec])):>9}  "
                f"{display_line(one_line(spec.description, 80))}"
            )
        total = measure([spec for _t, spec in pairs])
        print(f"\n{len(pairs)} tools, {format_size(total)} of definitions")
    finally:
        await manager.close()
    return 0


async def _ping(args, settings: Settings, manager) -> int:
    started = time.monotonic()
    await _start(args, manager, only=args.name)
    try:
        connection = manager.connections[args.name]
        status = connection.status()
        if status.state != "ready":
            from app.mcp.report import server_table

            print("\n".join(server_table([status], {})))
            return 1
        ready_ms = (time.monotonic() - started) * 1000
        round_trip = await connection.ping()
        print(
            f"{display_line(args.name)}: ready in {ready_ms:,.0f} ms ({display_line(status.server_version) or 'unnamed'}"
            f", protocol {status.protocol}); {len(status.tools)} tools; round trip {round_trip * 1000:,.1f} ms"
        )
    finally:
        await manager.close()
    return 0


def approve(args, settings: Settings) -> int:
    manager = _manager(args, settings)
    project = [c.spec for c in (manager.connections.values() if manager else []) if c.spec.from_project]
    if args.names:
        unknown = [n for n in args.names if n not in {s.name for s in project}]
        if unknown:
            print(
                f"bulkhead: not a server of this workspace's .mcp.json: {', '.join(unknown)}", file=sys.stderr
            )
            return 2
        project = [s for s in project if s.name in args.names]
    if not project or manager is None or manager.approvals is None:
        print("nothing to approve: this workspace has no .mcp.json servers")
        return 0
    manager.approvals.remember(project, "allow")
    print(f"allowed for {_workspace(args, settings)}: {', '.join(display_line(s.name) for s in project)}")
    return 0


def reset(args, settings: Settings) -> int:
    from app.config_mcp import ProjectApprovals
    from app.state import State

    forgotten = ProjectApprovals(State(), _workspace(args, settings)).forget()
    print(
        f"forgot {forgotten} answer{'s' if forgotten != 1 else ''} for {_workspace(args, settings)}'s .mcp.json "
        f"servers; they will be asked about again"
    )
    return 0
