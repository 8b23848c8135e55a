"""`bulkhead -p` and stdin: piped stdin with no prompt is the prompt, `-p -` means stdin, the answer of a
turn with tool calls keeps its messages apart (text and --json), and the TUI's exit hint says how to
resume."""

from __future__ import annotations

import json

import pytest

from app.engine.turn import ANSWER_SEPARATOR, join_answers
from app.ui.run import exit_hint
from tests.engine.test_oneshot import _run


@pytest.mark.parametrize("args", [["-p"], ["-p", "-"], ["--json", "-p"], ["-p", "-", "--json"]])
def test_piped_stdin_is_the_prompt(args):
    done = _run(*args, stdin="what is in this pipe?\n")
    assert done.returncode == 0, done.stderr
    if "--json" in args:
        result = json.loads(done.stdout.splitlines()[-1])
        assert "You said: “what is in this pipe?”" in result["text"]
    else:
        assert "You said: “what is in this pipe?”" in done.stdout
    assert "expected one argument" not in done.stderr


def test_no_prompt_and_nothing_piped_says_how():
    done = _run("-p", stdin="")
    assert done.returncode == 2
    assert "nothing to ask" in done.stderr and "| bulkhead -p" in done.stderr


def test_a_prompt_and_piped_stdin_are_joined():
    done = _run("-p", "summarise", stdin="the piped log\n")
    assert (
        done.returncode == 0 and "You said: “summarise the piped log”" in done.stdout
    )  # (the lab folds spaces)


def test_the_messages_of_a_turn_with_a_tool_call_stay_apart(tmp_path):
    (tmp_path / "notes.txt").write_text("first line of the notes\n")
    text = _run("-p", "!read notes.txt", "--workspace", str(tmp_path))
    assert text.returncode == 0, text.stderr
    assert "calling read_file.\n\nLab model · turn 1 · received 1 tool result:" in text.stdout
    as_json = _run("-p", "!read notes.txt", "--json", "--workspace", str(tmp_path))
    result = json.loads(as_json.stdout.splitlines()[-1])
    assert "calling read_file.\n\nLab model · turn 1 · received 1 tool result:" in result["text"]


def test_join_answers():
    assert join_answers(["one message\n"]) == "one message\n"  # a single message is kept as it is
    assert join_answers(["calling x.\n", "", "result.\n"]) == f"calling x.{ANSWER_SEPARATOR}result."
    assert join_answers([]) == ""


def test_exit_hint_says_resume_with_bulkhead_c():
    assert exit_hint(("s_abc", 4)) == (
        "bulkhead: session s_abc kept (4 messages) — resume with bulkhead -c (or bulkhead --resume s_abc)"
    )
    assert exit_hint(("s_abc", 0)) == "" and exit_hint(None) == ""
