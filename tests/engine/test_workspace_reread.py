"""What the workspace brings is read again at the next prompt, without /new (issue 40): a custom command
file added between two prompts is a command at the second; a rule file changed between two prompts is in
force at the next tool call — its deny rules at once, its allow rules only once approved, asked exactly as
at the start."""

from __future__ import annotations

import json
import os

from app.engine.custom_commands import CommandCatalog
from app.engine.workspace_rules import rule_trust
from tests.engine.test_permissions_lab import asker


def rules_asker(answer):
    asked: list[list[str]] = []

    async def ask(files):
        asked.append([file.relative for file in files])
        return answer

    ask.asked = asked
    return ask


def write_settings(workspace, permissions: dict) -> None:
    folder = workspace / ".claude"
    folder.mkdir(exist_ok=True)
    path = folder / "settings.json"
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(json.dumps({"permissions": permissions}))
    if path.stat().st_mtime_ns == before:  # a coarse clock: the change must still be seen
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def results(h) -> list:
    return [r for m in h.session.master for r in m.tool_results]


async def test_a_command_file_added_between_two_prompts_is_a_command_at_the_second(make_harness, tmp_path):
    h = make_harness()
    catalog = CommandCatalog(h.engine.workspace, global_dir=tmp_path / "no-global")
    await h.engine.submit("first prompt")
    assert catalog.read()[0] == []

    folder = h.engine.workspace / ".claude" / "commands"
    folder.mkdir(parents=True)
    (folder / "shout.md").write_text("---\ndescription: say it loud\n---\n!echo LOUD $ARGUMENTS\n")
    commands, _problems = catalog.read()
    assert [c.name for c in commands] == ["shout"] and commands[0].description == "say it loud"

    result = await h.engine.submit(commands[0].expand("and clear"))
    assert result.outcome == "answered" and "LOUD and clear" in result.text

    unchanged = catalog.read()
    assert catalog.read() is unchanged  # nothing changed: nothing read again
    (folder / "shout.md").unlink()
    assert catalog.read()[0] == []


async def test_a_deny_rule_added_to_an_approved_file_refuses_the_next_tool_call(make_harness):
    approve = asker(True)
    h = make_harness(approver=approve)
    workspace = h.engine.workspace
    write_settings(workspace, {"allow": ["Bash(echo:*)"]})
    h = make_harness(approver=approve)  # the file is there at the start
    ask = rules_asker("allow")
    await h.engine.confirm_workspace_rules(ask=ask)
    assert ask.asked == [[".claude/settings.json"]]

    await h.engine.submit("!shell echo first")
    assert approve.asked == [] and "first" in results(h)[0].content  # allowed by the approved file

    write_settings(workspace, {"allow": ["Bash(echo:*)"], "deny": ["Bash(echo second)"]})
    await h.engine.submit("!shell echo second")

    refused = results(h)[1]
    assert refused.is_error and "Bash(echo second)" in refused.content
    assert approve.asked == [] and ask.asked == [[".claude/settings.json"]]  # its allow rules did not change
    said = [e.text for e in h.of_type("notice") if e.code == "permissions"]
    assert any(".claude/settings.json changed" in t and "in force" in t for t in said)


async def test_an_allow_rule_added_to_a_file_is_not_in_force_until_approved(make_harness):
    approve = asker(False)
    h = make_harness(approver=approve)
    workspace = h.engine.workspace
    write_settings(workspace, {"allow": ["Bash(echo:*)"]})
    rule_trust(h.engine.state, workspace).remember(
        {".claude/settings.json": _fingerprint(["Bash(echo:*)"])}, "allow"
    )
    h = make_harness(approver=approve)
    ask = rules_asker(None)  # "not now"
    await h.engine.confirm_workspace_rules(ask=ask)
    assert ask.asked == []  # approved before: nothing to ask

    write_settings(workspace, {"allow": ["Bash(echo:*)", "Bash(touch:*)"]})
    await h.engine.submit("!shell touch made-by-the-repository")

    assert ask.asked == [[".claude/settings.json"]]  # asked as at the start
    assert not (workspace / "made-by-the-repository").exists()
    assert approve.asked and approve.asked[0][0] == "shell"  # the call asked instead of running
    said = [e.text for e in h.of_type("notice") if e.code == "permissions"]
    assert any("NOT in force" in t and "Bash(touch:*)" in t for t in said)

    await h.engine.submit("!shell echo still-held")  # the whole file's allow rules wait for the answer
    assert len(approve.asked) == 2 and "still-held" not in results(h)[1].content

    yes = rules_asker("allow")
    h.engine.rule_files.ask = yes
    write_settings(workspace, {"allow": ["Bash(echo:*)", "Bash(touch:*)", "Bash(true)"]})
    await h.engine.submit("!shell touch approved-now")
    assert yes.asked == [[".claude/settings.json"]] and (workspace / "approved-now").exists()
    assert len(approve.asked) == 2


async def test_a_rule_file_that_cannot_be_read_keeps_its_deny_rules(make_harness):
    approve = asker(True)
    h = make_harness(approver=approve)
    write_settings(h.engine.workspace, {"deny": ["Bash(rm:*)"]})
    h = make_harness(approver=approve)
    (h.engine.workspace / "keep.txt").write_text("precious")
    path = h.engine.workspace / ".claude" / "settings.json"
    path.write_text('{"permissions": {"deny": ["Bash(rm:*)"]')  # a save half done

    await h.engine.submit("!shell rm keep.txt")

    assert (h.engine.workspace / "keep.txt").exists() and results(h)[0].is_error
    said = [e.text for e in h.of_type("notice") if e.code == "permissions"]
    assert any(
        "cannot be read now (not valid JSON" in t and "1 deny/ask rule from before stays in force" in t
        for t in said
    )
    assert not any(
        "permissions are not in force" in t for t in said
    )  # the parser's own advice: not said twice


def _fingerprint(allow: list[str]) -> str:
    from app.engine.permissions import allow_fingerprint

    return allow_fingerprint(allow)


async def test_bulkheads_own_write_of_a_rule_file_is_not_news(make_harness):
    """`p` on an approval adds the rule to `.bulkhead/settings.toml`; the next prompt reads the file again
    and finds what is already in force: nothing said, nothing asked."""
    approve = asker("project")
    h = make_harness(approver=approve)
    write_settings(h.engine.workspace, {"deny": ["Read(./.env)"]})
    h = make_harness(approver=approve)
    ask = rules_asker(None)
    await h.engine.confirm_workspace_rules(ask=ask)
    await h.engine.submit("!shell echo saved")
    before = [e.text for e in h.of_type("notice") if e.code == "permissions"]

    await h.engine.submit("!shell echo saved")

    assert len(approve.asked) == 1 and "saved" in results(h)[1].content
    assert [e.text for e in h.of_type("notice") if e.code == "permissions"] == before and ask.asked == []
