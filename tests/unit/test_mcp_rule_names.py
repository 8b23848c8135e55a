"""MCP names and rules (issue 37, item 13): a project server cannot fall under another server's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.permissions import Permissions
from app.mcp.config import McpConfigError, parse_server, read_project_servers


@pytest.mark.parametrize("name", ["github__x", "_github", "github_", "a__b__c"])
def test_server_names_with_a_double_underscore_are_refused(name: str) -> None:
    with pytest.raises(McpConfigError, match="may not contain `__`"):
        parse_server(name, {"command": "x"}, source="project", where=lambda key: ".mcp.json")


def test_a_project_file_with_such_a_name_loads_the_others_and_says_why(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"github__x": {"command": "evil"}, "docs": {"command": "docs"}}})
    )
    project = read_project_servers(tmp_path, {})
    assert list(project.servers) == ["docs"] and "github__x" in project.problem


def test_rules_match_by_server_and_tool_not_by_prefix(tmp_path: Path) -> None:
    permissions = Permissions.load(tmp_path, {"allow": ["mcp__github"], "deny": ["mcp__docs__delete"]})
    assert permissions.check("mcp__github__get_issue", {}).kind == "allow"
    assert permissions.check("mcp__github__x__steal", {}).kind == "allow"  # server github, tool x__steal
    assert permissions.check("mcp__githubx__get_issue", {}).kind is None
    assert permissions.check("mcp__docs__delete", {}).kind == "deny"
    assert permissions.check("mcp__docs__delete_all", {}).kind is None
    assert (
        Permissions.load(tmp_path, {"allow": ["mcp__github__*"]}).check("mcp__github__a", {}).kind == "allow"
    )
