"""Approvals: each mode, and paths outside the workspace always ask."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.tools.approval import denied_outcome, describe_call, needs_approval, target_paths

READS = {
    "read_file": {"path": "a.txt"},
    "list_dir": {"path": "."},
    "glob": {"pattern": "**/*.py"},
    "grep": {"pattern": "foo"},
    "recall": {"keys": "0123456789abcdef"},
}
EDITS = {
    "write_file": {"path": "a.txt", "content": "x"},
    "edit_file": {"path": "a.txt", "old_string": "x", "new_string": "y"},
}
SHELL = {"shell": {"command": "make test"}}
ALL = {**READS, **EDITS, **SHELL}

# mode -> the tools that run without asking (inside the workspace)
RUNS_WITHOUT_ASKING = {
    "ask": set(),
    "auto-read": set(READS),
    "auto-edit": set(READS) | set(EDITS),
    "never-ask": set(ALL),
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("x")
    return folder


@pytest.mark.parametrize("mode", list(RUNS_WITHOUT_ASKING))
@pytest.mark.parametrize("name", list(ALL))
def test_each_mode(ws: Path, mode: str, name: str) -> None:
    ask, reason = needs_approval(name, ALL[name], mode, ws)
    assert ask == (name not in RUNS_WITHOUT_ASKING[mode]), reason
    assert reason


def test_reasons_are_readable(ws: Path) -> None:
    assert needs_approval("shell", SHELL["shell"], "auto-read", ws) == (
        True,
        "shell runs a shell command (approval mode auto-read)",
    )
    assert needs_approval("write_file", EDITS["write_file"], "auto-read", ws) == (
        True,
        "write_file changes files (approval mode auto-read)",
    )
    assert needs_approval("read_file", READS["read_file"], "auto-read", ws) == (
        False,
        "read-only tool (approval mode auto-read)",
    )


@pytest.mark.parametrize("mode", list(RUNS_WITHOUT_ASKING))
@pytest.mark.parametrize(
    "name, args",
    [
        ("read_file", {"path": "/etc/hostname"}),
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": "sub/../../outside.txt"}),
        ("list_dir", {"path": ".."}),
        ("glob", {"pattern": "../*"}),
        ("glob", {"pattern": "*", "path": "/"}),
        ("glob", {"pattern": "*/../../*"}),
        ("grep", {"pattern": "x", "path": "/tmp"}),
        ("write_file", {"path": "../evil.sh", "content": "x"}),
        ("edit_file", {"path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
    ],
)
def test_paths_outside_the_workspace_always_ask(ws: Path, mode: str, name: str, args: dict) -> None:
    ask, reason = needs_approval(name, args, mode, ws)
    assert ask and "outside the workspace" in reason


@pytest.mark.parametrize("mode", ["auto-read", "never-ask"])
def test_a_symlink_pointing_out_asks(ws: Path, tmp_path: Path, mode: str) -> None:
    secret = tmp_path / "secrets"
    secret.mkdir()
    (secret / "key.pem").write_text("-----")
    (ws / "innocent").symlink_to(secret)
    (ws / "file-link").symlink_to(secret / "key.pem")
    for args in ({"path": "innocent/key.pem"}, {"path": "file-link"}):
        ask, reason = needs_approval("read_file", args, mode, ws)
        assert ask and f"resolves to {secret}" in reason
    ask, _ = needs_approval("list_dir", {"path": "innocent"}, mode, ws)
    assert ask


def test_tilde_outside_the_workspace_asks(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ask, reason = needs_approval("read_file", {"path": "~/.ssh/id_rsa"}, "never-ask", ws)
    assert ask and str(tmp_path / "home" / ".ssh" / "id_rsa") in reason


def test_dotdot_that_stays_inside_does_not_ask(ws: Path) -> None:
    (ws / "sub").mkdir()
    assert needs_approval("read_file", {"path": "sub/../a.txt"}, "auto-read", ws)[0] is False
    assert needs_approval("read_file", {"path": str(ws / "a.txt")}, "auto-read", ws)[0] is False
    assert (
        needs_approval("write_file", {"path": "new/dir/file.py", "content": ""}, "auto-edit", ws)[0] is False
    )


def test_a_workspace_reached_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    link = tmp_path / "ws-link"
    link.symlink_to(ws)
    assert needs_approval("read_file", {"path": "a.txt"}, "auto-read", link)[0] is False
    assert needs_approval("read_file", {"path": str(ws / "a.txt")}, "auto-read", link)[0] is False


def test_spill_folder_reads_are_allowed_but_writes_ask(ws: Path, tmp_path: Path) -> None:
    spill = tmp_path / "session" / "spill"
    spill.mkdir(parents=True)
    target = str(spill / "read_file-abc.txt")
    assert (
        needs_approval("read_file", {"path": target}, "auto-read", ws, extra_read_roots=[spill])[0] is False
    )
    assert (
        needs_approval("grep", {"pattern": "x", "path": target}, "auto-read", ws, extra_read_roots=[spill])[0]
        is False
    )
    assert (
        needs_approval(
            "write_file", {"path": target, "content": ""}, "never-ask", ws, extra_read_roots=[spill]
        )[0]
        is True
    )
    assert needs_approval("read_file", {"path": target}, "auto-read", ws)[0] is True


def test_unknown_tool_and_unknown_mode_ask(ws: Path) -> None:
    assert needs_approval("format_disk", {}, "never-ask", ws)[0] is True
    ask, reason = needs_approval("read_file", {"path": "a.txt"}, "yolo", ws)
    assert ask and "unknown approval mode 'yolo'" in reason


def test_bad_arguments_do_not_crash_approval(ws: Path) -> None:
    assert needs_approval("read_file", {"path": 42}, "auto-read", ws) == (
        False,
        "read-only tool (approval mode auto-read)",
    )
    assert target_paths("read_file", {}, ws) == []


def test_denied_outcomes_are_clear_tool_errors() -> None:
    user = denied_outcome("shell", "not on my machine")
    assert user.is_error and user.content.startswith("The user denied this shell call: not on my machine.")
    headless = denied_outcome("write_file", "write_file changes files", by="no_terminal")
    assert headless.is_error and headless.content.startswith("Not run:")
    assert "no terminal to ask for approval; rerun with --yes to allow tools" in headless.content
    hook = denied_outcome("shell", "rm is forbidden here", by="hook")
    assert hook.is_error and "PreToolUse hook" in hook.content and "rm is forbidden here" in hook.content


def test_describe_call(ws: Path) -> None:
    assert describe_call("shell", {"command": "make\ntest"}, ws) == "shell: make ⏎ test"
    assert (
        describe_call("write_file", {"path": "a.py", "content": "1\n2\n"}, ws) == "write_file a.py (2 lines)"
    )
    assert describe_call("read_file", {"path": "a.py"}, ws) == "read_file path='a.py'"
    assert len(describe_call("shell", {"command": "x" * 1000}, ws)) == len("shell: ") + 1000  # never cut


def test_what_is_approved_is_shown_whole_padding_included(ws: Path) -> None:
    """Issue 37, item 9: 300 spaces of padding cannot push `; touch …` out of the question."""
    padded = "npm test" + " " * 300 + "; touch ~/.bashrc_owned" + "\t" * 6 + "x"
    shown = describe_call("shell", {"command": padded}, ws)
    assert shown == "shell: npm test ⟨300 spaces⟩ ; touch ~/.bashrc_owned ⟨0 spaces, 6 tabs⟩ x"
    assert describe_call("shell", {"command": "a  b"}, ws) == "shell: a  b"  # short runs stay as typed
