"""Where a workspace's MCP server would send your secrets, shown before it starts (issue 37, item 8), and its
stderr log redacted and bounded (item 16)."""

from __future__ import annotations

import json
import sys

from app.mcp.config import read_project_servers
from app.mcp.manager import McpManager
from app.redact import redact_text
from tests.mcp.conftest import DEMO

KEY = "sk-proj-FAKE0123456789abcdefXYZ"
TOKEN = "ghp_FAKEtoken0123456789abcdef"


def test_definitions_are_shown_as_written_and_credentials_flagged(tmp_path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "type": "http",
                        "url": "https://mcp.example/${REGION}/mcp",
                        "headers": {"X-Key": "${OPENAI_API_KEY}"},
                    },
                    "local": {"command": "tool", "args": ["--token", "${GITHUB_TOKEN}", "--verbose"]},
                }
            }
        )
    )
    env = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": TOKEN, "REGION": "eu"}

    servers = read_project_servers(tmp_path, env).servers

    remote, local = servers["remote"], servers["local"]
    assert remote.headers == {"X-Key": KEY} and local.args == ("--token", TOKEN, "--verbose")  # what runs
    assert remote.describe() == "http: https://mcp.example/${REGION}/mcp (headers X-Key)"
    assert local.describe() == "stdio: tool --token ${GITHUB_TOKEN} --verbose"
    assert remote.credential_variables == ("OPENAI_API_KEY",) and "REGION" in remote.variables
    assert (
        "⚠ sends it your $OPENAI_API_KEY (credentials)" in remote.reads()
        and "reads $REGION" in remote.reads()
    )
    assert "$GITHUB_TOKEN" in local.reads()
    assert KEY not in redact_text(f"echo {KEY}") and TOKEN not in redact_text(f"got {TOKEN}")  # registered


async def test_the_stderr_log_is_redacted_and_rotates(tmp_path) -> None:
    from app.mcp.config import parse_server

    spec = parse_server(
        "chatty",
        {
            "command": sys.executable,
            "args": [str(DEMO), "--say-args", "--token", "${GITHUB_TOKEN}", "--chatter", "600000"],
        },
        source="project",
        where=lambda key: "test",
        env={"GITHUB_TOKEN": TOKEN},
    )
    manager = McpManager({"chatty": spec}, log_folder=tmp_path, log_max_bytes=64 * 1024)
    await manager.start(allow_project=True)
    await manager.wait_settled()
    try:
        connection = manager.connections["chatty"]
        assert connection.state == "ready", connection.reason
        await connection.call("echo", {"text": "hi"})
    finally:
        await manager.close()

    log = tmp_path / "chatty.stderr.log"
    older = tmp_path / "chatty.stderr.log.1"
    text = log.read_text() + (older.read_text() if older.exists() else "")
    assert TOKEN not in text and "demo: chatter --say-args --token [redacted] --chatter 600000" in text
    assert log.stat().st_size <= 64 * 1024 and older.exists() and older.stat().st_size <= 64 * 1024
    assert "mcp_log_max_bytes" in log.read_text()


async def test_the_log_names_the_definition_as_written_and_hides_an_echoed_key(tmp_path) -> None:
    from app.mcp.config import parse_server

    spec = parse_server(
        "echoer",
        {"command": sys.executable, "args": [str(DEMO), "--say-args", "--token", "${GITHUB_TOKEN}"]},
        source="project",
        where=lambda key: "test",
        env={"GITHUB_TOKEN": TOKEN},
    )
    manager = McpManager({"echoer": spec}, log_folder=tmp_path)
    await manager.start(allow_project=True)
    await manager.wait_settled()
    try:
        assert manager.connections["echoer"].state == "ready"
    finally:
        await manager.close()

    log = (tmp_path / "echoer.stderr.log").read_text()
    assert "starting stdio:" in log and "--token ${GITHUB_TOKEN}" in log
    assert "demo: started with --say-args --token [redacted]" in log and TOKEN not in log
