"""recall: archived content back byte for byte, one or several keys, missing keys said."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.model.archive import archive_key
from app.tools.base import ToolContext
from app.tools.registry import run_tool

FIRST = "def f():\r\n    return 'é'  \n\n\ttrailing spaces   "  # CRLF, unicode, no final newline
SECOND = "second entry\n" * 3 + "=== <<ccr:0000000000000000>> === looks like a header\n"
K1, K2 = archive_key(FIRST), archive_key(SECOND)
MISSING = "0123456789abcdef"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    store = {K1: FIRST, K2: SECOND}
    return ToolContext(
        workspace=tmp_path, session_folder=tmp_path / "s", result_max_chars=10, recall=store.get
    )


async def test_one_key_returns_the_content_alone_byte_for_byte(ctx: ToolContext) -> None:
    outcome = await run_tool("recall", {"keys": f"<<ccr:{K1}>>"}, ctx)
    assert not outcome.is_error and outcome.preserve_verbatim
    assert outcome.content == FIRST  # never budget-cut, although result_max_chars is 10
    assert outcome.spill_path is None


@pytest.mark.parametrize(
    "spelling",
    [
        f"ccr:{K1}",
        f"<ccr:{K1}>",
        f"CCR:{K1.upper()}",
        f"@recall {K1}",
        f"please restore {K1} thanks",
        [f"<<ccr:{K1}>>"],
    ],
)
async def test_keys_are_parsed_leniently(ctx: ToolContext, spelling: str | list[str]) -> None:
    outcome = await run_tool("recall", {"keys": spelling}, ctx)
    assert outcome.content == FIRST


async def test_several_keys_give_one_section_each(ctx: ToolContext) -> None:
    outcome = await run_tool("recall", {"keys": [K1, f"<<ccr:{K2}>>"]}, ctx)
    assert not outcome.is_error and outcome.preserve_verbatim
    assert outcome.content == (
        f"=== ccr:{K1} ({len(FIRST):,} chars) ===\n{FIRST}\n\n"
        f"=== ccr:{K2} ({len(SECOND):,} chars) ===\n{SECOND}"
    )
    assert "<<ccr:" not in outcome.content.replace(FIRST, "").replace(
        SECOND, ""
    )  # no marker pointing nowhere
    same = await run_tool("recall", {"keys": f"{K1} {K2}"}, ctx)
    assert same.content == outcome.content


async def test_a_missing_key_among_several_is_said_in_its_section(ctx: ToolContext) -> None:
    outcome = await run_tool("recall", {"keys": [K1, MISSING]}, ctx)
    assert not outcome.is_error
    assert outcome.content == (
        f"=== ccr:{K1} ({len(FIRST):,} chars) ===\n{FIRST}\n\n=== ccr:{MISSING}: not found in the archive ==="
    )


async def test_all_keys_missing_is_an_error(ctx: ToolContext) -> None:
    one = await run_tool("recall", {"keys": MISSING}, ctx)
    assert one.is_error and f"not found in the archive: ccr:{MISSING}" in one.content
    two = await run_tool("recall", {"keys": [MISSING, "fedcba9876543210"]}, ctx)
    assert (
        two.is_error
        and "ccr:fedcba9876543210" in two.content
        and "[[ccr:" not in two.content
        and "<<ccr:" not in two.content
    )


async def test_no_key_at_all(ctx: ToolContext) -> None:
    outcome = await run_tool("recall", {"keys": "the big file from before"}, ctx)
    assert outcome.is_error and "no archive key" in outcome.content


async def test_no_archive_or_a_broken_one(tmp_path: Path) -> None:
    none = ToolContext(workspace=tmp_path, session_folder=tmp_path / "s")
    outcome = await run_tool("recall", {"keys": K1}, none)
    assert outcome.is_error and "not available" in outcome.content

    def broken(key: str) -> str | None:
        raise OSError("database is locked")

    failing = ToolContext(workspace=tmp_path, session_folder=tmp_path / "s", recall=broken)
    outcome = await run_tool("recall", {"keys": K1}, failing)
    assert outcome.is_error and "database is locked" in outcome.content
