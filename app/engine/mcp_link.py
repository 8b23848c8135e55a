"""The MCP link: the servers' tools in every request (deferred when they crowd the payload), starting the
servers (after the TUI's first frame; in `-p` while the request is built), waiting for them before a turn (at
most `mcp_tools_wait`, overlapped with the route's own setup), what a server's change tells the user, and the
external summarizer of `context_engine = "mcp:NAME"`.

It sees the engine only through `McpHost` (app.engine.host).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.engine.notice_words import notice
from app.model.events import McpServerChanged
from app.model.notice_facts.mcp import (
    McpConfigNote,
    McpServerDown,
    McpServersNotApproved,
    McpStillStarting,
    McpWaiting,
)

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
        self._starting: asyncio.Task[None] | None = None  # `begin`'s start of the servers
        self._asking = False  # that start asks about the workspace's servers first
        self._told_notes = False  # the problems reading the servers' definitions were said
        self._told_pending = False  # `begin` said which of the workspace's servers are not started

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

    async def start(self, *, ask: Ask | None = None, allow_project: bool = False, wait: bool = True) -> None:
        """Start the MCP servers in the background (front ends call this after their first frame).

        `ask(specs)` asks about a workspace's `.mcp.json` servers ("allow" | "deny" | None);
        `allow_project` starts them without asking or remembering (`-p --yes`); `wait=False` returns at once
        (`begin`)."""
        if self.host.mcp is None:
            return
        if not wait:
            self.begin(ask=ask, allow_project=allow_project)
            return
        if not self._told_notes:
            self._tell_notes()
        await self.host.mcp.start(ask=ask, allow_project=allow_project)
        if not self._told_pending:
            self._tell_pending()

    def _tell_notes(self) -> None:
        assert self.host.mcp is not None
        for note in self.host.mcp.notes:  # problems reading .mcp.json, shadowed names
            self.host.emit(notice(McpConfigNote(note=note)))
        self._told_notes = True

    def _tell_pending(self) -> None:
        assert self.host.mcp is not None
        pending = [s for s in self.host.mcp.statuses() if s.state == "pending"]
        if pending:
            self.host.emit(notice(McpServersNotApproved(servers=tuple(s.name for s in pending))))

    def begin(self, *, ask: Ask | None = None, allow_project: bool = False) -> None:
        """`start`, without waiting for it (`bulkhead -p`): the servers start while the session opens and the
        first request is built; the turn waits for them only where it needs their tools (`await_ready`).

        The servers that will be launched show as starting at once; a question about the workspace's servers
        (`ask`) is answered before the first request goes."""
        if self.host.mcp is None or self._starting is not None:
            return
        self._asking = ask is not None and bool(self.host.mcp.pending())
        self.host.mcp.expect_launch(allow_project=allow_project)
        self._tell_notes()  # said now, not after the SDK's import: a quick answer may end the session first
        if not self._asking:
            self.host.mcp.mark_pending()
            self._tell_pending()
            self._told_pending = True
        self._starting = asyncio.get_running_loop().create_task(
            self._begin(ask, allow_project), name="mcp start"
        )

    async def _begin(self, ask: Ask | None, allow_project: bool) -> None:
        if self.host.settings.mcp_tools_wait == 0 and not self._asking:
            # No request waits for the servers: the route's setup goes first, uncontended (the MCP SDK's import
            # would share the interpreter with it), then the servers start while the first request is answered.
            await self.host.provider.prepare()
        await self.start(ask=ask, allow_project=allow_project)

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
            self.host.emit(
                notice(
                    McpServerDown(
                        server=status.name,
                        crashed=status.state.value == "crashed",
                        reason=status.reason,
                        stderr_tail=tuple(status.stderr_tail),
                    )
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
        """Before a turn's first request: servers still starting get up to `mcp_tools_wait` seconds to be ready,
        so their tools are in it; the route's own setup (SDK, client, lab) is done meanwhile. A server still
        starting after that is said, and its tools join from the next request once it is ready."""
        mcp = self.host.mcp
        if mcp is None:
            return
        starting = self._starting
        if starting is not None and not starting.done() and self._asking:
            # the user is asked about the workspace's servers: the answer first (a start that failed has said so)
            with contextlib.suppress(Exception):
                await asyncio.shield(starting)
        if not mcp.starting():
            return
        wait = self.host.settings.mcp_tools_wait
        if wait > 0:
            self.host.emit(notice(McpWaiting(servers=tuple(mcp.starting()), wait_seconds=wait)))
            await asyncio.gather(mcp.wait_settled(wait), self._prepare_after_launch(wait))
        for name in mcp.starting():
            self.host.emit(notice(McpStillStarting(server=name, wait_seconds=wait)))

    async def _prepare_after_launch(self, wait: float) -> None:
        """The route's own setup, once the servers are launched: the MCP SDK's import comes first (the servers'
        start waits for it), then the provider's (its SDK, client, lab) overlaps with their start."""
        mcp = self.host.mcp
        if mcp is not None and mcp.started:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await mcp.launched.wait()
        await self.host.provider.prepare()
