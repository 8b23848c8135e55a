"""The MCP link: the servers' tools in every request (deferred when they crowd the payload), starting the
servers after the first frame, waiting for them before a turn, what a server's change tells the user, and the
external summarizer of `context_engine = "mcp:NAME"`.

It sees the engine only through `McpHost` (app.engine.host).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.model.events import McpServerChanged, Notice
from app.textsafe import display_line

if TYPE_CHECKING:
    from app.engine.compaction.summarize import ContextEngine
    from app.engine.host import McpHost
    from app.mcp.connection import McpConnection
    from app.mcp.deferral import DeferralPlan
    from app.mcp.manager import Ask
    from app.model.tools import ToolSpec


class McpLink:
    def __init__(self, host: McpHost) -> None:
        self.host = host
        self._tools_cache: tuple[object, tuple[ToolSpec, ...]] | None = None
        self._plan_memo: tuple[tuple[object, ...], DeferralPlan] | None = None

    def forget_plan(self) -> None:
        """The route changed: the next request plans the MCP tools again."""
        self._plan_memo = None

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """What every request declares: the built-in tools, then the MCP part of the deferral plan.

        The same tuple (and ToolSpec objects) until the plan changes, so the providers' caches hold."""
        plan = self.plan()
        if plan is None:
            return self.host.builtin_tools
        if self._tools_cache is None or self._tools_cache[0] is not plan:
            self._tools_cache = (plan, self.host.builtin_tools + plan.specs)
        return self._tools_cache[1]

    def tool_bytes(self, specs: Sequence[ToolSpec]) -> int:
        """Exact bytes `specs` add to a request of this route (built into an empty request and measured)."""
        base = self.host.provider.measure(
            (), self.host.system, self.host.builtin_tools, max_tokens=self.host.max_tokens
        )
        with_specs = self.host.provider.measure(
            (), self.host.system, self.host.builtin_tools + tuple(specs), max_tokens=self.host.max_tokens
        )
        return with_specs - base

    def budgets(self) -> tuple[int, int | None]:
        """(share of the effective cap, share of the byte cap alone) that MCP definitions may take."""
        ratio = self.host.settings.mcp_defer_ratio
        cap = self.host.cap_info().bytes
        window_bytes = int(self.host.usable_window_tokens() * self.host.bytes_per_token)
        effective = min(cap, window_bytes) if cap else window_bytes
        share = int(ratio * effective) // 1024 * 1024  # in whole KiB: calibration nudges do not re-plan
        return share, (int(ratio * cap) if cap else None)

    def plan(self) -> DeferralPlan | None:
        """How MCP tools are sent now (app.mcp.deferral); None without MCP.

        Re-planned when the servers' tools, the loaded tools or the budgets may have changed: the
        budgets are read again after every view change and every learned cap (`_budget_epoch`)."""
        if self.host.mcp_tools is None or self.host.mcp is None:
            return None
        key = (self.host.budget_epoch, self.host.mcp.generation, self.host.mcp_tools.loaded)
        if self._plan_memo is not None and self._plan_memo[0] == key:
            return self._plan_memo[1]
        budget, byte_budget = self.budgets()
        native = self.host.route.provider == "anthropic"
        plan = self.host.mcp_tools.plan(
            budget_bytes=budget,
            byte_budget=byte_budget,
            native_possible=native,
            measure=self.tool_bytes,
            key=(self.host.route.name, id(self.host.provider), self.host.system),
        )
        self._plan_memo = (key, plan)
        return plan

    async def start(self, *, ask: Ask | None = None, allow_project: bool = False) -> None:
        """Start the MCP servers in the background (front ends call this after their first frame).

        `ask(specs)` asks about a workspace's `.mcp.json` servers ("allow" | "deny" | None);
        `allow_project` starts them without asking or remembering (`-p --yes`)."""
        if self.host.mcp is None:
            return
        for note in self.host.mcp.notes:
            self.host.emit(Notice(note, level="warn", code="mcp"))
        await self.host.mcp.start(ask=ask, allow_project=allow_project)
        pending = [s for s in self.host.mcp.statuses() if s.state == "pending"]
        if pending:
            names = ", ".join(s.name for s in pending)
            self.host.emit(
                Notice(
                    f"MCP servers from this workspace's .mcp.json are not started: {names} — "
                    f"/mcp restart NAME (or `bulkhead mcp approve`) allows one",
                    level="warn",
                    code="mcp",
                )
            )

    def changed(self, connection: McpConnection) -> None:
        if self.host.closing:  # servers stopping at exit: nothing to tell
            return
        status = connection.status()
        self.host.emit(
            McpServerChanged(
                name=status.name,
                state=status.state.value,
                reason=status.reason,
                stderr_tail=status.stderr_tail,
                tools=len(status.tools),
                transport=status.transport,
                source=status.source,
                log_path=status.log_path,
            )
        )
        if status.state.value in ("failed", "crashed"):
            # the reason and the stderr lines come from the server: shown escaped, never as they are
            verb = "did not start" if status.state.value == "failed" else "stopped working"
            tail = ""
            if status.stderr_tail:
                tail = " — last stderr lines:\n" + "\n".join(
                    f"  {display_line(line)}" for line in status.stderr_tail
                )
            self.host.emit(
                Notice(
                    f"MCP server {status.name} {verb}: {display_line(status.reason)}. The session goes on "
                    f"without its tools; /mcp restart {status.name} tries again.{tail}",
                    level="warn",
                    code="mcp",
                )
            )
        if status.state.value in ("ready", "failed", "crashed", "stopped"):
            with contextlib.suppress(Exception):
                self.host.view_changed("mcp")

    def context_engine(self) -> ContextEngine | None:
        """The external summarizer of `context_engine = "mcp:NAME"` (app.engine.compaction.summarize), or None."""
        name = self.host.settings.context_engine
        if not name.startswith("mcp:"):
            return None
        from app.engine.compaction.summarize import ContextEngine as Engine
        from app.mcp.context_engine import McpContextEngine

        writer = McpContextEngine(
            self.host.mcp, name.removeprefix("mcp:"), timeout=self.host.settings.mcp_compact_timeout
        )
        return Engine(name, writer, timeout=self.host.settings.mcp_compact_timeout)

    async def await_ready(self) -> None:
        """Before a turn's first request: let starting MCP servers finish (each bounded by its timeout)."""
        if self.host.mcp is None or not self.host.mcp.starting():
            return
        self.host.emit(
            Notice(
                f"waiting for MCP servers to start: {', '.join(self.host.mcp.starting())} "
                f"(at most {self.host.settings.mcp_startup_timeout:g} s; Esc cancels)",
                code="mcp_wait",
            )
        )
        await self.host.mcp.wait_settled()
