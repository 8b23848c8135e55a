"""The workspace's file list for fuzzy `@` completion: git's view (nothing ignored), a walk elsewhere,
and the ranking — name matches first, then recent, shallow, short."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from app.engine.file_index import FileIndex, FuzzyPaths, build_file_index, static_order

NOW = 1_800_000_000.0
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def touch(root: Path, relative: str, mtime: float = NOW - 30 * 86400) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n")
    os.utime(path, (mtime, mtime))


def tree(base: Path) -> Path:
    root = base / "repo"  # not the test's own folder (it holds the test's empty config.toml)
    for relative in (
        "app/cli.py",
        "app/config.py",
        "app/ui/app.py",
        "README.md",
        "tests/test_cli.py",
        "app/__pycache__/cli.cpython-311.pyc",
        "node_modules/left-pad/index.js",
        "build/out.log",
        ".github/workflows/ci.yml",
    ):
        touch(root, relative)
    (root / ".gitignore").write_text("__pycache__/\nbuild/\nnode_modules/\n")
    return root


def matcher(paths: dict[str, float]) -> FuzzyPaths:
    return FuzzyPaths(FileIndex(Path("/w"), tuple(static_order(paths, NOW)), NOW, "walk"))


@needs_git
def test_git_lists_what_git_does_not_ignore(tmp_path: Path) -> None:
    root = tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(
        ["git", "-C", str(root), "add", "app/cli.py"], check=True
    )  # one tracked, the rest untracked
    index = build_file_index(root, now=lambda: NOW)
    assert index.source == "git"
    assert set(index.paths) == {
        "app/cli.py",
        "app/config.py",
        "app/ui/app.py",
        "README.md",
        "tests/test_cli.py",
        ".gitignore",
        ".github/workflows/ci.yml",
        "app/",
        "app/ui/",
        "tests/",
        ".github/",
        ".github/workflows/",
    }
    assert not [p for p in index.paths if "__pycache__" in p or "node_modules" in p or p.startswith("build")]


def test_outside_git_the_walk_skips_generated_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tree(tmp_path)
    monkeypatch.setattr("app.tools.gitsafe.shutil.which", lambda name: None)  # as on a machine without git
    index = build_file_index(root, now=lambda: NOW)
    assert index.source == "walk" and index.files == 8  # build/out.log stays: no git, no .gitignore rules
    assert "app/cli.py" in index.paths and "app/" in index.paths
    assert not [p for p in index.paths if "__pycache__" in p or "node_modules" in p]


def test_max_files_truncates_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.tools.gitsafe.shutil.which", lambda name: None)
    for n in range(30):
        touch(tmp_path / "repo", f"f{n}.txt")
    index = build_file_index(tmp_path / "repo", max_files=10, now=lambda: NOW)
    assert index.truncated and index.files == 10


def test_fuzzy_finds_letters_in_order() -> None:
    fz = matcher(
        {
            "app/cli.py": NOW - 9e6,
            "app/client_component.py": NOW - 9e6,
            "docs/clipboard.md": NOW - 9e6,
            "lib/config.py": NOW - 9e6,
        }
    )
    assert fz.complete("clipy")[0] == ("app/cli.py", False)
    assert fz.complete("CLIPY")[0] == ("app/cli.py", False)  # case does not matter
    assert fz.complete("appcli")[0] == ("app/cli.py", False)  # across the path
    assert fz.complete("zzz") == []


def test_name_matches_rank_before_path_matches_and_exact_names_first() -> None:
    old = NOW - 9e6
    fz = matcher(
        {
            "src/parser/lexer.py": old,
            "src/parser.py": old,
            "deep/a/b/c/parser_test.py": old,
            "tools/myparser.py": old,
        }
    )
    ranked = [path for path, _ in fz.complete("parser")]
    assert ranked[:3] == ["src/parser.py", "deep/a/b/c/parser_test.py", "tools/myparser.py"]
    assert ranked[3] == "src/parser/lexer.py"  # only in its path


def test_recent_files_then_shallow_ones_come_first() -> None:
    old = NOW - 200 * 86400
    paths = {f"pkg{n}/module{n}/handler.py": old for n in range(50)}
    paths["handler.py"] = old  # shallow
    paths["pkg7/module7/sub/handler.py"] = NOW - 60  # edited a minute ago
    ranked = [path for path, _ in matcher(paths).complete("handler")]
    assert ranked[:2] == ["pkg7/module7/sub/handler.py", "handler.py"]
    # a bare @ lists the recent and shallow ones
    assert matcher(paths).complete("")[0][0] == "pkg7/module7/sub/handler.py"


def test_typing_on_narrows_from_the_previous_keystroke() -> None:
    fz = matcher({f"pkg/file{n}.py": NOW - 9e6 for n in range(2000)} | {"app/cli.py": NOW - 9e6})
    results = [fz.complete("clipy"[:n]) for n in range(1, 6)]
    assert results[-1][0] == ("app/cli.py", False)
    fz2 = matcher({f"pkg/file{n}.py": NOW - 9e6 for n in range(2000)} | {"app/cli.py": NOW - 9e6})
    assert fz2.complete("clipy") == results[-1]  # the same answer without the narrowing
    assert fz.complete("cl")[0][0] == fz2.complete("cl")[0][0]  # backspace starts afresh


# -- issue 37, item 6: typing `@` runs nothing the repository configured ----------------------------------
@needs_git
def test_listing_the_files_never_runs_the_repositorys_fsmonitor(tmp_path: Path) -> None:
    root = tree(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    script.chmod(0o755)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "config", "core.fsmonitor", str(script)], check=True)
    subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, check=False)
    assert marker.exists(), "this git does not run core.fsmonitor on ls-files (git 2.16+ does)"
    marker.unlink()

    index = build_file_index(root)

    assert index.source == "git" and "app/cli.py" in index.paths
    assert not marker.exists(), "core.fsmonitor ran while listing the files for @ completion"
