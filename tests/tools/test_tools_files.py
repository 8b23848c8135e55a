"""read_file, list_dir, glob, write_file, edit_file — and run_tool's argument handling."""

from __future__ import annotations

import os
from pathlib import Path

import jsonschema
import pytest

from app.tools import files
from app.tools.base import ToolContext
from app.tools.registry import TOOL_SPECS, TOOLS, run_tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def ctx(ws: Path, tmp_path: Path) -> ToolContext:
    # A large budget: these tests look at the tools' own output, not at budget cuts.
    return ToolContext(workspace=ws, session_folder=tmp_path / "session", result_max_chars=10_000_000)


# -- specs and arguments ---------------------------------------------------------------------------
def test_every_spec_is_a_valid_json_schema_with_a_description() -> None:
    assert [spec.name for spec in TOOL_SPECS] == list(TOOLS)
    assert set(TOOLS) == {
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "web_fetch",
        "shell",
        "write_file",
        "edit_file",
        "recall",
    }
    for spec in TOOL_SPECS:
        jsonschema.Draft202012Validator.check_schema(dict(spec.input_schema))
        assert spec.description and spec.input_schema["type"] == "object"


async def test_unknown_tool_is_an_error_naming_the_tools(ctx: ToolContext) -> None:
    outcome = await run_tool("rm_rf", {}, ctx)
    assert outcome.is_error and "Unknown tool 'rm_rf'" in outcome.content and "read_file" in outcome.content


async def test_missing_and_mistyped_arguments_are_errors(ctx: ToolContext) -> None:
    missing = await run_tool("read_file", {}, ctx)
    assert missing.is_error and "missing required argument: path" in missing.content
    wrong = await run_tool("read_file", {"path": 3}, ctx)
    assert wrong.is_error and "path must be a string" in wrong.content
    unknown = await run_tool("read_file", {"path": "x", "file": "y"}, ctx)
    assert unknown.is_error and "unknown argument 'file'" in unknown.content
    not_a_dict = await run_tool("read_file", ["x"], ctx)  # type: ignore[arg-type]
    assert not_a_dict.is_error and "JSON object" in not_a_dict.content


async def test_numbers_sent_as_strings_are_accepted(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    outcome = await run_tool("read_file", {"path": "a.txt", "offset": "2", "limit": "1"}, ctx)
    assert not outcome.is_error
    assert outcome.content.splitlines()[0] == "     2\ttwo"


async def test_a_bug_in_a_tool_becomes_an_error_outcome(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: dict, ctx: ToolContext) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(files, "_list_dir", broken)
    outcome = await run_tool("list_dir", {}, ctx)
    assert outcome.is_error and "RuntimeError: boom" in outcome.content


# -- read_file -------------------------------------------------------------------------------------
async def test_read_file_numbers_lines_and_notes_the_total(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.py").write_text("import os\n\nprint(os.sep)\n")
    outcome = await run_tool("read_file", {"path": "a.py"}, ctx)
    assert not outcome.is_error
    assert outcome.content == (
        "     1\timport os\n     2\t\n     3\tprint(os.sep)\n[3 lines, the whole file (25 B)]"
    )


async def test_read_file_range_says_how_to_read_further(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    outcome = await run_tool("read_file", {"path": "a.txt", "offset": 10, "limit": 5}, ctx)
    lines = outcome.content.splitlines()
    assert lines[:5] == [f"{n:>6}\tline {n}" for n in range(10, 15)]
    assert "lines 10–14 of 100" in lines[-1] and "offset=15" in lines[-1]


async def test_read_file_last_line_without_newline(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb")
    outcome = await run_tool("read_file", {"path": "a.txt"}, ctx)
    assert outcome.content.startswith("     1\ta\n     2\tb\n[2 lines, the whole file")


async def test_read_file_missing_file_suggests_close_names(ctx: ToolContext, ws: Path) -> None:
    (ws / "config.toml").write_text("x = 1\n")
    outcome = await run_tool("read_file", {"path": "confg.toml"}, ctx)
    assert outcome.is_error
    assert "file not found: confg.toml" in outcome.content and "config.toml" in outcome.content


async def test_read_file_missing_folder(ctx: ToolContext) -> None:
    outcome = await run_tool("read_file", {"path": "nowhere/x.txt"}, ctx)
    assert outcome.is_error and "file not found" in outcome.content


async def test_read_file_directory_given_as_file(ctx: ToolContext, ws: Path) -> None:
    (ws / "src").mkdir()
    outcome = await run_tool("read_file", {"path": "src"}, ctx)
    assert outcome.is_error and "src is a directory" in outcome.content and "list_dir" in outcome.content


async def test_read_file_binary_file_says_so_with_its_size(ctx: ToolContext, ws: Path) -> None:
    (ws / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    outcome = await run_tool("read_file", {"path": "logo.png"}, ctx)
    assert outcome.is_error
    assert "binary file" in outcome.content and "2,064 bytes" in outcome.content


async def test_read_file_undecodable_bytes_without_nul_are_binary(ctx: ToolContext, ws: Path) -> None:
    (ws / "blob.bin").write_bytes(bytes(range(128, 256)) * 40)
    outcome = await run_tool("read_file", {"path": "blob.bin"}, ctx)
    assert outcome.is_error and "binary file" in outcome.content and "5,120 bytes" in outcome.content


async def test_read_file_invalid_utf8_is_decoded_with_replacement_and_said(
    ctx: ToolContext, ws: Path
) -> None:
    (ws / "latin1.txt").write_bytes("café\nnaïve\nplain\n".encode("latin-1"))
    outcome = await run_tool("read_file", {"path": "latin1.txt"}, ctx)
    assert not outcome.is_error
    assert "     1\tcaf\ufffd" in outcome.content and "     3\tplain" in outcome.content
    assert "not valid UTF-8: 2 lines decoded with U+FFFD" in outcome.content


async def test_read_file_huge_file_by_lines_returns_first_chunk(ctx: ToolContext, ws: Path) -> None:
    (ws / "big.log").write_text("".join(f"entry {n}\n" for n in range(1, 3501)))
    outcome = await run_tool("read_file", {"path": "big.log"}, ctx)
    assert not outcome.is_error
    lines = outcome.content.splitlines()
    assert lines[0] == "     1\tentry 1" and lines[1999] == "  2000\tentry 2000" and len(lines) == 2001
    assert "lines 1–2,000 of 3,500" in lines[-1]
    assert "large file" in lines[-1] and "offset=2001" in lines[-1]


async def test_read_file_huge_file_by_bytes_returns_first_chunk(ctx: ToolContext, ws: Path) -> None:
    line = "x" * 999 + "\n"  # 1000 bytes a line; 400 lines = 400 KB > 256 KB
    (ws / "wide.txt").write_text(line * 400)
    outcome = await run_tool("read_file", {"path": "wide.txt"}, ctx)
    shown = [ln for ln in outcome.content.splitlines() if "\t" in ln]
    assert len(shown) == 262  # 262 * 1000 bytes ≤ 256 KiB
    assert "of 400" in outcome.content and "large file" in outcome.content and "offset=263" in outcome.content
    ranged = await run_tool("read_file", {"path": "wide.txt", "offset": 1, "limit": 400}, ctx)
    assert len([ln for ln in ranged.content.splitlines() if "\t" in ln]) == 400
    assert "400 lines, the whole file" in ranged.content


async def test_read_file_cuts_very_long_lines(ctx: ToolContext, ws: Path) -> None:
    (ws / "min.js").write_text("a" * 50_000 + "\nshort\n")
    outcome = await run_tool("read_file", {"path": "min.js"}, ctx)
    first, second = outcome.content.splitlines()[:2]
    assert first.startswith("     1\t" + "a" * 2000 + " … [line cut: 50,001 bytes]")
    assert second == "     2\tshort"
    assert "1 line longer than 2,000 chars cut" in outcome.content


async def test_read_file_offset_past_the_end_is_an_error(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("1\n2\n")
    outcome = await run_tool("read_file", {"path": "a.txt", "offset": 9}, ctx)
    assert outcome.is_error and "has 2 lines; offset 9 is past the end" in outcome.content


async def test_read_file_empty_file(ctx: ToolContext, ws: Path) -> None:
    (ws / "empty").write_text("")
    outcome = await run_tool("read_file", {"path": "empty"}, ctx)
    assert not outcome.is_error and "empty: 0 lines" in outcome.content


async def test_read_file_crlf_is_noted(ctx: ToolContext, ws: Path) -> None:
    (ws / "dos.txt").write_bytes(b"a\r\nb\r\n")
    outcome = await run_tool("read_file", {"path": "dos.txt"}, ctx)
    assert outcome.content.startswith("     1\ta\n     2\tb\n") and "CRLF" in outcome.content


async def test_relative_paths_resolve_against_the_workspace(
    ctx: ToolContext, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.txt").write_text("wrong\n")
    (ws / "a.txt").write_text("right\n")
    monkeypatch.chdir(elsewhere)
    outcome = await run_tool("read_file", {"path": "a.txt"}, ctx)
    assert "right" in outcome.content


async def test_tilde_expands_to_home(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-dir"
    home.mkdir()
    (home / "notes.txt").write_text("from home\n")
    monkeypatch.setenv("HOME", str(home))
    outcome = await run_tool("read_file", {"path": "~/notes.txt"}, ctx)
    assert not outcome.is_error and "from home" in outcome.content


# -- list_dir --------------------------------------------------------------------------------------
async def test_list_dir_dirs_first_with_slash_then_files_with_sizes(ctx: ToolContext, ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "docs").mkdir()
    (ws / "b.txt").write_text("x" * 2048)
    (ws / "a.txt").write_text("hi")
    outcome = await run_tool("list_dir", {}, ctx)
    assert not outcome.is_error
    assert outcome.content.splitlines()[1:] == ["docs/", "src/", "a.txt  2 B", "b.txt  2.0 KB"]
    assert "4 entries (2 dirs, 2 files)" in outcome.content.splitlines()[0]


async def test_list_dir_shows_symlinks_and_subfolders(ctx: ToolContext, ws: Path) -> None:
    (ws / "pkg").mkdir()
    (ws / "pkg" / "mod.py").write_text("")
    (ws / "link").symlink_to(ws / "pkg")
    outcome = await run_tool("list_dir", {"path": "pkg"}, ctx)
    assert outcome.content.splitlines()[1:] == ["mod.py  0 B"]
    top = await run_tool("list_dir", {"path": "."}, ctx)
    assert f"link/ -> {ws / 'pkg'}" in top.content


async def test_list_dir_caps_entries_with_a_note(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "LIST_MAX_ENTRIES", 5)
    for n in range(12):
        (ws / f"f{n:02}.txt").write_text("")
    outcome = await run_tool("list_dir", {}, ctx)
    lines = outcome.content.splitlines()
    assert lines[1:6] == [f"f{n:02}.txt  0 B" for n in range(5)]
    assert "7 more entries not shown" in lines[-1]


async def test_list_dir_errors(ctx: ToolContext, ws: Path) -> None:
    (ws / "a.txt").write_text("")
    not_dir = await run_tool("list_dir", {"path": "a.txt"}, ctx)
    assert not_dir.is_error and "not a directory" in not_dir.content and "read_file" in not_dir.content
    missing = await run_tool("list_dir", {"path": "nope"}, ctx)
    assert missing.is_error and "not found" in missing.content


# -- glob ------------------------------------------------------------------------------------------
def _touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    os.utime(path, (mtime, mtime))


async def test_glob_newest_first_recursive(ctx: ToolContext, ws: Path) -> None:
    _touch(ws / "a.py", 1_000)
    _touch(ws / "pkg" / "b.py", 3_000)
    _touch(ws / "pkg" / "deep" / "c.py", 2_000)
    _touch(ws / "notes.md", 4_000)
    _touch(ws / ".git" / "hooks.py", 5_000)
    outcome = await run_tool("glob", {"pattern": "**/*.py"}, ctx)
    assert outcome.content.splitlines() == ["pkg/b.py", "pkg/deep/c.py", "a.py"]


async def test_glob_under_a_path_and_absolute_patterns(ctx: ToolContext, ws: Path) -> None:
    _touch(ws / "pkg" / "b.py", 1)
    _touch(ws / "pkg" / "c.txt", 2)
    under = await run_tool("glob", {"pattern": "*.py", "path": "pkg"}, ctx)
    assert under.content == "pkg/b.py"
    absolute = await run_tool("glob", {"pattern": f"{ws}/pkg/*.txt"}, ctx)
    assert absolute.content == "pkg/c.txt"


async def test_glob_caps_results_with_a_note(
    ctx: ToolContext, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files, "GLOB_MAX_RESULTS", 3)
    for n in range(10):
        _touch(ws / f"f{n}.txt", 1_000 + n)
    outcome = await run_tool("glob", {"pattern": "*.txt"}, ctx)
    assert outcome.content.splitlines()[:3] == ["f9.txt", "f8.txt", "f7.txt"]
    assert "7 more matches not shown" in outcome.content


async def test_glob_no_match_and_bad_root(ctx: ToolContext, ws: Path) -> None:
    none = await run_tool("glob", {"pattern": "*.rs"}, ctx)
    assert not none.is_error and "No files match *.rs" in none.content
    (ws / "f.txt").write_text("")
    bad = await run_tool("glob", {"pattern": "*", "path": "f.txt"}, ctx)
    assert bad.is_error and "not a directory" in bad.content


def test_split_glob() -> None:
    assert files.split_glob("../src/**/*.py") == ("../src", "**/*.py")
    assert files.split_glob("/etc/*.conf") == ("/etc", "*.conf")
    assert files.split_glob("**/*.py") == (".", "**/*.py")
    assert files.split_glob("a/*/../../x") == ("a/*/../..", "x")


# -- write_file ------------------------------------------------------------------------------------
async def test_write_file_creates_parents_and_counts_lines(ctx: ToolContext, ws: Path) -> None:
    outcome = await run_tool("write_file", {"path": "new/deep/mod.py", "content": "a = 1\nb = 2\n"}, ctx)
    assert not outcome.is_error
    assert outcome.content == "Created new/deep/mod.py: 2 lines (12 bytes)"
    assert (ws / "new" / "deep" / "mod.py").read_text() == "a = 1\nb = 2\n"


async def test_write_file_overwrite_returns_a_unified_diff(ctx: ToolContext, ws: Path) -> None:
    (ws / "mod.py").write_text("a = 1\nb = 2\nc = 3\n")
    outcome = await run_tool("write_file", {"path": "mod.py", "content": "a = 1\nb = 20\nc = 3\n"}, ctx)
    assert outcome.content == (
        "Updated mod.py (+1 −1 lines)\n"
        "--- a/mod.py\n+++ b/mod.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n"
    )
    same = await run_tool("write_file", {"path": "mod.py", "content": "a = 1\nb = 20\nc = 3\n"}, ctx)
    assert same.content.startswith("No changes")


async def test_write_file_keeps_content_exactly(ctx: ToolContext, ws: Path) -> None:
    content = "crlf\r\nno newline at end é"
    await run_tool("write_file", {"path": "x.txt", "content": content}, ctx)
    assert (ws / "x.txt").read_bytes() == content.encode("utf-8")


async def test_write_file_onto_a_directory_is_an_error(ctx: ToolContext, ws: Path) -> None:
    (ws / "d").mkdir()
    outcome = await run_tool("write_file", {"path": "d", "content": "x"}, ctx)
    assert outcome.is_error and "directory" in outcome.content


# -- edit_file -------------------------------------------------------------------------------------
async def test_edit_file_replaces_a_unique_string_with_a_diff(ctx: ToolContext, ws: Path) -> None:
    (ws / "app.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    outcome = await run_tool(
        "edit_file", {"path": "app.py", "old_string": "return 2", "new_string": "return 3"}, ctx
    )
    assert not outcome.is_error
    assert outcome.content.startswith(
        "Edited app.py: 1 replacement (+1 −1 lines)\n--- a/app.py\n+++ b/app.py\n"
    )
    assert "-    return 2\n+    return 3\n" in outcome.content
    assert (ws / "app.py").read_text() == "def f():\n    return 1\n\ndef g():\n    return 3\n"


async def test_edit_file_absent_string_fails_clearly_and_changes_nothing(ctx: ToolContext, ws: Path) -> None:
    (ws / "app.py").write_text("x = 1\n")
    outcome = await run_tool(
        "edit_file", {"path": "app.py", "old_string": "y = 1", "new_string": "y = 2"}, ctx
    )
    assert outcome.is_error and "old_string was not found in app.py" in outcome.content
    assert (ws / "app.py").read_text() == "x = 1\n"


async def test_edit_file_whitespace_hint(ctx: ToolContext, ws: Path) -> None:
    (ws / "app.py").write_text("a\n    value = 1\n")
    outcome = await run_tool(
        "edit_file", {"path": "app.py", "old_string": "value = 1\n\n", "new_string": "value = 2"}, ctx
    )
    assert outcome.is_error and "at line 2" in outcome.content


async def test_edit_file_ambiguous_string_says_how_many_times(ctx: ToolContext, ws: Path) -> None:
    (ws / "app.py").write_text("x = 1\ny = 1\nz = 1\n")
    outcome = await run_tool("edit_file", {"path": "app.py", "old_string": "= 1", "new_string": "= 2"}, ctx)
    assert outcome.is_error
    assert (
        "appears 3 times in app.py (at lines 1, 2, 3)" in outcome.content and "replace_all" in outcome.content
    )
    assert (ws / "app.py").read_text() == "x = 1\ny = 1\nz = 1\n"


async def test_edit_file_replace_all(ctx: ToolContext, ws: Path) -> None:
    (ws / "app.py").write_text("x = 1\ny = 1\n")
    outcome = await run_tool(
        "edit_file", {"path": "app.py", "old_string": "= 1", "new_string": "= 2", "replace_all": True}, ctx
    )
    assert not outcome.is_error and "2 replacements (+2 −2 lines)" in outcome.content
    assert (ws / "app.py").read_text() == "x = 2\ny = 2\n"


async def test_edit_file_errors(ctx: ToolContext, ws: Path) -> None:
    missing = await run_tool("edit_file", {"path": "nope.py", "old_string": "a", "new_string": "b"}, ctx)
    assert missing.is_error and "not found" in missing.content and "write_file" in missing.content
    (ws / "a.py").write_text("a\n")
    empty = await run_tool("edit_file", {"path": "a.py", "old_string": "", "new_string": "b"}, ctx)
    assert empty.is_error and "old_string is empty" in empty.content
    same = await run_tool("edit_file", {"path": "a.py", "old_string": "a", "new_string": "a"}, ctx)
    assert same.is_error and "identical" in same.content
    (ws / "bad.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    latin = await run_tool("edit_file", {"path": "bad.txt", "old_string": "caf", "new_string": "cof"}, ctx)
    assert latin.is_error and "not valid UTF-8" in latin.content
    assert (ws / "bad.txt").read_bytes() == b"caf\xe9\n"


async def test_edit_file_adapts_to_crlf_files(ctx: ToolContext, ws: Path) -> None:
    (ws / "dos.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    outcome = await run_tool(
        "edit_file", {"path": "dos.txt", "old_string": "one\ntwo", "new_string": "one\n2"}, ctx
    )
    assert not outcome.is_error
    assert (ws / "dos.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


# -- glob stays in the workspace (issue 14, item 9) ---------------------------------------------------------
async def test_glob_does_not_walk_through_a_symlinked_folder_out_of_the_workspace(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print()\n")
    (ws / "escape").symlink_to(outside)
    (ws / "inner").symlink_to(ws / "src")  # a link that stays inside is fine

    outcome = await run_tool("glob", {"pattern": "*/*"}, ctx)

    assert "secret.txt" not in outcome.content
    assert "src/main.py" in outcome.content and "inner/main.py" in outcome.content
    assert (
        f"1 matches behind symlinked folders that lead outside the workspace are not listed (escape/ -> {outside})"
        in outcome.content
    )
    everything = await run_tool("glob", {"pattern": "**/*.txt"}, ctx)
    assert "secret.txt" not in everything.content


async def test_glob_of_the_linked_folder_itself_lists_it_once_approved(
    ctx: ToolContext, ws: Path, tmp_path: Path
) -> None:
    from app.tools.approval import needs_approval

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    (ws / "escape").symlink_to(outside)
    ask, why = needs_approval("glob", {"pattern": "escape/*"}, "auto-read", ws)
    assert ask and "outside the workspace" in why

    outcome = await run_tool("glob", {"pattern": "escape/*"}, ctx)  # what runs after the user said yes

    assert outcome.content == "escape/secret.txt"
