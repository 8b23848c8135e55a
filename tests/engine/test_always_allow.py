"""Which approvals may offer "always allow", checked with the permissions' own matching."""

from __future__ import annotations

from pathlib import Path

from app.engine.always_allow import always_offer
from app.engine.permissions import Permissions, Rule


def perms(workspace: Path, **lists: tuple[str, ...]) -> Permissions:
    rules = [Rule(text, kind, "config.toml", workspace) for kind, texts in lists.items() for text in texts]
    return Permissions(workspace, rules)


def test_a_plain_command_and_a_file_get_their_exact_rule(tmp_path):
    offer = always_offer(perms(tmp_path), "shell", {"command": "make test"}, tmp_path, asked_by="mode")
    assert offer.rule == "Bash(make test)" and not offer.why_not
    edit = always_offer(perms(tmp_path), "edit_file", {"path": "a.py"}, tmp_path, asked_by="mode")
    assert edit.rule == "Edit(./a.py)"


def test_outside_the_workspace_the_rule_names_the_path_and_takes_effect(tmp_path):
    outside = tmp_path.parent / "elsewhere.txt"
    offer = always_offer(
        perms(tmp_path), "read_file", {"path": str(outside)}, tmp_path, asked_by="mode", outside=True
    )
    assert offer.rule == f"Read(/{outside})"


def test_an_ask_rule_a_hook_and_a_mention_say_why_not(tmp_path):
    rules = perms(tmp_path, ask=("Bash(git push *)",))
    asked = rules.check("shell", {"command": "git push origin"}).rule
    offer = always_offer(
        rules, "shell", {"command": "git push origin"}, tmp_path, asked_by="rule", ask_rule=asked
    )
    assert not offer.rule and "Bash(git push *) (config.toml)" in offer.why_not
    hook = always_offer(perms(tmp_path), "shell", {"command": "ls"}, tmp_path, asked_by="hook")
    assert not hook.rule and "hook" in hook.why_not
    mention = always_offer(perms(tmp_path), "read_file", {"path": "/etc/hosts"}, tmp_path, asked_by="mention")
    assert not mention.rule and "@" in mention.why_not


def test_commands_a_pattern_can_never_allow_are_not_offered(tmp_path):
    for command in ("echo $(whoami)", "echo `id`", "cat <(ls)"):
        offer = always_offer(perms(tmp_path), "shell", {"command": command}, tmp_path, asked_by="mode")
        assert not offer.rule and "command substitution" in offer.why_not, command


def test_a_compound_command_is_offered_as_written(tmp_path):
    """An exact rule allows a compound command as written (app.engine.command_rules), so "always" works."""
    for command in ("make && rm -rf build", "cat a | grep b"):
        offer = always_offer(perms(tmp_path), "shell", {"command": command}, tmp_path, asked_by="mode")
        assert offer.rule == f"Bash({command})", command


def test_a_fetch_is_remembered_by_its_domain(tmp_path):
    offer = always_offer(
        perms(tmp_path), "web_fetch", {"url": "https://docs.example.com/a?b"}, tmp_path, asked_by="mode"
    )
    assert offer.rule == "WebFetch(domain:docs.example.com)"
