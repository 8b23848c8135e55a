"""`bulkhead -p` and `bulkhead mcp …` as a user runs them: real processes, a workspace whose .mcp.json
names the demo server, no terminal to ask on (each run in its own session, away from any tty)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.mcp.conftest import DEMO


def run(workspace, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    """`python3 -m app ARGS` in `workspace`, without provider keys (and with `env_extra`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=180,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}})
    )
    return folder


def test_one_shot_calls_the_demo_server_of_the_workspace(workspace):
    done = run(workspace, "-p", '!call mcp__demo__echo {"text": "okapi"}', "--json", "--yes")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    result = events[-1]
    assert result["type"] == "result" and "okapi" in result["text"]
    tool_result = next(e for e in events if e["type"] == "tool_result")
    assert tool_result["name"] == "mcp__demo__echo" and tool_result["preview"].startswith("okapi")
    assert any(e["type"] == "mcp_server" and e["state"] == "ready" for e in events)
    assert "Traceback" not in done.stderr


def test_without_yes_or_a_terminal_project_servers_stay_off_and_it_says_how(workspace):
    done = run(workspace, "-p", '!call mcp__demo__echo {"text": "okapi"}')
    assert done.returncode == 0, done.stderr
    assert "not started: demo" in done.stderr and "bulkhead mcp approve" in done.stderr
    assert "does not offer the tool" in done.stdout  # the lab model was not given the tool
    listed = run(workspace, "mcp", "list")
    assert (
        listed.returncode == 1 and "pending" in listed.stdout and "bulkhead mcp approve demo" in listed.stdout
    )


def test_mcp_list_shows_state_tools_and_definition_bytes_after_approve(workspace):
    approved = run(workspace, "mcp", "approve")
    assert approved.returncode == 0 and "demo" in approved.stdout
    listed = run(workspace, "mcp", "list")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(line for line in listed.stdout.splitlines() if "demo" in line)
    assert "ready" in line and "10 tools" in line and "KB of definitions" in line
    assert "MCP tool definitions add" in listed.stdout and "sent in full" in listed.stdout
    as_json = run(workspace, "mcp", "list", "--json")
    server = json.loads(as_json.stdout.splitlines()[0])
    assert server["name"] == "demo" and server["tools"] == 10 and server["definition_bytes"] > 1000
    tools = run(workspace, "mcp", "tools", "demo")
    assert "mcp__demo__echo" in tools.stdout and "read-only" in tools.stdout and "10 tools" in tools.stdout
    ping = run(workspace, "mcp", "ping", "demo")
    assert ping.returncode == 0 and "ready in" in ping.stdout and "round trip" in ping.stdout
    reset = run(workspace, "mcp", "reset")
    assert "forgot 1 answer" in reset.stdout
    assert run(workspace, "mcp", "list").returncode == 1  # asked again (no terminal: pending)


def test_a_failing_server_is_listed_with_its_reason(workspace, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[mcp_servers.broken]\ncommand = "bulkhead-no-such-server"\n')
    env_config = {**os.environ, "BULKHEAD_CONFIG": str(config)}
    done = subprocess.run(
        [sys.executable, "-m", "app", "mcp", "list", "--yes"],
        capture_output=True,
        text=True,
        env=env_config,
        cwd=workspace,
        timeout=180,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert "broken" in done.stdout and "command not found: bulkhead-no-such-server" in done.stdout
    assert "demo" in done.stdout and "ready" in done.stdout  # --yes started the project's server


def test_no_servers_says_where_to_add_one(tmp_path):
    done = run(tmp_path, "mcp", "list")
    assert done.returncode == 0 and "no MCP servers" in done.stdout and ".mcp.json" in done.stdout
