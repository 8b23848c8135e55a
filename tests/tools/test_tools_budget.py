"""Per-result budgets: head + tail kept, the full text spilled to a private file the preview names."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from app.tools import budget
from app.tools.base import ToolContext, ToolOutcome, with_result_limit
from app.tools.registry import run_tool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "big.txt").write_text("".join(f"row {n:05}\n" for n in range(1, 1501)))
    return folder


@pytest.fixture
def ctx(ws: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=ws, session_folder=tmp_path / "sessions" / "s1", result_max_chars=3_000)


async def test_over_budget_result_keeps_head_and_tail_and_spills_everything(ctx: ToolContext) -> None:
    full = await run_tool("read_file", {"path": "big.txt"}, with_result_limit(ctx, 10_000_000))
    assert full.spill_path is None and full.chars_total == len(full.content) > 20_000

    outcome = await run_tool("read_file", {"path": "big.txt"}, ctx)
    assert not outcome.is_error
    assert len(outcome.content) <= 3_000
    assert outcome.chars_total == len(full.content)
    assert outcome.truncated
    # head and tail survive
    assert outcome.content.startswith("     1\trow 00001\n")
    assert outcome.content.endswith(full.content[-500:])
    assert full.content.endswith("[1,500 lines, the whole file (14.6 KB)]")
    # the spill file: named in the preview, absolute, private, the full text byte for byte
    path = outcome.spill_path
    assert path is not None and path.is_absolute()
    assert path.parent == ctx.session_folder / "spill"
    assert path.name.startswith("read_file-") and path.suffix == ".txt"
    assert f"full output saved to {path} — read ranges of it with read_file" in outcome.content
    assert "chars not shown" in outcome.content
    assert path.read_text(encoding="utf-8") == full.content
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


async def test_the_spill_file_can_be_read_back_in_ranges(ctx: ToolContext) -> None:
    outcome = await run_tool("read_file", {"path": "big.txt"}, ctx)
    assert outcome.spill_path is not None
    part = await run_tool("read_file", {"path": str(outcome.spill_path), "offset": 700, "limit": 2}, ctx)
    assert part.content.splitlines()[:2] == ["   700\t   700\trow 00700", "   701\t   701\trow 00701"]


async def test_same_output_twice_is_one_spill_file(ctx: ToolContext) -> None:
    first = await run_tool("read_file", {"path": "big.txt"}, ctx)
    second = await run_tool("read_file", {"path": "big.txt"}, ctx)
    assert first.spill_path == second.spill_path
    assert len(list((ctx.session_folder / "spill").iterdir())) == 1


async def test_within_budget_nothing_is_spilled(ctx: ToolContext, ws: Path) -> None:
    (ws / "small.txt").write_text("tiny\n")
    outcome = await run_tool("read_file", {"path": "small.txt"}, ctx)
    assert outcome.spill_path is None and not outcome.truncated
    assert not (ctx.session_folder / "spill").exists()


async def test_errors_are_budgeted_too(ctx: ToolContext) -> None:
    outcome = await run_tool("shell", {"command": "seq 1 5000 >&2; exit 1"}, ctx)
    assert outcome.is_error and outcome.spill_path is not None and len(outcome.content) <= 3_000
    assert outcome.content.startswith("Exit code 1.")
    assert outcome.spill_path.name.startswith("shell-")


def test_spill_failure_still_cuts_and_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the session folder should be")
    ctx = ToolContext(workspace=tmp_path, session_folder=blocker, result_max_chars=2_000)
    outcome = budget.apply_budget("grep", ToolOutcome("x" * 50_000), ctx)
    assert outcome.spill_path is None and len(outcome.content) <= 2_000
    assert "could not be saved" in outcome.content and outcome.chars_total == 50_000


def test_preserve_verbatim_is_never_cut(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, session_folder=tmp_path / "s", result_max_chars=100)
    original = ToolOutcome("y" * 10_000, preserve_verbatim=True)
    assert budget.apply_budget("recall", original, ctx) is original


def test_spill_names_are_safe_and_content_exact(tmp_path: Path) -> None:
    text = "é\r\nline\x00zero"
    path = budget.spill_text("weird/name", text, tmp_path / "s")
    assert path.name.startswith("weird_name-")
    assert path.read_bytes() == text.encode("utf-8")


def test_turn_budget() -> None:
    turn = budget.TurnBudget(total_chars=50_000)
    assert turn.limit(20_000) == 20_000
    turn.charge("x" * 40_000)
    assert turn.limit(20_000) == 10_000
    turn.charge(ToolOutcome("x" * 10_000))
    assert turn.remaining_chars == 0 and turn.limit(20_000) == budget.TURN_FLOOR_CHARS
