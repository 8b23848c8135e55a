"""Deferral of MCP tool definitions: full under the share; past it an index + tool_search that fits the
share (shorter index levels as needed), loaded tools newest first; Anthropic's defer_loading only when the
bytes fit and it is the window they crowd; keyword and exact-name search."""

from __future__ import annotations

import json

from app.mcp.deferral import SEARCH_TOOL, describe_found, index_text, plan_tools, search
from app.model.tools import ToolSpec


def specs(count: int, server: str = "big", words: int = 60) -> list[ToolSpec]:
    return [
        ToolSpec(
            f"mcp__{server}__records_{i:04d}",
            f"Search records of kind {i}. " + "filler text " * words,
            {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}},
        )
        for i in range(count)
    ]


def measure(tools) -> int:
    """Stands in for the route's request builder: the compact JSON of the definitions."""
    wire = [
        {
            "name": t.name,
            "description": t.description,
            "input_schema": dict(t.input_schema),
            **({"defer_loading": True} if t.defer_loading else {}),
        }
        for t in tools
    ]
    return len(json.dumps(wire, separators=(",", ":")).encode()) if tools else 0


def servers_of(tools) -> dict[str, str]:
    return {t.name: t.name.split("__")[1] for t in tools}


def test_small_definitions_are_sent_in_full():
    tools = specs(3, "demo", words=2)
    plan = plan_tools(tools, servers_of(tools), budget_bytes=10_000, measure=measure)
    assert plan.mode == "full" and plan.specs == tuple(tools) and plan.sent_bytes == plan.full_bytes


def test_a_200_kb_tool_list_is_deferred_under_its_share():
    tools = specs(300) + specs(2, "demo", words=2)
    full = measure(tools)
    assert full > 200 * 1024
    budget = 12_800  # 10% of a 128 KB cap
    plan = plan_tools(
        tools,
        servers_of(tools),
        budget_bytes=budget,
        byte_budget=budget,
        measure=measure,
        native_possible=True,
    )  # a byte cap is in the way: bulkhead's index, not defer_loading
    assert plan.mode == "index" and plan.specs[0].name == SEARCH_TOOL
    assert plan.sent_bytes <= budget < plan.full_bytes
    assert list(plan.per_server) == ["big", "demo"]  # heaviest first, full bytes each
    assert plan.per_server["big"] > 100 * plan.per_server["demo"]


def test_index_levels_shorten_until_they_fit():
    tools = specs(120, words=20)
    roomy = plan_tools(tools, servers_of(tools), budget_bytes=20_000, measure=measure)
    tight = plan_tools(tools, servers_of(tools), budget_bytes=5_000, measure=measure)
    tiny = plan_tools(tools, servers_of(tools), budget_bytes=600, measure=measure)
    assert roomy.index_level == "100 chars" and "— Search records of kind 7." in roomy.specs[0].description
    assert tight.index_level == "names" and tight.sent_bytes <= 5_000
    assert tiny.index_level == "servers" and "server big: 120 tools" in tiny.specs[0].description


def test_loaded_tools_are_sent_in_full_newest_first_within_the_share():
    tools = specs(100, words=20)
    loaded = [t.name for t in tools[:30]]
    plan = plan_tools(tools, servers_of(tools), budget_bytes=12_000, measure=measure, loaded=loaded)
    assert plan.mode == "index" and plan.loaded and plan.sent_bytes <= 12_000
    assert plan.loaded[-1] == loaded[-1] and set(plan.loaded) < set(loaded)  # the oldest fell out first


def test_native_defer_loading_when_only_the_window_is_crowded():
    tools = specs(300)
    plan = plan_tools(
        tools, servers_of(tools), budget_bytes=80_000, byte_budget=None, measure=measure, native_possible=True
    )
    assert plan.mode == "native" and plan.specs[0].name == SEARCH_TOOL
    assert all(spec.defer_loading for spec in plan.specs[1:]) and len(plan.specs) == 301
    assert (
        plan_tools(
            tools,
            servers_of(tools),
            budget_bytes=80_000,
            measure=measure,
            native_possible=True,
            setting="bulkhead",
        ).mode
        == "index"
    )
    assert (
        plan_tools(tools, servers_of(tools), budget_bytes=80_000, measure=measure, setting="off").mode
        == "full"
    )


def test_search_by_exact_names_and_by_keywords():
    tools = specs(50, words=1) + [
        ToolSpec(
            "mcp__gh__create_issue", "Create a GitHub issue.", {"type": "object", "properties": {"title": {}}}
        )
    ]
    assert [t.name for t in search(tools, "mcp__big__records_0007, mcp__big__records_0009")] == [
        "mcp__big__records_0007",
        "mcp__big__records_0009",
    ]
    assert search(tools, "create issue")[0].name == "mcp__gh__create_issue"
    assert len(search(tools, "records")) == 5
    assert search(tools, "zebra") == []


def test_found_tools_are_described_with_their_schema():
    text = describe_found(specs(1, words=1), native=False)
    assert "## mcp__big__records_0000" in text and '"query"' in text
    assert describe_found([], native=False).startswith("No MCP tool matches")
    assert index_text(specs(2, words=1), {}, 0) == "- mcp__big__records_0000\n- mcp__big__records_0001"
