"""A published MCP server from npm, run as users run it: `npx -y @modelcontextprotocol/server-everything`
(the protocol's reference server, speaking the handshake-era protocol). Skipped, with the reason, when
node/npx is missing or npm cannot fetch the package."""

from __future__ import annotations

import shutil

import pytest

from app.config_mcp import McpServerSpec
from app.mcp.manager import McpManager
from app.mcp.toolset import McpToolset
from app.tools.base import ToolContext

PACKAGE = "@modelcontextprotocol/server-everything"
NPM_TROUBLE = (
    "npm error",
    "npm ERR",
    "ENOTFOUND",
    "E404",
    "ETIMEDOUT",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "network",
)

pytestmark = pytest.mark.skipif(shutil.which("npx") is None, reason="node/npx is not installed")


@pytest.fixture(scope="module")
def everything_spec():
    return McpServerSpec(
        name="everything", transport="stdio", command="npx", args=("-y", PACKAGE), startup_timeout=180.0
    )


async def started(tmp_path, spec) -> McpManager:
    manager = McpManager({spec.name: spec}, log_folder=tmp_path / "mcp", tool_timeout=60.0)
    await manager.start()
    await manager.wait_settled()
    status = manager.statuses()[0]
    if status.state != "ready":
        tail = " ".join(status.stderr_tail)
        await manager.close()
        if (
            any(word in tail or word in status.reason for word in NPM_TROUBLE)
            or "timed" in status.reason
            or "did not answer" in status.reason
        ):
            pytest.skip(f"npx could not run {PACKAGE}: {status.reason} {tail[:300]}")
        raise AssertionError(f"{PACKAGE} did not start: {status.reason} {tail}")
    return manager


async def test_the_reference_server_from_npm(tmp_path, everything_spec):
    manager = await started(tmp_path, everything_spec)
    try:
        tools = {spec.name: (tool, spec) for tool, spec in manager.tools()}
        assert "mcp__everything__echo" in tools
        echo_tool, _spec = tools["mcp__everything__echo"]
        assert echo_tool.read_only  # the server's annotations arrive
        toolset = McpToolset(manager, _Settings(), flags={}, set_flag=lambda key, value: None)
        ctx = ToolContext(workspace=tmp_path, session_folder=tmp_path / "session")

        echo = await toolset.run("mcp__everything__echo", {"message": "okapi"}, ctx)
        assert not echo.is_error and "okapi" in echo.content

        if "mcp__everything__get-tiny-image" in tools:
            image = await toolset.run("mcp__everything__get-tiny-image", {}, ctx)
            assert image.images and image.images[0].media_type == "image/png"
        if "mcp__everything__get-resource-reference" in tools:
            resource = await toolset.run("mcp__everything__get-resource-reference", {"resourceId": 2}, ctx)
            assert "[resource " in resource.content and not resource.is_error
        if "mcp__everything__get-structured-content" in tools:
            structured = await toolset.run(
                "mcp__everything__get-structured-content", {"location": "New York"}, ctx
            )
            assert "temperature" in structured.content
    finally:
        await manager.close()
    assert manager.statuses()[0].state == "stopped"


class _Settings:
    mcp_tool_search = "auto"
