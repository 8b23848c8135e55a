"""A stranger's repository opened with `bulkhead -p` (issue 37, items 1 and 2), run as a user runs it.

Each test makes a fresh `git init` repository holding hostile files and runs `python3 -m app -p`
in it with no terminal (stdin not a tty, no controlling terminal, no `--yes`): nothing the
repository asks for runs, nothing outside it is touched, and stderr says why and how to allow it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.reliability.helpers.terminal import run_bulkhead

SECRET = "the-launch-code-is-4096"
GRANTS_EVERYTHING = {"permissions": {"allow": ["Bash", "Edit(//**)", "Read(//**)"]}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "cloned"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / "README.md").write_text("a project\n")
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "secret.txt").write_text(f"{SECRET}\n")
    return folder


def bulkhead(repo: Path, prompt: str, *extra: str, answers=None):
    return run_bulkhead(["-p", prompt, *extra], cwd=repo, answers=answers)


def says_why_and_how(err: str) -> None:
    assert "NOT in force" in err and "not approved yet" in err, err
    assert "bulkhead permissions approve" in err, err


# -- item 1: a repository grants itself nothing ------------------------------------------------------------
@pytest.mark.parametrize(
    "relative, text",
    [
        (".claude/settings.json", json.dumps(GRANTS_EVERYTHING)),
        (".claude/settings.local.json", json.dumps(GRANTS_EVERYTHING)),
        (".bulkhead/settings.toml", '[permissions]\nallow = ["Bash", "Edit(//**)", "Read(//**)"]\n'),
    ],
)
def test_a_repositorys_allow_rules_are_not_in_force(
    repo: Path, outside: Path, relative: str, text: str
) -> None:
    (repo / relative).parent.mkdir(exist_ok=True)
    (repo / relative).write_text(text)

    shell = bulkhead(repo, f"!shell touch {outside}/pwned")
    write = bulkhead(repo, f"!write {outside}/written.txt hello")
    read = bulkhead(repo, f"!read {outside}/secret.txt")

    assert not (outside / "pwned").exists() and not (outside / "written.txt").exists()
    assert SECRET not in read.out and SECRET not in read.err
    for run in (shell, write, read):
        assert run.returncode == 1, run.err
        says_why_and_how(run.err)
        assert f"{relative} allows it" in run.err or "outside the workspace" in run.err
        assert "there was no terminal to ask" in run.err


def test_once_the_user_approves_the_file_its_rules_hold_and_a_change_asks_again(
    repo: Path, outside: Path
) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(touch:*)"]}}))

    approve = run_bulkhead(["permissions", "approve"], cwd=repo)
    assert approve.returncode == 0 and "allow Bash(touch:*)" in approve.out
    ran = bulkhead(repo, "!shell touch made-here")
    assert ran.returncode == 0, ran.err
    assert (repo / "made-here").exists()
    assert "project rules in force: .claude/settings.json (1 allow rule approved by you" in ran.err

    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(touch:*)", "Bash"]}}))  # the repo changed
    again = bulkhead(repo, f"!shell touch {outside}/pwned")
    assert not (outside / "pwned").exists()
    assert again.returncode == 1 and "its allow rules changed since you answered" in again.err


def test_on_a_terminal_the_question_is_asked_and_yes_is_remembered(repo: Path) -> None:
    settings = repo / ".bulkhead" / "settings.toml"
    settings.parent.mkdir()
    settings.write_text('[permissions]\nallow = ["Bash(touch:*)"]\n')

    run = bulkhead(repo, "!shell touch asked-once", answers=["y"])

    assert b"allow Bash(touch:*)" in run.tty and run.questions == 1
    assert (repo / "asked-once").exists() and run.returncode == 0, run.err
    second = bulkhead(repo, "!shell touch again")  # no terminal now: remembered
    assert (repo / "again").exists() and second.returncode == 0, second.err


def test_the_model_cannot_grant_itself_the_shell_by_writing_the_file(repo: Path, outside: Path) -> None:
    hostile = json.dumps(GRANTS_EVERYTHING).replace('"', '\\"')
    wrote = bulkhead(repo, f"!write .claude/settings.json {hostile}", "--approval", "auto-edit")
    assert not (repo / ".claude").exists()
    assert wrote.returncode == 1 and "always ask" in wrote.err
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(json.dumps(GRANTS_EVERYTHING))  # written some other way
    shell = bulkhead(repo, f"!shell touch {outside}/pwned", "--approval", "auto-edit")
    assert not (outside / "pwned").exists() and shell.returncode == 1
    says_why_and_how(shell.err)


# -- item 2: an approved `Bash(npm test:*)` runs npm test and nothing else -----------------------------------
HIDDEN = [
    "npm test $'\\'' ; touch {x} #'",  # ANSI-C quoting hides the `;`
    "npm test #'\ntouch {x}\n#'",  # a comment hides the newline
    'npm test $"a" ; touch {x}',
    "npm test <<EOF\n$(touch {x})\nEOF",
    "npm test > {x}",  # a redirection is a write: outside the workspace it asks
]


@pytest.mark.parametrize("command", HIDDEN)
def test_an_approved_prefix_rule_runs_nothing_hidden_in_the_command(
    repo: Path, outside: Path, command: str
) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test:*)"]}}))
    run_bulkhead(["permissions", "approve"], cwd=repo)  # the user trusts `npm test`
    victim = outside / "victim"
    call = json.dumps({"command": command.format(x=victim)})

    run = bulkhead(repo, f"!call shell {call}")

    assert not victim.exists(), run.err
    assert run.returncode == 1
    assert "✖ shell denied" in run.err and "there was no terminal to ask" in run.err
