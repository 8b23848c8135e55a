"""What the engine sees of MCP: the tool list to send (deferral applied), `tool_search`, and calls.

    toolset = McpToolset(manager, settings, flags=session.flags, set_flag=session.set_flag)
    plan = toolset.plan(budget_bytes=…, byte_budget=…, native_possible=…, measure=…)   # cached
    if toolset.handles(call.name):
        outcome = await toolset.run(call.name, args, ctx)     # budgets applied like a built-in tool

Tools loaded through `tool_search` are remembered in the session's flags (`mcp_loaded`), so a
resumed session keeps them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from app.mcp.adapter import is_mcp_name
from app.mcp.deferral import SEARCH_TOOL, DeferralPlan, Measure, describe_found, plan_tools, search
from app.mcp.manager import McpManager
from app.tools.base import ToolContext, ToolOutcome, error, ok

LOADED_FLAG = "mcp_loaded"
MAX_LOADED_REMEMBERED = 200


class McpToolset:
    def __init__(
        self,
        manager: McpManager,
        settings: Any,
        *,
        flags: Mapping[str, Any],
        set_flag: Callable[[str, Any], None],
    ) -> None:
        self.manager = manager
        self.settings = settings
        self._flags = flags
        self._set_flag = set_flag
        self._cache: tuple[tuple, DeferralPlan] | None = None

    @property
    def loaded(self) -> tuple[str, ...]:
        value = self._flags.get(LOADED_FLAG) or ()
        return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()

    def plan(
        self,
        *,
        budget_bytes: int | None,
        byte_budget: int | None,
        native_possible: bool,
        measure: Measure,
        key: tuple = (),
    ) -> DeferralPlan:
        """The deferral plan for the current tools and budget (recomputed only when one of them changed)."""
        settings = self.settings
        full_key = (
            self.manager.generation,
            self.loaded,
            budget_bytes,
            byte_budget,
            native_possible,
            settings.mcp_tool_search,
            key,
        )
        if self._cache is not None and self._cache[0] == full_key:
            return self._cache[1]
        pairs = self.manager.tools()
        plan = plan_tools(
            [spec for _tool, spec in pairs],
            self.manager.servers_by_tool(),
            budget_bytes=budget_bytes,
            byte_budget=byte_budget,
            measure=measure,
            setting=settings.mcp_tool_search,
            native_possible=native_possible,
            loaded=self.loaded,
        )
        self._cache = (full_key, plan)
        return plan

    def current(self) -> DeferralPlan | None:
        return self._cache[1] if self._cache is not None else None

    def handles(self, name: str) -> bool:
        plan = self.current()
        return is_mcp_name(name) or (name == SEARCH_TOOL and plan is not None and plan.deferred)

    def needs_approval(self, name: str, mode: str) -> tuple[bool, str]:
        if name == SEARCH_TOOL:
            return False, "tool_search only reads bulkhead's index of MCP tools"
        return self.manager.needs_approval(name, mode)

    async def run(self, name: str, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        from app.tools.budget import apply_budget, spill_folder

        if name == SEARCH_TOOL:
            return self._search(args)
        outcome = await self.manager.call(
            name, args, spill_folder=spill_folder(ctx.session_folder), cancel=ctx.cancel
        )
        return apply_budget(name, outcome, ctx)

    def _search(self, args: Mapping[str, Any]) -> ToolOutcome:
        plan = self.current()
        query = args.get("query") if isinstance(args, Mapping) else None
        if not isinstance(query, str) or not query.strip():
            return error("tool_search needs a query: keywords, or exact tool names separated by commas.")
        found = search([spec for _tool, spec in self.manager.tools()], query)
        native = plan is not None and plan.mode == "native"
        if found and not native:  # native: the tool_reference blocks load them; nothing to remember
            loaded = [n for n in self.loaded if n not in {s.name for s in found}] + [s.name for s in found]
            self._set_flag(LOADED_FLAG, loaded[-MAX_LOADED_REMEMBERED:])
        text = describe_found(found, native=native)
        return ok(text, references=tuple(spec.name for spec in found) if native else ())
