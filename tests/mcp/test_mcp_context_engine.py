"""`context_engine = "mcp:NAME"`: a guided /compact through the demo server's context_compact, and the
built-in summarizer taking over when it errs, hangs past mcp_compact_timeout, answers nothing or refuses.
The archive, /rewind compact and the receipts work as with the built-in summarizer."""

from __future__ import annotations

import dataclasses
import json

import pytest

from app.engine.prompts import SUMMARY_HEADER
from app.engine.receipts import read_receipts
from tests.mcp.conftest import demo_spec


async def grown(make_engine, tmp_path, mode: str, **settings):
    log = tmp_path / "compact.log"
    h = make_engine(
        demo_spec(env={"DEMO_COMPACT": mode, "DEMO_COMPACT_LOG": str(log)}),
        context_engine="mcp:demo",
        **settings,
    )
    await h.engine.start()
    await h.engine.start_mcp()
    for i in range(10):  # long messages: a summary of them brings the view well under the target
        await h.engine.submit(
            f"message number {i}: the okapi lives in the forest of the Congo. " + "okapi " * 500
        )
    return h, log


def summary_text(h) -> str:
    return next(m.text for m in h.session.view.messages if m.meta.origin == "summary")


async def test_guided_compact_is_written_by_the_mcp_server(make_engine, tmp_path):
    h, log = await grown(make_engine, tmp_path, "ok")
    before = len(h.session.view)
    result = await h.engine.compact("keep what the user said about okapis")
    assert result.changed and result.engine == "mcp:demo"
    text = summary_text(h)
    assert text.startswith(SUMMARY_HEADER) and "MCP demo summary" in text
    assert "Instruction: keep what the user said about okapis" in text
    assert "[[ccr:" in text  # the segment is archived behind a marker, as with the built-in summarizer
    segment_chars, budget, instruction = log.read_text().splitlines()[0].split("\t")
    assert (
        int(segment_chars) > 500
        and int(budget) == 16_384
        and instruction == "keep what the user said about okapis"
    )
    receipt = read_receipts(h.session.receipts_path)[-1]
    assert receipt["engine"] == "mcp:demo" and receipt["outcome"] == "applied"
    compaction = h.of_type("compaction")[-1]
    assert compaction.engine == "mcp:demo"
    assert any("by mcp:demo" in e.text for e in h.of_type("compaction_phase"))
    assert h.engine.rewind() and len(h.session.view) == before  # /rewind compact works unchanged
    key = next(k for k in compaction.archive_keys)
    assert h.session.store.archive_get(key, h.session.id) is not None  # /recall finds the segment


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("error", "context_compact failed"),
        ("empty", "empty answer"),
        ("refuse", "refusal"),
    ],
)
async def test_a_failing_engine_falls_back_to_the_built_in_summarizer(make_engine, tmp_path, mode, why):
    h, _log = await grown(make_engine, tmp_path, mode)
    result = await h.engine.compact("focus")
    assert result.changed and result.engine.startswith("local (fallback: mcp:demo")
    assert why in result.engine
    assert "Summary of the earlier conversation" in summary_text(h)  # the lab model's extractive summary
    assert read_receipts(h.session.receipts_path)[-1]["engine"].startswith("local (fallback: mcp:demo")
    assert any(e.phase == "engine_fallback" for e in h.of_type("compaction_phase"))


async def test_a_hanging_engine_times_out_into_the_fallback(make_engine, tmp_path):
    h, _log = await grown(make_engine, tmp_path, "hang", mcp_compact_timeout=1.0)
    result = await h.engine.compact("")
    assert result.changed and "no answer within 1 s" in result.engine
    assert "Summary of the earlier conversation" in summary_text(h)


async def test_an_engine_that_is_not_there_falls_back(make_engine, tmp_path):
    h = make_engine(context_engine="mcp:nowhere")
    await h.engine.start()
    for i in range(6):
        await h.engine.submit(f"message {i} about the okapi")
    result = await h.engine.compact("")
    assert result.changed and "no MCP server named 'nowhere'" in result.engine


def test_receipt_engine_field_is_json(tmp_path):
    from app.engine.receipts import make_receipt

    record = make_receipt(
        trigger="manual",
        method="summary",
        level=2,
        messages_before=9,
        messages_after=3,
        bytes_before=100,
        bytes_after=50,
        outcome="applied",
        elapsed_seconds=0.1,
        engine="mcp:x",
    )
    assert json.loads(json.dumps(record))["engine"] == "mcp:x"


async def test_the_segment_sent_to_the_mcp_engine_fits_the_byte_cap(make_engine, tmp_path, monkeypatch):
    """Issue 38 item 1: the MCP context engine is handed the rendering fitted to the route's byte cap (it may
    sit behind the same gateway): the JSON arguments of its call are under the cap, and the engine writes
    the summary."""
    from app.mcp.context_engine import McpContextEngine

    calls: list[int] = []
    original = McpContextEngine.__call__

    async def measured(self, segment: str, budget_chars: int, instruction: str) -> str:
        arguments = {"segment": segment, "budget_chars": budget_chars, "instruction": instruction}
        calls.append(len(json.dumps(arguments, ensure_ascii=False).encode("utf-8")))
        return await original(self, segment, budget_chars, instruction)

    monkeypatch.setattr(McpContextEngine, "__call__", measured)
    h, log = await grown(make_engine, tmp_path, "ok")
    for i in range(10):
        assert (await h.engine.submit(f"more {i}: " + "okapi " * 500)).outcome == "answered"
    h.engine.settings = dataclasses.replace(h.engine.settings, max_payload=26 * 1024)
    full = sum(len(m.all_text()) for m in h.session.view.messages[:-6])
    assert full > 40_000  # the whole segment would not fit

    result = await h.engine.compact()

    assert result.changed and result.engine == "mcp:demo"
    assert calls and all(size <= 26 * 1024 for size in calls)
    assert int(log.read_text().splitlines()[-1].split("\t")[0]) < full
