"""The command line as peers' (issue 40 item 6): `bulkhead "prompt"`, slash commands under -p, --quiet,
no prefix matching."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from app.cli import build_parser, main, split_prompt
from app.store import Store


@pytest.fixture(autouse=True)
def _nothing_piped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))


def split(*argv: str) -> tuple[list[str], str]:
    return split_prompt(build_parser(), list(argv))


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_leading_prompt_opens_the_tui_with_it_and_flags_keep_their_values():
    assert split("fix the failing test") == ([], "fix the failing test")
    assert split("--route", "lab", "fix it", "-c") == (["--route", "lab", "-c"], "fix it")
    assert split("--approval=ask", "fix it") == (["--approval=ask"], "fix it")
    args = build_parser().parse_args(split("--route", "lab", "fix it")[0])
    assert args.route == "lab" and args.command is None and args.prompt is None


def test_a_sub_command_wins_and_double_dash_sends_its_name_as_a_prompt():
    assert split("sessions", "list") == (["sessions", "list"], "")
    assert split("--", "lab") == ([], "lab")
    assert split("-c", "--", "probe the gateway") == (["-c"], "probe the gateway")


def test_a_typo_of_a_command_and_an_unquoted_prompt_are_refused_with_what_to_type(capsys):
    code, out, err = run_cli(capsys, "sesions")
    assert code == 2 and "did you mean `bulkhead sessions`" in err and 'bulkhead -- "sesions"' in err
    code, out, err = run_cli(capsys, "fix", "the", "test")
    assert code == 2 and 'in quotes: bulkhead "fix the test"' in err


def test_p_takes_a_prompt_given_after_other_flags():
    argv, prompt = split("-p", "-c", "/compact")
    assert prompt == "" and build_parser().parse_args(argv).prompt == "/compact"
    assert split("-p", "hello", "-c") == (["-p", "hello", "-c"], "")


def test_no_prefix_matching_anywhere(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["classify", "--body", "x"])  # was taken for --body-file
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--contin"])  # was --continue
    capsys.readouterr()


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ("/nosuch", "/nosuch is not a command"),
        ("/model", "/model works in the full-screen chat"),
        ("/rewind", "/rewind compact is the one that runs"),
    ],
)
def test_p_refuses_slash_commands_it_cannot_run_and_sends_nothing(capsys, prompt, said):
    code, out, err = run_cli(capsys, "-p", prompt)
    assert code == 2 and said in err and out == "", err
    assert Store().list_sessions() == []  # nothing opened, nothing sent


def test_p_runs_rename_and_compact_on_this_folders_session(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "-p", "hello there")
    assert code == 0 and "hello there" in out
    code, out, err = run_cli(capsys, "-c", "-p", "/rename first try")
    assert code == 0 and "is now “first try”" in err and out == ""
    (row,) = Store().list_sessions()
    assert Store().find_session(row["id"]).title == "first try"
    code, out, err = run_cli(capsys, "-c", "-p", "/compact")
    assert code == 0 and "/compact" in err and out == ""
    assert "Esc cancels" not in err  # a TUI key: -p is stopped with Ctrl+C


def test_quiet_prints_the_answer_and_no_notices(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "-p", "--quiet", "hi")
    assert code == 0 and "hi" in out and err == ""
    code, out, err = run_cli(capsys, "-p", "hi")
    assert "lab model" in err  # the notice --quiet kept back


def test_an_empty_session_is_not_kept_and_a_renamed_one_is(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "-p", "/compact")  # a new session with nothing to compact
    assert code == 1 and "the session is empty" in err
    assert Store().list_sessions() == []
    code, out, err = run_cli(capsys, "-p", "/rename notes for later")
    assert code == 0 and [row["title"] for row in Store().list_sessions()] == ["notes for later"]


def test_a_resumed_session_whose_route_is_gone_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = Path(os.environ["BULKHEAD_CONFIG"])
    config.write_text('[routes.work]\nprovider = "lab"\nmodel = "lab-1"\n', encoding="utf-8")
    code, _out, err = run_cli(capsys, "-p", "first")
    assert code == 0 and "no longer has" not in err
    config.write_text('[routes.other]\nprovider = "lab"\nmodel = "lab-1"\n', encoding="utf-8")
    code, _out, err = run_cli(capsys, "-c", "-p", "second")
    assert code == 0 and "this session used route 'work', which config.toml no longer has" in err
    assert "goes on with 'other'" in err
