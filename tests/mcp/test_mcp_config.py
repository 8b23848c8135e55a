"""MCP server definitions: config.toml tables (errors name file:line), the workspace's .mcp.json in
Claude Code's format, ${VAR} expansion, shadowing, and the remembered answer for project servers."""

from __future__ import annotations

import json

import pytest

from app.config import ConfigError, load_settings
from app.config_mcp import (
    McpConfigError,
    ProjectApprovals,
    expand,
    merge_servers,
    parse_server,
    read_project_servers,
)
from app.state import State


def write_config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_toml_servers_are_typed_settings(tmp_path):
    path = write_config(
        tmp_path,
        """
mcp_defer_ratio = 0.2
context_engine = "mcp:ctx"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${GH_TOKEN}" }
tool_timeout = 30

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env = "DOCS_TOKEN"
headers = { "X-Team" = "core" }
""",
    )
    settings = load_settings(path, env={"GH_TOKEN": "ghp_secret", "DOCS_TOKEN": "t"})
    github, docs = settings.mcp_servers["github"], settings.mcp_servers["docs"]
    assert (github.transport, github.command, github.args) == (
        "stdio",
        "npx",
        ("-y", "@modelcontextprotocol/server-github"),
    )
    assert github.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"} and github.tool_timeout == 30.0
    assert (docs.transport, docs.url, docs.bearer_token_env) == (
        "http",
        "https://mcp.example.com/mcp",
        "DOCS_TOKEN",
    )
    assert settings.mcp_defer_ratio == 0.2 and settings.context_engine == "mcp:ctx"
    # describe() never shows a value of env or headers (they may be secrets)
    assert "ghp_secret" not in github.describe() and "GITHUB_PERSONAL_ACCESS_TOKEN" in github.describe()
    assert "core" not in docs.describe()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[mcp_servers.x]\nargs = ["a"]\n', "needs command"),
        ("[mcp_servers.x]\ncommand = 3\n", "command must be a string"),
        ('[mcp_servers.x]\ncommand = "a"\nargs = "b c"\n', "args must be a list of strings"),
        ('[mcp_servers.x]\ncommand = "a"\ncolour = "red"\n', "unknown key 'colour'"),
        ('[mcp_servers.x]\ntype = "websocket"\nurl = "ws://x"\n', "type 'websocket' is not one of"),
        ('[mcp_servers."bad name"]\ncommand = "a"\n', "may only use letters"),
    ],
)
def test_a_wrong_server_table_names_file_line_and_what_to_do(tmp_path, body, message):
    path = write_config(tmp_path, "# servers\n" + body)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert f"{path}:" in str(caught.value)  # a line number follows the file


def test_context_engine_accepts_mcp_name_and_rejects_other_words(tmp_path):
    assert (
        load_settings(write_config(tmp_path, 'context_engine = "mcp:summarizer"\n'), env={}).context_engine
        == "mcp:summarizer"
    )
    with pytest.raises(ConfigError, match="mcp:NAME"):
        load_settings(write_config(tmp_path, 'context_engine = "remote"\n'), env={})


def test_expand_variables_with_defaults_and_reports_the_missing():
    missing: list[str] = []
    assert expand("${A}-${B:-dflt}-${C}", {"A": "1"}, missing) == "1-dflt-"
    assert missing == ["C"]


def test_unset_variable_is_a_problem_not_an_error():
    spec = parse_server(
        "s",
        {"command": "run", "env": {"TOKEN": "${NOT_SET}"}},
        source="config",
        where=lambda key: "config.toml:3",
        env={},
    )
    assert "${NOT_SET} is not set" in spec.problem


def test_project_file_in_claude_code_format(tmp_path):
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "local": {"command": "python3", "args": ["server.py"], "env": {"KEY": "${HOME_KEY:-k}"}},
                    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X": "y"}},
                    "legacy": {"type": "sse", "url": "https://example.com/sse"},
                    "broken": {"args": ["no command"]},
                }
            }
        )
    )
    project = read_project_servers(tmp_path, env={})
    assert set(project.servers) == {"local", "remote", "legacy"}
    assert project.servers["local"].env == {"KEY": "k"} and project.servers["local"].from_project
    assert project.servers["remote"].transport == "http" and project.servers["legacy"].transport == "sse"
    assert "broken" in project.problem and "needs command" in project.problem


def test_invalid_project_json_says_where(tmp_path):
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"a": {"command": "x",}}}')
    project = read_project_servers(tmp_path, env={})
    assert project.servers == {} and ".mcp.json:1:" in project.problem and "invalid JSON" in project.problem


def test_config_toml_wins_over_a_project_server_of_the_same_name(tmp_path):
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"demo": {"command": "evil"}, "extra": {"command": "ok"}}})
    )
    mine = parse_server("demo", {"command": "mine"}, source="config", where=lambda key: "config.toml")
    merged, notes = merge_servers({"demo": mine}, read_project_servers(tmp_path, env={}))
    assert merged["demo"].command == "mine" and merged["extra"].command == "ok"
    assert any("also in config.toml" in note for note in notes)


def test_project_answers_live_in_state_toml_per_workspace_and_definition(tmp_path):
    state = State(tmp_path / "home" / "state.toml")
    workspace = tmp_path / "repo"
    workspace.mkdir()
    spec = parse_server(
        "demo", {"command": "python3", "args": ["s.py"]}, source="project", where=lambda k: ".mcp.json"
    )
    approvals = ProjectApprovals(state, workspace)
    assert approvals.decision(spec) is None
    approvals.remember([spec], "allow")
    assert approvals.decision(spec) == "allow"
    assert not (workspace / ".bulkhead").exists()  # never written into the repository
    changed = parse_server(
        "demo", {"command": "python3", "args": ["other.py"]}, source="project", where=lambda k: ".mcp.json"
    )
    assert changed.fingerprint != spec.fingerprint and approvals.decision(changed) is None
    assert ProjectApprovals(state, tmp_path / "elsewhere").decision(spec) is None
    assert approvals.forget() == 1 and approvals.decision(spec) is None


def test_fingerprint_is_of_the_definition_as_written_not_the_secret(tmp_path):
    raw = {"command": "x", "env": {"TOKEN": "${SECRET}"}}
    one = parse_server("s", raw, source="project", where=lambda k: "f", env={"SECRET": "a"})
    two = parse_server("s", raw, source="project", where=lambda k: "f", env={"SECRET": "b"})
    assert one.fingerprint == two.fingerprint and one.env != two.env


def test_bearer_token_env_that_is_not_set_is_a_problem():
    spec = parse_server(
        "r",
        {"url": "https://x/mcp", "bearer_token_env": "NOPE"},
        source="config",
        where=lambda key: "config.toml:9",
        env={},
    )
    assert "NOPE" in spec.problem


def test_parse_server_rejects_non_tables():
    with pytest.raises(McpConfigError, match="must be a table"):
        parse_server("x", ["command"], source="config", where=lambda key: "config.toml:1")
