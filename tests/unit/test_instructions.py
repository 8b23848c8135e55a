"""Project instructions: which AGENTS.md / CLAUDE.md are read, in what order, and Claude Code's import rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.instructions import (
    MAX_IMPORT_DEPTH,
    append_memory,
    import_paths,
    load_instructions,
    memory_file,
    project_root,
)
from app.engine.payload import FloorPart, diagnose_floor, floor_breakdown

KB = 1024


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "services" / "api").mkdir(parents=True)
    return root


def load(workspace: Path, global_dir: Path, max_bytes: int = 256 * KB):
    return load_instructions(workspace, max_bytes=max_bytes, global_dir=global_dir)


def test_global_then_root_then_each_folder_down_to_the_workspace(repo: Path, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("GLOBAL-MARK\n")
    (repo / "AGENTS.md").write_text("ROOT-AGENTS\n")
    (repo / "CLAUDE.md").write_text("ROOT-CLAUDE\n")
    (repo / "services" / "CLAUDE.md").write_text("SERVICES\n")
    (repo / "services" / "api" / "AGENTS.md").write_text("API\n")

    loaded = load(repo / "services" / "api", config)

    order = [
        loaded.text.index(mark) for mark in ("GLOBAL-MARK", "ROOT-AGENTS", "ROOT-CLAUDE", "SERVICES", "API")
    ]
    assert order == sorted(order)
    assert [f.scope for f in loaded.files] == ["global", "project", "project", "project", "project"]
    assert loaded.files[1].bytes == len("ROOT-AGENTS\n")


def test_outside_a_repository_only_the_workspace_counts(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("PARENT\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("HERE\n")
    assert project_root(workspace) == workspace.resolve()
    loaded = load(workspace, tmp_path / "nowhere")
    assert "HERE" in loaded.text and "PARENT" not in loaded.text


def test_nothing_to_read_means_no_text(repo: Path, tmp_path: Path) -> None:
    loaded = load(repo, tmp_path / "nowhere")
    assert loaded.text == "" and loaded.files == ()


def test_imports_are_relative_to_the_importing_file_and_nest(repo: Path, tmp_path: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "style.md").write_text("STYLE see @./more/naming.md\n")
    (repo / "docs" / "more").mkdir()
    (repo / "docs" / "more" / "naming.md").write_text("NAMING\n")
    (repo / "AGENTS.md").write_text("Read @docs/style.md before you start.\n")

    loaded = load(repo, tmp_path / "nowhere")

    assert "STYLE" in loaded.text and "NAMING" in loaded.text
    imported = [f for f in loaded.files if f.scope == "import"]
    assert [f.path.name for f in imported] == ["style.md", "naming.md"]
    assert imported[0].imported_by == repo / "AGENTS.md"


def test_imports_stop_after_five_hops(repo: Path, tmp_path: Path) -> None:
    for level in range(1, MAX_IMPORT_DEPTH + 3):
        (repo / f"l{level}.md").write_text(f"LEVEL-{level} @l{level + 1}.md\n")
    (repo / "AGENTS.md").write_text("@l1.md\n")

    loaded = load(repo, tmp_path / "nowhere")

    assert f"LEVEL-{MAX_IMPORT_DEPTH}" in loaded.text
    assert f"LEVEL-{MAX_IMPORT_DEPTH + 1}" not in loaded.text
    assert any("5 imports deep" in problem for problem in loaded.problems)


def test_imports_inside_code_spans_and_fences_are_text(repo: Path, tmp_path: Path) -> None:
    (repo / "secret.md").write_text("SHOULD-NOT-LOAD\n")
    (repo / "AGENTS.md").write_text(
        "Use `@secret.md` literally.\n```\n@secret.md\n```\nmail me: me@secret.md\n"
    )
    assert "SHOULD-NOT-LOAD" not in load(repo, tmp_path / "nowhere").text
    assert list(import_paths("`@a.md` and @b.md", repo)) == [("b.md", repo / "b.md")]


def test_project_files_cannot_import_from_outside_the_repository(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "private.md"
    outside.write_text("PRIVATE-KEY-MATERIAL\n")
    (repo / "AGENTS.md").write_text(f"@{outside}\n@../private.md\n")

    loaded = load(repo, tmp_path / "nowhere")

    assert "PRIVATE-KEY-MATERIAL" not in loaded.text
    assert len([p for p in loaded.problems if "outside the project" in p]) == 2


def test_the_global_file_may_import_from_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "prefs.md").write_text("MY-PREFS\n")
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("@~/prefs.md\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert "MY-PREFS" in load(workspace, config).text


def test_each_file_is_included_once(repo: Path, tmp_path: Path) -> None:
    (repo / "AGENTS.md").write_text("SHARED-RULES\n")
    (repo / "CLAUDE.md").write_text("@AGENTS.md\n")  # Claude Code users point CLAUDE.md at AGENTS.md
    loaded = load(repo, tmp_path / "nowhere")
    assert loaded.text.count("SHARED-RULES") == 1


def test_the_size_cap_cuts_and_says_so(repo: Path, tmp_path: Path) -> None:
    (repo / "AGENTS.md").write_text("x" * 10_000)
    loaded = load(repo, tmp_path / "nowhere", max_bytes=2 * KB)
    assert loaded.bytes <= 2 * KB
    assert any("instructions_max_bytes" in p for p in loaded.problems)
    assert load(repo, tmp_path / "nowhere", max_bytes=0).text == ""


def test_memory_goes_to_the_nearest_instructions_file(repo: Path) -> None:
    workspace = repo / "services" / "api"
    assert memory_file(workspace) == repo / "AGENTS.md"  # none yet: a new AGENTS.md at the root
    (repo / "CLAUDE.md").write_text("# rules")  # no newline at the end
    assert memory_file(workspace) == repo / "CLAUDE.md"
    append_memory(repo / "CLAUDE.md", "  always   run make check  ")
    assert (repo / "CLAUDE.md").read_text() == "# rules\n- always run make check\n"
    (workspace / "AGENTS.md").write_text("")
    assert memory_file(workspace) == workspace / "AGENTS.md"


def test_floor_breakdown_names_each_part_and_the_diagnosis_the_biggest() -> None:
    parts = floor_breakdown(
        system_bytes=400,
        instructions_bytes=12_000,
        builtin_tools_bytes=4_000,
        mcp_tools_bytes=1_500,
        mcp_servers={"github": 1_500},
    )
    labels = [p.label for p in parts]
    assert labels == [
        "system prompt",
        "instructions",
        "tools (built-in)",
        "tools (MCP)",
        "tools (MCP) github",
    ]
    diagnosis = diagnose_floor(parts, floor_bytes=20_000, rejected_bytes=15_000)
    assert diagnosis.fail_fast
    assert "the biggest part is instructions" in diagnosis.message
    assert "AGENTS.md" in diagnosis.message
    assert diagnose_floor([FloorPart("tools (built-in)", 9000)], 10_000, 12_000).warn
