"""`bulkhead -p` and the terminal (issue 14, items 2 and 4), run as a user runs it.

- It asks on the controlling terminal even when stdin and stdout are pipes, and takes the answer
  typed there (a real pseudo-terminal, `helpers/terminal.py`); a denial is said on stderr and
  makes the exit status 1 — the turn did not do what was asked.
- Only the prompt the user typed carries `@path` mentions: text piped in is data. A mention
  outside the workspace asks like any read outside it, and without a terminal it is refused,
  said on stderr, exit 1.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.reliability.helpers.terminal import run_bulkhead

SECRET = "the-launch-code-is-4096"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("inside the workspace\n")
    return folder


@pytest.fixture
def outside_file(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    path = folder / "secret.txt"
    path.write_text(f"{SECRET}\n")
    return path


def events(run) -> list[dict]:
    return [json.loads(line) for line in run.out.splitlines() if line.strip()]


# -- item 4: -p asks on the terminal ---------------------------------------------------------------
def test_a_yes_typed_on_the_terminal_runs_the_call(workspace: Path) -> None:
    run = run_bulkhead(
        ["-p", "!shell echo ran > proof.txt", "--workspace", str(workspace)],
        answers=["y"],
        stdin=b"some piped text\n",
    )

    assert run.questions == 1 and b"shell: echo ran > proof.txt" in run.tty
    assert (workspace / "proof.txt").read_text() == "ran\n"
    assert run.returncode == 0, run.err
    assert "denied" not in run.err


def test_a_no_typed_on_the_terminal_is_said_and_exits_1(workspace: Path) -> None:
    run = run_bulkhead(["-p", "!shell echo ran > proof.txt", "--workspace", str(workspace)], answers=["n"])

    assert run.questions == 1
    assert not (workspace / "proof.txt").exists()
    assert run.returncode == 1
    assert "✖ shell denied" in run.err
    assert "1 tool call denied (shell); the answer was given without it (exit status 1)" in run.err
    assert "no terminal" not in run.err  # there was one: the user said no


def test_without_a_terminal_the_denial_says_why_and_exits_1(workspace: Path) -> None:
    run = run_bulkhead(["-p", "!shell echo ran > proof.txt", "--workspace", str(workspace), "--json"])

    assert not (workspace / "proof.txt").exists()
    assert run.returncode == 1
    result = events(run)[-1]
    assert result["type"] == "result" and result["outcome"] == "answered"
    assert [denial["name"] for denial in result["denied"]] == ["shell"]


def test_without_a_terminal_the_text_output_says_what_to_do(workspace: Path) -> None:
    run = run_bulkhead(["-p", "!shell echo ran > proof.txt", "--workspace", str(workspace)])

    assert run.returncode == 1
    assert "there was no terminal to ask: run it in a terminal to be asked, or pass --yes" in run.err


# -- item 2: mentions only from the typed prompt ---------------------------------------------------
def test_a_mention_in_piped_stdin_is_data(workspace: Path, outside_file: Path) -> None:
    run = run_bulkhead(
        ["-p", "summarize", "--workspace", str(workspace), "--json"],
        stdin=f"see @{outside_file} and @notes.txt\n".encode(),
    )

    assert run.returncode == 0, run.err
    kinds = [event["type"] for event in events(run)]
    assert "tool_call" not in kinds  # nothing attached, inside or outside the workspace
    assert SECRET not in run.out and SECRET not in run.err
    turn = next(event for event in events(run) if event["type"] == "turn_started")
    assert f"see @{outside_file} and @notes.txt" in turn["prompt"]  # the model gets the piped text as it is


def test_a_typed_mention_inside_the_workspace_is_attached(workspace: Path) -> None:
    run = run_bulkhead(["-p", "what is in @notes.txt", "--workspace", str(workspace), "--json"])

    assert run.returncode == 0, run.err
    approvals = [e for e in events(run) if e["type"] == "tool_approval"]
    assert [(a["name"], a["decision"]) for a in approvals] == [("read_file", "auto")]
    assert "inside the workspace" in events(run)[-1]["text"]


def test_a_typed_mention_outside_the_workspace_without_a_terminal_is_refused(
    workspace: Path, outside_file: Path
) -> None:
    run = run_bulkhead(["-p", f"summarize @{outside_file}", "--workspace", str(workspace)])

    assert run.returncode == 1
    assert SECRET not in run.out and SECRET not in run.err
    assert f"@{outside_file} is outside the workspace" in run.err
    assert "not attached — there is no terminal to ask" in run.err


@pytest.mark.parametrize("answer, attached", [("y", True), ("n", False)])
def test_a_typed_mention_outside_the_workspace_asks_on_the_terminal(
    workspace: Path, outside_file: Path, answer: str, attached: bool
) -> None:
    run = run_bulkhead(["-p", f"summarize @{outside_file}", "--workspace", str(workspace)], answers=[answer])

    assert run.questions == 1 and f"@{outside_file} is outside the workspace".encode() in run.tty
    assert (SECRET in run.out) is attached
    assert run.returncode == (0 if attached else 1), run.err


# -- issue 37, item 9: the question shows the whole command ------------------------------------------------
def test_the_terminal_question_shows_the_whole_command_padding_and_all(workspace: Path) -> None:
    padded = "echo ok" + " " * 400 + "; touch hidden-part.txt"
    call = json.dumps({"command": padded})
    run = run_bulkhead(["-p", f"!call shell {call}", "--workspace", str(workspace)], answers=["n"])

    assert run.questions == 1
    tty = run.tty.decode("utf-8", "replace")
    assert "⟨400 spaces⟩" in tty and "touch hidden-part.txt" in tty
    assert not (workspace / "hidden-part.txt").exists()
