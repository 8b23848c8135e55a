"""Permission rules in real turns against the lab: deny wins, allow skips the prompt, outside the
workspace asks unless a rule names the path, and "always" answers are remembered."""

from __future__ import annotations

import json
import tomllib

import pytest


def asker(answer):
    asked: list[tuple[str, str]] = []

    async def approve(name, args, why):
        asked.append((name, why))
        return answer

    approve.asked = asked
    return approve


async def test_an_allow_rule_runs_a_command_without_asking(make_harness):
    approve = asker(False)
    h = make_harness(approver=approve, permissions={"allow": ("Bash(echo:*)",)})

    await h.engine.submit("!shell echo allowed-by-rule")

    assert approve.asked == []
    assert "allowed-by-rule" in h.session.master[2].tool_results[0].content
    decision = h.of_type("tool_approval")[0]
    assert decision.decision == "auto" and "Bash(echo:*)" in decision.reason


async def test_deny_wins_even_in_never_ask_mode_and_over_an_allow(make_harness):
    approve = asker(True)
    h = make_harness(
        approver=approve, approval="never-ask", permissions={"allow": ("Bash",), "deny": ("Bash(rm:*)",)}
    )
    target = h.engine.workspace / "keep.txt"
    target.write_text("precious")

    await h.engine.submit("!shell rm keep.txt")

    assert target.exists() and approve.asked == []
    result = h.session.master[2].tool_results[0]
    assert result.is_error and "permission settings" in result.content and "Bash(rm:*)" in result.content


async def test_an_ask_rule_asks_even_in_never_ask_mode(make_harness):
    approve = asker(False)
    h = make_harness(approver=approve, approval="never-ask", permissions={"ask": ("Bash(git push:*)",)})
    await h.engine.submit("!shell git push origin main")
    assert approve.asked and "ask rule Bash(git push:*)" in approve.asked[0][1]


async def test_outside_the_workspace_asks_unless_a_rule_names_the_path(make_harness, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("beyond the workspace\n")
    approve = asker(False)
    h = make_harness(approver=approve, permissions={"allow": ("Read",)})  # a bare rule names no path
    await h.engine.submit(f"!read {outside}")
    assert len(approve.asked) == 1 and "outside the workspace" in approve.asked[0][1]

    approve = asker(False)
    h = make_harness(approver=approve, permissions={"allow": (f"Read(/{outside})",)})  # `//abs/path`
    await h.engine.submit(f"!read {outside}")
    assert approve.asked == []
    assert "beyond the workspace" in h.session.master[2].tool_results[0].content


async def test_always_for_this_session_stops_asking_for_that_command(make_harness):
    approve = asker("session")
    h = make_harness(approver=approve)

    await h.engine.submit("!shell echo one")
    await h.engine.submit("!shell echo one")
    await h.engine.submit("!shell echo two")

    assert [why.split(":")[0] for _name, why in approve.asked] == [
        "shell runs a shell command (approval mode auto-read)"
    ] * 2  # the first and `echo two`
    assert ("allow", "Bash(echo one)", "this session") in h.engine.permissions.listing()
    assert not (h.engine.workspace / ".bulkhead").exists()  # nothing written for a session rule


async def test_always_for_this_project_is_saved_and_read_by_the_next_session(make_harness):
    approve = asker("project")
    h = make_harness(approver=approve)

    await h.engine.submit("!shell echo saved")

    settings = h.engine.workspace / ".bulkhead" / "settings.toml"
    assert tomllib.loads(settings.read_text())["permissions"]["allow"] == ["Bash(echo saved)"]
    notice = [e.text for e in h.of_type("notice") if e.code == "permissions"][-1]
    assert "Bash(echo saved)" in notice and "settings.toml" in notice
    later = asker(False)
    h2 = make_harness(approver=later)
    await h2.engine.submit("!shell echo saved")
    assert later.asked == [] and "saved" in h2.session.master[2].tool_results[0].content


async def test_claude_code_settings_apply_once_approved(make_harness):
    approve = asker(False)
    h = make_harness(approver=approve)
    claude = h.engine.workspace / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(echo:*)"], "deny": ["Read(./.env)"]}})
    )
    (h.engine.workspace / ".env").write_text("API_KEY=not-for-the-model\n")
    h2 = make_harness(approver=approve)  # a new engine reads the project's settings
    await h2.engine.start()

    said = [e.text for e in h2.of_type("notice") if e.code == "permissions"]
    assert any(".claude/settings.json" in t and "NOT in force" in t and "Bash(echo:*)" in t for t in said)
    await h2.engine.submit("!shell echo from-claude-settings\n!read .env")
    results = [r for m in h2.session.master for r in m.tool_results]
    assert results[0].is_error and "from-claude-settings" not in results[0].content  # asked, and denied
    assert "bulkhead permissions approve" in approve.asked[0][1]
    assert results[1].is_error and "not-for-the-model" not in results[1].content  # its deny holds at once

    async def yes(files):
        assert [f.relative for f in files] == [".claude/settings.json"]
        return "allow"

    assert await h2.engine.confirm_workspace_rules(ask=yes) == "allow"
    asked_before = len(approve.asked)
    await h2.engine.submit("!shell echo from-claude-settings")
    last = [r for m in h2.session.master for r in m.tool_results][-1]
    assert "from-claude-settings" in last.content and not last.is_error
    assert len(approve.asked) == asked_before
    h3 = make_harness(approver=approve)  # remembered (state.toml), not asked again
    assert h3.engine.permissions.pending_files() == []


async def test_a_changed_rule_file_is_asked_about_again(make_harness):
    claude_dir = make_harness().engine.workspace / ".claude"
    claude_dir.mkdir()
    settings = claude_dir / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(echo:*)"]}}))
    h = make_harness()
    h.engine.permissions.answer([".claude/settings.json"], "allow")
    assert make_harness().engine.permissions.pending_files() == []

    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(echo:*)", "Bash"]}}))
    again = make_harness()
    [file] = again.engine.permissions.pending_files()
    assert file.status == "changed" and file.allow == ("Bash(echo:*)", "Bash")
    approve = asker(False)
    again = make_harness(approver=approve)
    await again.engine.submit("!shell echo hi")
    assert approve.asked  # neither rule is in force until approved again


async def test_protected_files_always_ask_whatever_the_mode_rules_or_hooks(make_harness):
    approve = asker(False)
    h = make_harness(
        approver=approve, approval="never-ask", permissions={"allow": ("Edit", "Bash", "Edit(./**)")}
    )
    ws = h.engine.workspace
    (ws / ".git").mkdir()

    await h.engine.submit(
        "!write .claude/settings.json {}\n!write AGENTS.md hi\n!write sub/CLAUDE.md hi\n"
        "!write .mcp.json {}\n!write .git/config x\n!write .bulkhead/settings.toml x\n"
        "!shell echo '{}' > .claude/settings.local.json\n!write notes.txt fine"
    )

    assert len(approve.asked) == 7, approve.asked
    assert all("always ask" in why for _name, why in approve.asked)
    assert (
        not (ws / ".claude").exists() and not (ws / "AGENTS.md").exists() and not (ws / ".mcp.json").exists()
    )
    assert (ws / "notes.txt").read_text().startswith("fine")


async def test_a_read_deny_rule_holds_for_an_at_mention(make_harness):
    h = make_harness(permissions={"deny": ("Read(./.env)",)})
    (h.engine.workspace / ".env").write_text("API_KEY=not-for-the-model\n")

    await h.engine.submit("look at @.env")

    results = [r for m in h.session.master for r in m.tool_results]
    assert results and results[0].is_error and "not-for-the-model" not in results[0].content
    assert "Read(./.env)" in results[0].content


# -- issue 37, item 5: Read deny rules hold for searches and listings ----------------------------------------
@pytest.mark.parametrize("ripgrep", [True, False], ids=["ripgrep", "fallback"])
async def test_read_deny_rules_filter_grep_glob_and_list_dir(make_harness, monkeypatch, ripgrep):
    import shutil

    from app.tools import search

    if ripgrep and shutil.which("rg") is None:
        pytest.skip("ripgrep (Debian package ripgrep) is not installed")
    monkeypatch.setattr(search, "USE_RIPGREP", ripgrep)
    h = make_harness(approval="auto-read", permissions={"deny": ("Read(./secrets/**)", "Read(./.env)")})
    ws = h.engine.workspace
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.pem").write_text("TOKEN=hunter2-secret\n")
    (ws / ".env").write_text("TOKEN=hunter2-env\n")
    (ws / "app.py").write_text("TOKEN = os.environ['TOKEN']\n")

    await h.engine.submit(
        '!grep TOKEN .\n!grep TOKEN secrets/..\n!call grep {"pattern": "TOKEN", "path": ".", "glob": "*"}\n'
        '!call glob {"pattern": "**/*"}\n!call glob {"pattern": "secrets/*"}\n!ls secrets\n!ls .'
    )

    results = [r.content for m in h.session.master for r in m.tool_results]
    assert len(results) == 7, results
    joined = "\n".join(results)
    assert "hunter2" not in joined and "key.pem" not in joined
    assert "app.py:1:TOKEN" in results[0]
    assert ".env" not in results[6] and "app.py" in results[6]


# -- "always" is offered only where it takes effect (app.engine.always_allow) ------------------------------
def offering_asker(answer):
    """An approver that also records what "always" the engine offered while it asked."""
    seen: list = []
    holder: dict = {}

    async def approve(name, args, why):
        seen.append(holder["engine"].always)
        return answer

    approve.seen = seen
    approve.holder = holder
    return approve


async def test_under_an_ask_rule_always_is_not_offered_and_not_kept(make_harness):
    approve = offering_asker("project")
    h = make_harness(approver=approve, permissions={"ask": ("Bash(echo *)",)})
    approve.holder["engine"] = h.engine

    await h.engine.submit("!shell echo asked")
    await h.engine.submit("!shell echo asked")

    offers = approve.seen
    assert len(offers) == 2 and all(not offer.rule for offer in offers)  # asked both times
    assert "the ask rule Bash(echo *)" in offers[0].why_not and "ask wins over allow" in offers[0].why_not
    assert not (h.engine.workspace / ".bulkhead").exists()  # "project" wrote nothing: it was a plain yes
    assert all(kind != "allow" for kind, _rule, _source in h.engine.permissions.listing())


async def test_a_substitution_gets_no_always_and_a_compound_command_does(make_harness):
    approve = offering_asker("session")
    h = make_harness(approver=approve)
    approve.holder["engine"] = h.engine

    await h.engine.submit("!shell echo $(echo a)")
    await h.engine.submit("!shell echo b && echo c")
    await h.engine.submit("!shell echo b && echo c")  # kept: not asked again

    substitution, compound = approve.seen
    assert not substitution.rule and "command substitution" in substitution.why_not
    assert compound.rule == "Bash(echo b && echo c)" and not compound.why_not


async def test_a_protected_file_gets_no_always(make_harness):
    approve = offering_asker("project")
    h = make_harness(approver=approve, approval="auto-edit")
    approve.holder["engine"] = h.engine

    await h.engine.submit("!write AGENTS.md hi")

    [offer] = approve.seen
    assert not offer.rule and "always ask" in offer.why_not
    assert not (h.engine.workspace / ".bulkhead").exists()
