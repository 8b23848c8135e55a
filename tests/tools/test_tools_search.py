"""grep: ripgrep and the Python fallback give the same `path:line:text` output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from app.tools import search
from app.tools.base import ToolContext
from app.tools.registry import run_tool

HAVE_RG = shutil.which("rg") is not None
needs_rg = pytest.mark.skipif(not HAVE_RG, reason="ripgrep (rg) is not installed; CI installs it")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a").mkdir()
    (folder / "a" / "b.py").write_text("import os\nfoo = 1\nbar = foo\n")
    (folder / "a-b.py").write_text("foo\r\n")
    (folder / "a.py").write_text("xfoo\nnothing\n")
    (folder / "notes.md").write_text("# foo\n" + "y" * 900 + "foo\n")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "x.py").write_text("foo\n")
    (folder / "image.bin").write_bytes(b"foo\x00\x01\x02")
    return folder


@pytest.fixture
def ctx(ws: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=ws, session_folder=tmp_path / "session", result_max_chars=10_000_000)


@pytest.fixture(params=["rg", "python"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg":
        if not HAVE_RG:
            pytest.skip("ripgrep (rg) is not installed; CI installs it")
    else:
        monkeypatch.setattr(search, "USE_RIPGREP", False)  # force the fallback
    return request.param


async def _grep_both(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, **args: str) -> tuple[str, str]:
    assert search.ripgrep_path() is not None
    with_rg = await run_tool("grep", args, ctx)
    monkeypatch.setattr(search, "USE_RIPGREP", False)
    assert search.ripgrep_path() is None
    fallback = await run_tool("grep", args, ctx)
    assert with_rg.is_error == fallback.is_error
    return with_rg.content, fallback.content


EXPECTED_FOO = "\n".join(
    [
        "a/b.py:2:foo = 1",
        "a/b.py:3:bar = foo",
        "a-b.py:1:foo",
        "a.py:1:xfoo",
        "notes.md:1:# foo",
        "notes.md:2:" + "y" * 500 + " … [line cut: 903 chars]",
    ]
)


async def test_grep_output_shape(ctx: ToolContext, backend: str) -> None:
    outcome = await run_tool("grep", {"pattern": "foo"}, ctx)
    assert not outcome.is_error
    assert outcome.content == EXPECTED_FOO


@needs_rg
@pytest.mark.parametrize(
    "args",
    [
        {"pattern": "foo"},
        {"pattern": "foo", "glob": "*.py"},
        {"pattern": "foo", "glob": "!*.py"},
        {"pattern": "fo+", "path": "a"},
        {"pattern": "^bar", "path": "a/b.py"},
        {"pattern": "(?i)IMPORT"},
        {"pattern": "no such text"},
    ],
)
async def test_ripgrep_and_fallback_give_identical_output(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, args: dict[str, str]
) -> None:
    with_rg, fallback = await _grep_both(ctx, monkeypatch, **args)
    assert with_rg == fallback


@needs_rg
async def test_identical_output_outside_the_workspace(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "z.txt").write_text("needle\n")
    with_rg, fallback = await _grep_both(ctx, monkeypatch, pattern="needle", path=str(other))
    assert with_rg == fallback == f"{other}/z.txt:1:needle"


async def test_grep_glob_and_path(ctx: ToolContext, backend: str) -> None:
    only_py = await run_tool("grep", {"pattern": "foo", "glob": "*.py"}, ctx)
    assert [line.split(":")[0] for line in only_py.content.splitlines()] == [
        "a/b.py",
        "a/b.py",
        "a-b.py",
        "a.py",
    ]
    one_file = await run_tool("grep", {"pattern": "foo", "path": "a/b.py"}, ctx)
    assert one_file.content == "a/b.py:2:foo = 1\na/b.py:3:bar = foo"


async def test_grep_skips_hidden_and_binary_files(ctx: ToolContext, backend: str) -> None:
    outcome = await run_tool("grep", {"pattern": "foo"}, ctx)
    assert ".hidden" not in outcome.content and "image.bin" not in outcome.content


async def test_grep_invalid_regex_is_a_clear_error(ctx: ToolContext, backend: str) -> None:
    outcome = await run_tool("grep", {"pattern": "foo("}, ctx)
    assert outcome.is_error
    assert outcome.content.startswith("grep: invalid regular expression /foo(/")


async def test_grep_no_matches_is_not_an_error(ctx: ToolContext, backend: str) -> None:
    outcome = await run_tool("grep", {"pattern": "zzz"}, ctx)
    assert not outcome.is_error and outcome.content == "No matches for /zzz/ in the workspace"


async def test_grep_missing_path(ctx: ToolContext, backend: str) -> None:
    outcome = await run_tool("grep", {"pattern": "x", "path": "nope"}, ctx)
    assert outcome.is_error and "path not found: nope" in outcome.content


async def test_grep_caps_lines_with_a_note(
    ctx: ToolContext, ws: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MAX_MATCH_LINES", 3)
    (ws / "many.txt").write_text("hit\n" * 20)
    outcome = await run_tool("grep", {"pattern": "hit", "path": "many.txt"}, ctx)
    lines = outcome.content.splitlines()
    assert lines[:3] == ["many.txt:1:hit", "many.txt:2:hit", "many.txt:3:hit"]
    assert (
        lines[3] == "[… showing the first 3 of 20 matching lines; narrow the pattern, the path or the glob]"
    )


async def test_grep_stops_counting_at_the_limit(
    ctx: ToolContext, ws: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "MAX_MATCH_LINES", 2)
    monkeypatch.setattr(search, "MAX_COUNTED_LINES", 5)
    (ws / "many.txt").write_text("hit\n" * 50)
    outcome = await run_tool("grep", {"pattern": "hit", "path": "many.txt"}, ctx)
    assert "showing the first 2 of 5+ matching lines" in outcome.content


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
async def test_grep_honours_gitignore_in_a_repo(ctx: ToolContext, ws: Path, backend: str) -> None:
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("build/\n*.log\n")
    (ws / "build").mkdir()
    (ws / "build" / "out.txt").write_text("foo from a build\n")
    (ws / "a" / "trace.log").write_text("foo in a log\n")
    outcome = await run_tool("grep", {"pattern": "foo"}, ctx)
    assert outcome.content == EXPECTED_FOO  # neither the ignored folder nor the ignored file
    explicit = await run_tool("grep", {"pattern": "foo", "path": "build"}, ctx)
    assert explicit.content == "build/out.txt:1:foo from a build"  # asked for by name: searched


async def test_grep_outside_a_repo_ignores_nothing(ctx: ToolContext, ws: Path, backend: str) -> None:
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "trace.log").write_text("foo in a log\n")
    outcome = await run_tool("grep", {"pattern": "foo", "glob": "*.log"}, ctx)
    assert outcome.content == "trace.log:1:foo in a log"


# -- a repository cannot make the auto-approved grep run a program (issue 14, item 8) ----------------------
@pytest.fixture
def evil_repo(ws: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The workspace as a git repo with an ignored log; returns (script that touches a marker, marker)."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    script.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "a" / "trace.log").write_text("foo in a log\n")
    subprocess.run(["git", "-C", str(ws), "add", "-A"], check=True)
    return script, marker


@needs_git
@pytest.mark.parametrize("source", ["repository config", "parent environment"])
async def test_grep_fallback_never_runs_core_fsmonitor(
    ctx: ToolContext, ws: Path, evil_repo, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    script, marker = evil_repo
    monkeypatch.setattr(search, "USE_RIPGREP", False)
    if source == "repository config":
        subprocess.run(["git", "-C", str(ws), "config", "core.fsmonitor", str(script)], check=True)
    else:
        for name, value in (
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
            ("GIT_CONFIG_VALUE_0", str(script)),
        ):
            monkeypatch.setenv(name, value)
    # the setup is armed: plain git runs the script (so this test fails where bulkhead would)
    subprocess.run(
        ["git", "-C", str(ws), "ls-files", "--others", "--ignored", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    assert marker.exists(), "this git does not run core.fsmonitor on ls-files (git 2.16+ does)"
    marker.unlink()

    outcome = await run_tool("grep", {"pattern": "foo"}, ctx)

    assert not marker.exists(), f"core.fsmonitor from the {source} ran"
    assert outcome.content == EXPECTED_FOO  # and .gitignore is still honoured


def test_git_command_neutralises_configured_programs_and_env() -> None:
    from app.tools.gitsafe import git_command, git_env

    command = git_command("git", "status")
    assert command[:3] == ["git", "--no-pager", "--no-optional-locks"] and command[-1] == "status"
    for setting in ("core.fsmonitor=false", "core.hooksPath=/dev/null", "diff.external="):
        assert command[command.index(setting) - 1] == "-c"
    env = git_env({"GIT_DIR": "/elsewhere", "GIT_CONFIG_PARAMETERS": "'core.fsmonitor=x'", "PATH": "/bin"})
    assert "GIT_DIR" not in env and "GIT_CONFIG_PARAMETERS" not in env and env["PATH"] == "/bin"
