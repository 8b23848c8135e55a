"""MCP in the TUI (Pilot, the embedded lab, the real demo MCP server): servers start after the first frame,
a workspace's .mcp.json is asked about once, /mcp and /mcp restart, failures in the chat, the Payload
panel's floor naming MCP, the Compaction panel naming the engine."""

from __future__ import annotations

import json
import sys

import pytest

from app.ui.chat_items import ReportItem, ToolBlock
from app.ui.headless import ready, settle, until
from app.ui.screens.mcp_trust import McpTrustScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app, send

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from tests.mcp.conftest import DEMO, demo_spec


def servers_ready(app) -> bool:
    mcp = app.session.engine.mcp if app.session is not None else None
    return mcp is not None and bool(mcp.connections) and all(s.state == "ready" for s in mcp.statuses())


async def test_config_server_starts_after_the_first_frame_and_its_tool_runs(lab, tmp_path):
    app = make_app(lab_settings(lab, mcp_servers={"demo": demo_spec()}), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: servers_ready(app), "the MCP server")
        await pilot.pause()
        assert "MCP 1/1" in str(app.query_one("#topbar").render())
        await send(pilot, '!call mcp__demo__echo {"text": "okapi"}')
        block = next(b for b in app.chat.items if isinstance(b, ToolBlock))
        assert block.tool_name == "mcp__demo__echo" and "okapi" in app.session.engine.session.master[-1].text
        app.prompt.set_text("/mcp")
        await pilot.press("enter")
        await until(pilot, lambda: any(isinstance(i, ReportItem) for i in app.chat.items), "the /mcp report")
        report = [i for i in app.chat.items if isinstance(i, ReportItem)][-1]
        text = report.copy_text()
        assert "demo" in text and "ready" in text and "10 tools" in text and "of which MCP" in text
        await app.action_quit()


async def test_workspace_servers_are_asked_about_once_and_the_answer_is_remembered(lab, tmp_path):
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}})
    )
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: isinstance(app.screen, McpTrustScreen), "the question about .mcp.json")
        body = " ".join(str(w.render()) for w in app.screen.query(".mcp-trust-server"))
        assert "demo" in body and str(DEMO) in body
        await pilot.press("y")
        await until(pilot, lambda: servers_ready(app), "the allowed server")
        await app.action_quit()

    again = make_app(lab_settings(lab), tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: servers_ready(again), "the remembered server")
        assert not isinstance(again.screen, McpTrustScreen)
        await again.action_quit()


async def test_not_now_leaves_them_off_until_mcp_restart_names_one(lab, tmp_path):
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}})
    )
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: isinstance(app.screen, McpTrustScreen), "the question")
        await pilot.press("escape")
        await until(pilot, lambda: app.session.engine.mcp.statuses()[0].state == "pending", "pending")
        await until(pilot, lambda: app.chat.notices("mcp"), "the notice")
        assert "not started: demo" in app.chat.notices("mcp")[-1].text
        app.prompt.set_text("/mcp restart demo")
        await pilot.press("enter")
        await until(pilot, lambda: servers_ready(app), "the server started by /mcp restart")
        await app.action_quit()


async def test_a_failing_server_is_explained_in_the_chat_and_the_session_goes_on(lab, tmp_path):
    settings = lab_settings(lab, mcp_servers={"broken": demo_spec("broken", "--crash")})
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.chat.notices("mcp"), "the failure notice")
        text = app.chat.notices("mcp")[-1].text
        assert "MCP server broken did not start" in text and "cannot open the database" in text
        assert "/mcp restart broken" in text
        await send(pilot, "hello")
        assert "hello" in app.session.engine.session.master[-1].text
        await app.action_quit()


async def test_payload_panel_floor_names_the_mcp_part(lab, tmp_path):
    app = make_app(
        lab_settings(lab, mcp_servers={"demo": demo_spec("demo", "--big", "400")}, max_payload=128 * 1024),
        tmp_path,
    )
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: servers_ready(app), "the big server")
        from app.ui.widgets.payload import PayloadPanel

        panel = app.query_one(PayloadPanel)
        await until(pilot, lambda: "of which MCP" in panel.floor_label, "the floor line")
        assert "deferred from" in panel.floor_label
        await app.action_quit()


async def test_mcp_slash_completion_offers_restart(lab, tmp_path):
    app = make_app(lab_settings(lab, mcp_servers={"demo": demo_spec()}), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert ("restart demo", "stopped · 0 tools") in app.slash_arguments("/mcp") or any(
            value == "restart demo" for value, _ in app.slash_arguments("/mcp")
        )
        await settle(pilot)
        await app.action_quit()


async def test_a_prompt_waiting_for_the_session_carries_the_tools_of_a_server_still_starting(lab, tmp_path):
    """`bulkhead "…"` (or a prompt typed while the session opens) goes as soon as the session is open, and the
    MCP servers' start is under way by then: the turn waits for them (mcp_tools_wait) and carries their tools."""
    gate = tmp_path / "gate"
    settings = lab_settings(
        lab, mcp_servers={"slow": demo_spec("slow", "--wait-for", str(gate))}, mcp_tools_wait=600
    )
    app = make_app(settings, tmp_path, initial_prompt='!call mcp__slow__echo {"text": "okapi"}')
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("mcp_wait"), "the turn waiting for the server")
        assert "waiting for MCP servers to start: slow" in app.chat.notices("mcp_wait")[0].text
        gate.touch()  # the server may answer now
        await until(pilot, lambda: app.chat.answers() and not app.busy, "the answer")
        block = next(b for b in app.chat.items if isinstance(b, ToolBlock))
        assert block.tool_name == "mcp__slow__echo"
        assert "okapi" in app.session.engine.session.master[-1].text  # the server's echo reached the model
        assert lab.requests()[0]["tools"] == len(app.session.engine.tools)  # the first request had its tools
        await app.action_quit()
