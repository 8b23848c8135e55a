"""MCP bounds (issue 37, item 16): a result past mcp_result_max_bytes is refused, the SDK's tracebacks go to
the log instead of stderr (the stderr log's rotation is in test_mcp_secrets.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from app.mcp.connection import McpCallError
from app.mcp.manager import McpManager
from tests.mcp.conftest import DEMO, demo_spec
from tests.reliability.helpers.terminal import run_bulkhead


async def test_a_result_over_the_cap_is_refused_and_says_which_key(tmp_path: Path) -> None:
    manager = McpManager({"demo": demo_spec()}, log_folder=tmp_path, message_max_bytes=64 * 1024)
    await manager.start()
    await manager.wait_settled()
    try:
        connection = manager.connections["demo"]
        small = await connection.call("big_output", {"size": 1000})
        assert "line 000001" in small.content[0].text
        with pytest.raises(McpCallError, match="mcp_result_max_bytes"):
            await connection.call("big_output", {"size": 200_000})
        assert connection.state == "ready"  # the server is fine: only that answer was refused
    finally:
        await manager.close()


def test_the_sdks_tracebacks_never_reach_the_terminal(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"noisy": {"command": sys.executable, "args": [str(DEMO), "--garbage"]}}})
    )
    run = run_bulkhead(["-p", "hello", "--yes"], cwd=workspace)

    assert run.returncode == 0, run.err
    assert "Traceback" not in run.err and "Failed to parse" not in run.err
    logs = list(Path(tmp_path).rglob("sdk.log"))
    from app.config import data_home

    logs += list(data_home().rglob("sdk.log"))
    assert any("Failed to parse JSONRPC message" in p.read_text() for p in logs), logs
