"""MCP tools in real turns: the engine on the embedded lab (the lab model's `!call TOOL {json}`) with the
demo MCP server (the SDK's server API) — approvals, hooks, budgets, images, failures, deferral."""

from __future__ import annotations

import json

from app.config import HookSpec
from app.mcp.deferral import SEARCH_TOOL
from app.model.messages import Image
from tests.mcp.conftest import demo_spec


async def test_call_an_mcp_tool_from_a_turn(make_engine):
    h = make_engine(demo_spec())
    await h.engine.start()
    await h.engine.start_mcp()
    result = await h.engine.submit('!call mcp__demo__echo {"text": "okapi"}')
    assert result.outcome == "answered" and "okapi" in result.text
    assert [r.content for r in h.tool_results()] == ["okapi"]
    approval = h.of_type("tool_approval")[0]
    assert approval.decision == "auto" and "readOnlyHint" in approval.reason
    assert any(e.state == "ready" and e.tools >= 10 for e in h.of_type("mcp_server"))
    assert "mcp__demo__echo" in {t.name for t in h.engine.tools}


async def test_a_tool_that_is_not_read_only_asks_and_a_no_is_respected(make_engine):
    asked: list[tuple[str, str]] = []

    async def approver(name, args, why):
        asked.append((name, why))
        return False

    h = make_engine(demo_spec(), approver=approver)
    await h.engine.start_mcp()
    await h.engine.submit('!call mcp__demo__write_note {"text": "hello"}')
    assert asked and asked[0][0] == "mcp__demo__write_note" and "not marked read-only" in asked[0][1]
    result = h.tool_results()[0]
    assert result.is_error and "denied" in result.content


async def test_pre_tool_use_hook_matcher_for_mcp_tools(make_engine, tmp_path):
    log = tmp_path / "hook.log"
    hook = HookSpec(
        event="PreToolUse",
        matcher="mcp__demo__.*",
        command=f"cat >> {log}; echo 'no MCP writes today' >&2; exit 2",
    )
    h = make_engine(demo_spec(), hooks=(hook,), approval="never-ask")
    await h.engine.start_mcp()
    await h.engine.submit('!call mcp__demo__write_note {"text": "hello"}')
    result = h.tool_results()[0]
    assert result.is_error and "no MCP writes today" in result.content
    payload = json.loads(log.read_text().splitlines()[0])
    assert payload["tool_name"] == "mcp__demo__write_note" and payload["tool_input"] == {"text": "hello"}


async def test_long_results_keep_head_and_tail_and_spill_the_rest(make_engine):
    h = make_engine(demo_spec(), result_max_chars=2_000)
    await h.engine.start_mcp()
    await h.engine.submit('!call mcp__demo__big_output {"size": 30000}')
    finished = h.of_type("tool_result")[0]
    content = h.tool_results()[0].content
    assert finished.chars == 30_000 and len(content) <= 2_000 and finished.spill_path
    with open(finished.spill_path, encoding="utf-8") as handle:
        assert len(handle.read()) == 30_000
    assert "line 000001" in content and finished.spill_path in content


async def test_images_reach_the_model_with_the_result(make_engine):
    h = make_engine(demo_spec())
    await h.engine.start_mcp()
    await h.engine.submit("!call mcp__demo__tiny_image {}")
    tool_message = next(m for m in h.session.master if m.role == "tool")
    assert any(isinstance(p, Image) and p.media_type == "image/png" for p in tool_message.parts)
    request = h.engine.provider.build(
        h.session.view.messages, h.engine.system, h.engine.tools, max_tokens=100
    )
    blocks = [b for m in request.body["messages"] for b in m["content"] if isinstance(m["content"], list)]
    assert any(b["type"] == "image" for b in blocks)
    assert blocks.index(next(b for b in blocks if b["type"] == "tool_result")) < blocks.index(
        next(b for b in blocks if b["type"] == "image")
    )  # results first, as the API wants


async def test_a_server_that_crashes_mid_session_is_explained_and_the_session_goes_on(make_engine):
    h = make_engine(demo_spec(), approval="never-ask")
    await h.engine.start_mcp()
    first = await h.engine.submit("!call mcp__demo__crash {}")
    assert first.outcome == "answered" and h.tool_results()[0].is_error
    await h.engine.mcp.connections["demo"].wait_settled()
    assert h.engine.mcp.connections["demo"].state == "crashed"
    warning = next(text for text in h.notices("mcp") if "stopped working" in text)
    assert "crashing on request" in warning and "/mcp restart demo" in warning
    second = await h.engine.submit('!call mcp__demo__echo {"text": "still here"}')
    assert second.outcome == "answered"  # the lab says the tool is not offered any more: the session goes on
    assert "mcp__demo__echo" not in {t.name for t in h.engine.tools}
    status = await h.engine.mcp.restart("demo")
    assert status.state == "ready"
    third = await h.engine.submit('!call mcp__demo__echo {"text": "back again"}')
    assert "back again" in third.text


async def test_a_hanging_server_is_waited_for_then_left_behind(make_engine):
    h = make_engine(demo_spec(), demo_spec("stuck", "--hang"), mcp_startup_timeout=1.0)
    await h.engine.start_mcp()
    result = await h.engine.submit('!call mcp__demo__echo {"text": "okapi"}')
    assert result.outcome == "answered" and "okapi" in result.text
    assert any("waiting for MCP servers" in text for text in h.notices("mcp_wait"))
    warning = next(text for text in h.notices("mcp") if "stuck" in text)
    assert "did not answer within 1 s" in warning and "never comes" in warning


async def test_a_200_kb_tool_list_is_deferred_and_tools_load_on_demand(make_engine):
    h = make_engine(demo_spec("demo", "--big", "400"), max_payload=128 * 1024)
    await h.engine.start()
    await h.engine.start_mcp()
    await h.engine.mcp.wait_settled()
    plan = h.engine.mcp_plan()
    assert plan.full_bytes > 200 * 1024 and plan.mode == "index"
    floor = h.engine.floor_sizes()
    budget, _ = h.engine.mcp_budgets()
    assert floor.mcp_bytes <= budget <= 13_108  # 10% of the 128 KB cap
    assert floor.total_bytes < 128 * 1024 * 0.4  # far below the preflight target: the history has room
    assert any(p.label == "tools (MCP) demo" and p.bytes > 200 * 1024 for p in floor.parts)
    result = await h.engine.submit(f'!call {SEARCH_TOOL} {{"query": "mcp__demo__records_0007"}}')
    assert "## mcp__demo__records_0007" in h.tool_results()[0].content and result.outcome == "answered"
    assert "mcp__demo__records_0007" in {t.name for t in h.engine.tools}  # loaded: sent in full now
    await h.engine.submit('!call mcp__demo__records_0007 {"query": "okapi"}')
    assert h.tool_results()[-1].content == "big tool 7: okapi (10)"
    requests = [e for e in h.of_type("request") if e.purpose == "chat"]
    assert requests and all(e.status == 200 and e.bytes < 128 * 1024 for e in requests)


async def test_native_defer_loading_on_an_anthropic_route(make_engine):
    h = make_engine(
        demo_spec("demo", "--big", "400"), provider="anthropic", route_extra={"context_window": 200_000}
    )
    await h.engine.start_mcp()
    await h.engine.mcp.wait_settled()
    plan = h.engine.mcp_plan()
    assert plan.mode == "native"  # no byte cap: only the window is crowded, and the definitions fit the bytes
    request = h.engine.provider.build((), h.engine.system, h.engine.tools, max_tokens=100)
    deferred = [t for t in request.body["tools"] if t.get("defer_loading")]
    assert len(deferred) == plan.tool_count and not request.body["tools"][0].get("defer_loading")
    await h.engine.submit('!call mcp__demo__records_0011 {"query": "x"}')
    assert "does not offer the tool" in h.session.master[-1].text  # the model cannot see a deferred tool yet
    await h.engine.submit(f'!call {SEARCH_TOOL} {{"query": "mcp__demo__records_0011"}}')
    assert h.tool_results()[-1].references == ("mcp__demo__records_0011",)
    body = h.engine.provider.build(
        h.session.view.messages, h.engine.system, h.engine.tools, max_tokens=100
    ).body
    results = [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert results[-1]["content"] == [{"type": "tool_reference", "tool_name": "mcp__demo__records_0011"}]
    await h.engine.submit('!call mcp__demo__records_0011 {"query": "x"}')  # loaded by the reference: offered
    assert h.tool_results()[-1].content == "big tool 11: x (10)"


async def test_learning_a_cap_switches_native_deferral_to_the_index(make_engine, lab):
    h = make_engine(
        demo_spec("demo", "--big", "400"), provider="anthropic", route_extra={"context_window": 200_000}
    )
    await h.engine.start_mcp()
    await h.engine.mcp.wait_settled()
    assert h.engine.mcp_plan().mode == "native"
    await h.engine.submit(f'!call {SEARCH_TOOL} {{"query": "mcp__demo__records_0003"}}')
    lab.configure(gateway="nginx", cap=200 * 1024)  # the gateway refuses the 250 KB request
    result = await h.engine.submit("hello after the cap")
    assert result.outcome == "answered", result.error
    assert h.of_type("cap_learned") and h.engine.mcp_plan().mode == "index"
    body = h.engine.provider.build(
        h.session.view.messages, h.engine.system, h.engine.tools, max_tokens=100
    ).body
    assert not any(
        b.get("type") == "tool_reference"
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        for b in (b.get("content") if isinstance(b.get("content"), list) else [])
    )


async def test_floor_diagnosis_names_the_heaviest_servers():
    from app.engine.payload import diagnose_floor, floor_breakdown

    servers = {"big": 205_000, "demo": 2_300}
    parts = floor_breakdown(
        system_bytes=400, builtin_tools_bytes=7_000, mcp_tools_bytes=207_300, mcp_servers=servers
    )
    verdict = diagnose_floor(parts, 215_000, 200_000, mcp_servers=servers)
    assert verdict.fail_fast and "MCP servers big 200.2 KB, demo 2.2 KB" in verdict.message
    assert "enabled = false" in verdict.message
