"""Permission rules: Claude Code's documented examples (code.claude.com/docs "Configure permissions")
checked against bulkhead's tools, deny over ask over allow, and Claude Code's settings files read as
they are."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from app.config import ConfigError, load_settings
from app.engine.permissions import (
    Permissions,
    Rule,
    RuleError,
    command_matches,
    parse_rule,
    suggest_rule,
)
from app.engine.project_settings import add_allow_rule
from app.engine.workspace_rules import rule_trust
from app.state import State


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / "src" / "app").mkdir(parents=True)
    (folder / "docs").mkdir()
    return folder


def approved(ws: Path, tmp_path: Path | None = None) -> Permissions:
    """The workspace's rules with every rule file approved by the user (a real state.toml)."""
    trust = rule_trust(State((tmp_path or ws.parent) / "state.toml"), ws)
    permissions = Permissions.load(ws, trust=trust)
    permissions.answer([file.relative for file in permissions.files], "allow")
    return Permissions.load(ws, trust=trust)


def rules(ws: Path, *, allow=(), ask=(), deny=()) -> Permissions:
    return Permissions.load(ws, {"allow": list(allow), "ask": list(ask), "deny": list(deny)})


def shell(command: str) -> tuple[str, dict]:
    return "shell", {"command": command}


# -- Bash: the documented examples -----------------------------------------------------------------
@pytest.mark.parametrize(
    "rule, command, allowed",
    [
        ("Bash(npm run build)", "npm run build", True),  # "Matches the exact Bash command npm run build"
        ("Bash(npm run build)", "npm run build --prod", False),
        ("Bash(npm run test:*)", "npm run test", True),  # "Matches Bash commands starting with npm run test"
        ("Bash(npm run test:*)", "npm run test -- --watch", True),
        ("Bash(npm run test:*)", "npm run testing", True),  # `:*` is a plain prefix, as documented …
        ("Bash(npm run test *)", "npm run testing", False),  # … `cmd *` has a word boundary
        ("Bash(curl http://site.com/:*)", "curl http://site.com/page", True),
        ("Bash(curl http://site.com/:*)", "curl -X GET http://site.com/page", False),  # "won't match"
        ("Bash(curl http://site.com/:*)", "curl https://site.com/page", False),
        ("Bash(safe-cmd:*)", "safe-cmd && other-cmd", False),  # a prefix rule never allows a chained command
        ("Bash(npm run *)", "npm run lint", True),
        ("Bash(git * main)", "git checkout main", True),
        ("Bash(git * main)", "git checkout dev", False),
        ("Bash(ls *)", "ls -la", True),  # the space is a word boundary …
        ("Bash(ls *)", "lsof", False),
        ("Bash(ls*)", "lsof", True),  # … without it, a plain prefix
        ("Bash(ls *)", "ls", True),
        ("Bash(npm test:*)", "npm test && npm test -- --ci", True),  # every part allowed
        ("Bash(echo:*)", "echo $(cat ~/.ssh/id_rsa)", False),  # substitution is never allowed by a pattern
        ("Bash(pytest:*)", "timeout 60 pytest -q", True),  # wrappers are ignored
        ("Bash", "anything at all | really", True),
        ("shell(make:*)", "make check", True),  # bulkhead's own tool name works too
    ],
)
def test_bash_rules(ws: Path, rule: str, command: str, allowed: bool) -> None:
    verdict = rules(ws, allow=[rule]).check(*shell(command))
    assert (verdict.kind == "allow") is allowed, verdict


def test_deny_wins_over_allow_and_ask_over_allow(ws: Path) -> None:
    permissions = rules(
        ws, allow=["Bash(npm:*)", "Bash(git:*)"], ask=["Bash(git push:*)"], deny=["Bash(npm publish:*)"]
    )
    assert permissions.check(*shell("npm install")).kind == "allow"
    assert permissions.check(*shell("npm publish --tag next")).kind == "deny"
    assert permissions.check(*shell("git push origin main")).kind == "ask"
    assert permissions.check(*shell("git status")).kind == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "npm test && npm publish",
        "npm publish; true",
        "echo ok | npm publish",
        "timeout 5 npm publish",
        "CI=1 npm publish",
        "npm test\nnpm publish",
    ],
)
def test_a_deny_rule_catches_any_part_of_a_command(ws: Path, command: str) -> None:
    assert rules(ws, allow=["Bash"], deny=["Bash(npm publish:*)"]).check(*shell(command)).kind == "deny"


def test_commands_split_as_bash_splits_them() -> None:
    from app.model.shell_syntax import parse_shell

    assert [c.words for c in parse_shell("echo 'a && b' && ls | wc -l; make 2>&1").commands] == [
        ("echo", "a && b"),
        ("ls",),
        ("wc", "-l"),
        ("make",),
    ]
    assert command_matches("echo:*", 'echo "x; y"', "allow")


# -- Read / Edit: gitignore paths --------------------------------------------------------------------
@pytest.mark.parametrize(
    "rule, tool, path, matches",
    [
        ("Edit(docs/**)", "edit_file", "docs/guide/intro.md", True),  # "edits to files in the docs directory"
        ("Edit(docs/**)", "write_file", "src/docs.md", False),
        ("Read(./.env)", "read_file", ".env", True),
        ("Read(./.env)", "read_file", "src/.env", False),
        ("Read(*.env)", "read_file", "src/app/prod.env", True),  # no slash: any depth (gitignore)
        ("Edit(/src/**/*.ts)", "edit_file", "src/app/main.ts", True),  # `/path`: from the project folder
        ("Edit(/src/**/*.ts)", "edit_file", "lib/src/x.ts", False),
        ("Read(src/*)", "read_file", "src/a.py", True),  # `*` stays in one folder …
        ("Read(src/*)", "read_file", "src/app/a.py", False),
        ("Read(src/**)", "read_file", "src/app/a.py", True),  # … `**` crosses folders
        ("Read(//etc/hosts)", "read_file", "/etc/hosts", True),  # `//path`: absolute
        ("Read(./src)", "grep", "src", True),  # a folder rule covers the search inside it
        ("Read(./src)", "read_file", "src/app/deep.py", True),
        ("Read", "list_dir", ".", True),
        ("Write(./docs/**)", "edit_file", "docs/a.md", True),  # Edit and Write cover both file tools
    ],
)
def test_path_rules(ws: Path, rule: str, tool: str, path: str, matches: bool) -> None:
    args = {"path": path, "pattern": "x"} if tool in ("grep", "glob") else {"path": path}
    if tool == "edit_file":
        args |= {"old_string": "a", "new_string": "b"}
    if tool == "write_file":
        args |= {"content": "c"}
    verdict = rules(ws, allow=[rule]).check(tool, args)
    assert (verdict.kind == "allow") is matches, verdict


def test_home_paths(ws: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    permissions = rules(ws, allow=["Read(~/.zshrc)", "Read(~/Documents/*.pdf)"])
    assert permissions.check("read_file", {"path": "~/.zshrc"}).kind == "allow"
    assert (
        permissions.check("read_file", {"path": str(tmp_path / "home" / "Documents" / "a.pdf")}).kind
        == "allow"
    )
    assert permissions.check("read_file", {"path": "~/Documents/a.txt"}).kind is None


def test_a_symlink_cannot_ride_an_allow_rule_out_of_the_folder(ws: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("s")
    (ws / "docs" / "link.txt").symlink_to(tmp_path / "secret.txt")
    permissions = rules(
        ws, allow=["Read(./docs/**)"], deny=["Read(//" + str(tmp_path).lstrip("/") + "/secret.txt)"]
    )
    assert permissions.check("read_file", {"path": "docs/link.txt"}).kind == "deny"  # deny sees through it
    assert rules(ws, allow=["Read(./docs/**)"]).check("read_file", {"path": "docs/link.txt"}).kind is None


# -- other tools ---------------------------------------------------------------------------------------
def test_webfetch_domains_and_mcp_names(ws: Path) -> None:
    permissions = rules(
        ws,
        allow=[
            "WebFetch(domain:example.com)",
            "WebFetch(domain:*.docs.rs)",
            "mcp__puppeteer",
            "mcp__github__get_issue",
        ],
    )
    assert permissions.check("web_fetch", {"url": "https://example.com/a"}).kind == "allow"
    assert permissions.check("web_fetch", {"url": "https://evil.com/?example.com"}).kind is None
    assert permissions.check("web_fetch", {"url": "https://serde.docs.rs/"}).kind == "allow"
    assert permissions.check("mcp__puppeteer__puppeteer_navigate", {}).kind == "allow"  # the whole server
    assert permissions.check("mcp__github__get_issue", {}).kind == "allow"
    assert permissions.check("mcp__github__create_issue", {}).kind is None
    assert rules(ws, deny=["mcp__github__*"]).check("mcp__github__create_issue", {}).kind == "deny"


@pytest.mark.parametrize("text", ["Bash(npm test", "NotATool", "WebFetch(example.com)", "Read(a)(b", 42])
def test_malformed_rules_say_what_a_rule_looks_like(text) -> None:
    with pytest.raises(RuleError, match="rule|unknown tool|domain"):
        Rule(text, "allow", "test", Path("/"))


def test_parse_rule() -> None:
    assert parse_rule("Bash(npm test:*)") == ("Bash", "npm test:*")
    assert parse_rule("Read") == ("Read", None)
    assert parse_rule("Bash(*)") == ("Bash", None)
    assert parse_rule("Bash(echo (a))") == ("Bash", "echo (a)")


# -- the sources --------------------------------------------------------------------------------------
CLAUDE_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Bash(npm run test:*)", "Read(~/.zshrc)"],
        "deny": ["Bash(curl:*)", "Read(./.env)", "Read(./.env.*)", "Read(./secrets/**)"],
        "ask": ["Bash(git push:*)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../docs/"],
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo"}]}]},
}


def test_claude_settings_files_are_read_unchanged(ws: Path) -> None:
    (ws / ".claude").mkdir()
    settings = ws / ".claude" / "settings.json"
    settings.write_text(json.dumps(CLAUDE_SETTINGS, indent=2))
    (ws / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(make:*)"]}})
    )
    before = settings.read_bytes()

    permissions = approved(ws)

    assert permissions.problems == []
    assert permissions.check(*shell("npm run test -- -u")).kind == "allow"
    assert permissions.check(*shell("make all")).kind == "allow"
    assert permissions.check(*shell("curl https://x")).kind == "deny"
    assert permissions.check(*shell("git push")).kind == "ask"
    assert permissions.check("read_file", {"path": ".env.production"}).kind == "deny"
    assert permissions.check("grep", {"pattern": "key", "path": "secrets"}).kind == "deny"
    sources = {source for _kind, _text, source in permissions.listing()}
    assert sources == {".claude/settings.json", ".claude/settings.local.json"}
    assert permissions.listing()[0][0] == "deny"  # listed in the order they are evaluated
    assert settings.read_bytes() == before


def test_a_broken_settings_file_is_reported_not_fatal(ws: Path) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{ not json")
    (ws / ".bulkhead").mkdir()
    (ws / ".bulkhead" / "settings.toml").write_text('[permissions]\nallow = ["Bash(ok)", "Nope(x)"]\n')
    permissions = approved(ws)
    assert permissions.check(*shell("ok")).kind == "allow"
    assert any("not valid JSON" in p for p in permissions.problems)
    assert any("Nope" in p and "skipped" in p for p in permissions.problems)


def test_config_toml_rules_are_checked_when_loaded(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[permissions]\nallow = ["Bash(npm test:*)"]\ndeny = ["Read(./.env)"]\n')
    assert load_settings(config, env={}).permissions == {
        "allow": ("Bash(npm test:*)",),
        "deny": ("Read(./.env)",),
    }
    config.write_text('max_mentions = 3\n[permissions]\nallow = ["Bash(npm test"]\n')
    with pytest.raises(ConfigError, match=r"config.toml:3: permissions.allow: .*is not a rule"):
        load_settings(config, env={})


# -- "always": the rule remembered, and where ------------------------------------------------------------
def test_suggested_rules_name_exactly_this_call(ws: Path) -> None:
    assert suggest_rule("shell", {"command": "make   test"}, ws) == "Bash(make   test)"  # as typed
    assert suggest_rule("edit_file", {"path": "src/a[1].py"}, ws) == "Edit(./src/a\\[1\\].py)"
    assert suggest_rule("read_file", {"path": "/etc/hosts"}, ws) == "Read(//etc/hosts)"
    assert suggest_rule("mcp__github__get_issue", {}, ws) == "mcp__github__get_issue"
    for name, args in [
        ("edit_file", {"path": "src/a[1].py"}),
        ("read_file", {"path": "/etc/hosts"}),
        ("shell", {"command": "make test"}),
    ]:
        assert rules(ws, allow=[suggest_rule(name, args, ws)]).check(name, args).kind == "allow"


def test_always_for_this_project_keeps_the_users_file(ws: Path) -> None:
    path = ws / ".bulkhead" / "settings.toml"
    path.parent.mkdir()
    original = (
        '# my notes stay\n[permissions]  # mine\ndeny = ["Bash(rm:*)"]\nallow = [\n  "Bash(ls)",  # why\n]\n\n'
        '[other]\nkey = "value"\n'
    )
    path.write_text(original)
    permissions = approved(ws)

    permissions.save_project_rule("Bash(make test)")

    text = path.read_text()
    assert "# my notes stay" in text and "# why" in text and 'key = "value"' in text
    data = tomllib.loads(text)
    assert data["permissions"]["allow"] == ["Bash(make test)", "Bash(ls)"]
    assert data["permissions"]["deny"] == ["Bash(rm:*)"]
    assert approved_again(ws).check(*shell("make test")).kind == "allow"  # in force next time …
    assert permissions.check(*shell("make test")).kind == "allow"  # … and now


def approved_again(ws: Path) -> Permissions:
    """The rules as the next session loads them, with the answers remembered so far (nothing new approved)."""
    return Permissions.load(ws, trust=rule_trust(State(ws.parent / "state.toml"), ws))


def test_adding_a_rule_creates_the_file_and_refuses_to_mangle_one(tmp_path: Path) -> None:
    path = tmp_path / ".bulkhead" / "settings.toml"
    add_allow_rule(path, 'Bash(echo "hi")')
    assert tomllib.loads(path.read_text())["permissions"]["allow"] == ['Bash(echo "hi")']
    broken = tmp_path / "broken.toml"
    broken.write_text("[permissions\n")
    with pytest.raises(OSError, match="not valid TOML"):
        add_allow_rule(broken, "Bash(x)")
    assert broken.read_text() == "[permissions\n"
