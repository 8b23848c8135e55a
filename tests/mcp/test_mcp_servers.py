"""Real MCP servers through the SDK: the demo server over stdio and streamable HTTP; servers that fail
to start, hang, crash mid-call, or take too long; restart. Each failure says why, with its stderr."""

from __future__ import annotations

import asyncio
from pathlib import Path

from app.config_mcp import McpServerSpec
from app.mcp.connection import McpCallError, McpConnection, ServerState
from app.mcp.manager import McpManager
from tests.mcp.conftest import demo_spec


def connection(spec: McpServerSpec, tmp_path: Path, **kwargs) -> McpConnection:
    options = {"startup_timeout": 30.0, "tool_timeout": 30.0, **kwargs}
    return McpConnection(spec, log_path=tmp_path / "mcp" / f"{spec.name}.stderr.log", **options)


async def test_stdio_server_lists_its_tools_and_answers_a_call(tmp_path):
    demo = connection(demo_spec(), tmp_path)
    demo.start()
    try:
        assert await demo.wait_settled() == ServerState.READY
        names = {tool.name for tool in demo.tools}
        assert {"echo", "add", "tiny_image", "write_note", "context_compact"} <= names
        echo = next(t for t in demo.tools if t.name == "echo")
        assert echo.read_only and echo.input_schema["required"] == ["text"]
        assert not next(t for t in demo.tools if t.name == "write_note").read_only
        result = await demo.call("echo", {"text": "okapi"})
        assert result.content[0].text == "okapi" and not result.is_error
        assert demo.server_version.startswith("demo") and demo.protocol
    finally:
        await demo.stop()
    assert demo.state == ServerState.STOPPED


async def test_streamable_http_server_with_bearer_token_from_the_environment(tmp_path, http_demo):
    spec = McpServerSpec(name="remote", transport="http", url=http_demo, bearer_token_env="DEMO_MCP_TOKEN")
    remote = connection(spec, tmp_path, env={"DEMO_MCP_TOKEN": "demo-token-123"})
    remote.start()
    try:
        assert await remote.wait_settled() == ServerState.READY, remote.reason
        result = await remote.call("add", {"a": 2, "b": 40})
        assert result.structured_content == {"sum": 42}
    finally:
        await remote.stop()


async def test_streamable_http_server_refusing_the_token_is_a_failure_with_a_reason(tmp_path, http_demo):
    spec = McpServerSpec(name="remote", transport="http", url=http_demo, bearer_token_env="DEMO_MCP_TOKEN")
    remote = connection(spec, tmp_path, env={"DEMO_MCP_TOKEN": "wrong"}, startup_timeout=10.0)
    remote.start()
    assert await remote.wait_settled() == ServerState.FAILED
    assert "401" in remote.reason or "nauthorized" in remote.reason, remote.reason


async def test_a_missing_command_fails_with_its_name(tmp_path):
    broken = connection(
        McpServerSpec(name="gone", transport="stdio", command="bulkhead-no-such-server"), tmp_path
    )
    broken.start()
    assert await broken.wait_settled() == ServerState.FAILED
    assert "command not found" in broken.reason and "bulkhead-no-such-server" in broken.reason


async def test_a_server_that_exits_at_start_is_explained_by_its_stderr(tmp_path):
    crashing = connection(demo_spec("crashy", "--crash"), tmp_path)
    crashing.start()
    assert await crashing.wait_settled() == ServerState.FAILED
    assert any("cannot open the database" in line for line in crashing.stderr_tail)
    assert (tmp_path / "mcp" / "crashy.stderr.log").stat().st_mode & 0o777 == 0o600


async def test_a_hanging_server_times_out_and_its_process_is_stopped(tmp_path):
    hanging = connection(demo_spec("hangs", "--hang"), tmp_path, startup_timeout=1.0)
    hanging.start()
    assert await hanging.wait_settled() == ServerState.FAILED
    assert "did not answer within 1 s" in hanging.reason and "mcp_startup_timeout" in hanging.reason
    assert any("never comes" in line for line in hanging.stderr_tail)
    assert hanging._runner is not None and hanging._runner.done()  # nothing left running


async def test_a_server_that_dies_mid_call_is_marked_crashed_with_its_last_words(tmp_path):
    crashed = asyncio.Event()
    demo = connection(
        demo_spec(), tmp_path, on_change=lambda c: crashed.set() if c.state == ServerState.CRASHED else None
    )
    demo.start()
    await demo.wait_settled()
    try:
        await demo.call("crash", {})
    except McpCallError as exc:
        assert exc.lost or "closed" in str(exc).lower()
    else:
        raise AssertionError("a call to a server that exits must not produce a result")
    async with asyncio.timeout(10):
        await crashed.wait()
    assert demo.state == ServerState.CRASHED
    assert any("crashing on request" in line for line in demo.stderr_tail)
    try:
        await demo.call("echo", {"text": "again"})
    except McpCallError as exc:
        assert "crashed" in str(exc) and "/mcp restart demo" in str(exc)
    await demo.restart()
    assert await demo.wait_settled() == ServerState.READY
    assert (await demo.call("echo", {"text": "back"})).content[0].text == "back"
    await demo.stop()


async def test_a_slow_call_times_out_and_the_server_stays_usable(tmp_path):
    demo = connection(demo_spec(), tmp_path, tool_timeout=0.5)
    demo.start()
    await demo.wait_settled()
    try:
        try:
            await demo.call("slow", {"seconds": 5})
        except McpCallError as exc:
            assert "did not answer within 0.5 s" in str(exc) and "mcp_tool_timeout" in str(exc)
        else:
            raise AssertionError("the slow call must time out")
        assert demo.state == ServerState.READY
    finally:
        await demo.stop()


async def test_esc_cancels_a_running_call(tmp_path):
    demo = connection(demo_spec(), tmp_path)
    demo.start()
    await demo.wait_settled()
    cancel = asyncio.Event()
    try:
        call = asyncio.ensure_future(demo.call("slow", {"seconds": 30}, cancel=cancel))
        await asyncio.sleep(0)  # let the call go out
        cancel.set()
        try:
            async with asyncio.timeout(10):
                await call
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("a cancelled call must raise CancelledError")
    finally:
        await demo.stop()


async def test_manager_needs_a_yes_for_project_servers_and_remembers_it(tmp_path):
    from app.config_mcp import ProjectApprovals
    from app.state import State

    state = State(tmp_path / "state.toml")
    approvals = ProjectApprovals(state, tmp_path)
    project = demo_spec("proj", source="project", fingerprint="abc123")
    asked: list[list[str]] = []

    async def ask(specs):
        asked.append([s.name for s in specs])
        return "allow"

    manager = McpManager({"proj": project}, log_folder=tmp_path / "logs", approvals=approvals)
    await manager.start(ask=ask)
    await manager.wait_settled()
    assert asked == [["proj"]] and manager.connections["proj"].state == ServerState.READY
    await manager.close()

    again = McpManager({"proj": project}, log_folder=tmp_path / "logs", approvals=approvals)
    await again.start(ask=ask)  # remembered: not asked again
    await again.wait_settled()
    assert asked == [["proj"]] and again.connections["proj"].state == ServerState.READY
    await again.close()

    changed = demo_spec("proj", "--big", "1", source="project", fingerprint="changed")
    third = McpManager({"proj": changed}, log_folder=tmp_path / "logs", approvals=approvals)
    await third.start(ask=None)  # a changed definition asks again; nobody to ask: pending
    assert third.connections["proj"].state == ServerState.PENDING
    assert "bulkhead mcp approve proj" in third.connections["proj"].reason


async def test_sdk_missing_is_a_clear_failure(tmp_path, monkeypatch):
    import app.mcp.manager as manager_module

    monkeypatch.setattr(manager_module, "_import_sdk", lambda: False)
    manager = McpManager({"demo": demo_spec()}, log_folder=tmp_path)
    await manager.start()
    status = manager.statuses()[0]
    assert status.state == "failed" and "pip install 'mcp" in status.reason
