"""context_engine = "provider": native compaction and context edits become views (issue 19).

Real turns through the real `anthropic` and `openai` SDKs against the lab, which compacts
deterministically past the threshold it is sent and reports the context edits it applied.
"""

from __future__ import annotations

import json

import pytest

from app.config import HookSpec
from app.engine.payload import calibrate
from app.model.archive import markers_in
from app.model.messages import Native, ToolResult

NATIVE = {"anthropic": {}, "responses": {"api": "responses"}}


def _harness(make_harness, which: str, **settings):
    provider = "anthropic" if which == "anthropic" else "openai"
    settings.setdefault("context_engine", "provider")
    return make_harness(provider, route_extra=NATIVE[which], **settings)


def _receipts(h) -> list[dict]:
    return [json.loads(line) for line in h.session.receipts_path.read_text().splitlines()]


def _requests(h) -> list[dict]:
    return [r for r in h.session.store.list_requests(h.session.id) if r["outcome"] == "ok"]


def _markers_resolve(h) -> None:
    for message in h.session.view.messages:
        for key in markers_in(message.all_text()):
            assert h.session.store.archive_get(key) is not None, f"marker {key} does not resolve"


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_a_server_compaction_becomes_a_view_and_the_next_request_is_smaller(
    make_harness, lab, which, tmp_path
):
    hook_log = tmp_path / "post_compact.jsonl"
    h = _harness(
        make_harness,
        which,
        provider_compact_threshold=6_000,
        hooks=(HookSpec("PostCompact", f"cat >> {hook_log}; echo >> {hook_log}"),),
    )
    content = "".join(f"line {i}: the quick brown fox — ünïcødé ✓\n" for i in range(400))
    (h.engine.workspace / "notes.txt").write_text(content, encoding="utf-8")
    assert (await h.engine.submit("!read notes.txt")).outcome == "answered"
    prompts = 0
    while not h.of_type("compaction") and prompts < 6:
        result = await h.engine.submit(f"question {prompts}: " + "lorem ipsum dolor " * 200)
        assert result.outcome == "answered", result.error
        prompts += 1
    compactions = h.of_type("compaction")
    assert [(c.trigger, c.method, c.outcome) for c in compactions] == [("provider", "provider", "applied")]
    assert any(r.get("compaction") for r in lab.requests())

    # The view starts at the compaction: the notice naming the archive, then the compaction itself.
    view = h.session.view.messages
    assert view[0].role == "system" and view[0].meta.origin == "notice" and markers_in(view[0].text)
    assert isinstance(view[1].parts[0], Native) and view[1].compaction is not None
    assert h.session.view.reason == "provider:provider"
    _markers_resolve(h)

    # The next request is smaller than the one that was compacted, and it answers.
    before = _requests(h)[-1]["actual_bytes"]
    result = await h.engine.submit("and now?")
    assert result.outcome == "answered", result.error
    after = _requests(h)[-1]["actual_bytes"]
    assert after < before
    if which == "responses":
        assert lab.requests()[-1]["compacted_input"] is True  # the lab read from the compaction item on
    first_keys = set(markers_in(view[0].text))

    # The receipt says method = provider; /recall gives a replaced tool result back byte for byte.
    receipt = [r for r in _receipts(h) if r["method"] == "provider"][-1]
    assert receipt["trigger"] == "provider" and receipt["outcome"] == "applied"
    assert receipt["bytes"]["after"] < receipt["bytes"]["before"]
    original = next(p.content for m in h.session.master for p in m.parts if isinstance(p, ToolResult))
    assert content.splitlines()[-1] in original and len(original) > 1000
    assert all(original not in m.all_text() for m in h.session.view.messages)
    key = next(k for k in receipt["archive_keys"] if h.session.store.archive_get(k).content == original)
    message = h.engine.recall_into_view(key)
    assert message is not None and message.text == f"[recalled by the user]\n{original}"
    assert h.session.counters.compactions.get("provider") == 1
    # A second compaction names the first one's archive keys again: no key drops out of the view.
    while len(h.of_type("compaction")) < 2:
        assert (await h.engine.submit("more: " + "lorem ipsum dolor " * 300)).outcome == "answered"
    notice = next(m for m in h.session.view.messages if m.role == "system" and m.meta.origin == "notice")
    assert first_keys <= set(markers_in(notice.text))
    _markers_resolve(h)
    # PostCompact ran (the provider compacted before any PreCompact could), with the archive keys.
    fired = [json.loads(line) for line in hook_log.read_text().splitlines() if line.strip()][0]
    assert fired["trigger"] == "auto" and fired["outcome"] == "applied"
    assert fired["keys"] == receipt["archive_keys"]


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_compact_asks_the_provider_on_demand(make_harness, lab, which):
    h = _harness(make_harness, which, provider_compact_threshold=10_000_000)
    h.grow(4, 3_000)
    assert (await h.engine.submit("the latest question")).outcome == "answered"
    before = h.engine.measure(h.session.view.messages)

    result = await h.engine.compact("keep the decisions")

    assert result is not None and result.method == "provider"
    path = "/v1/responses/compact" if which == "responses" else "/v1/messages"
    assert lab.requests()[-1]["path"] == path
    view = h.session.view.messages
    anchor = next(m for m in view if m.compaction is not None)
    assert anchor.meta.origin == "summary"
    # the latest exchange stays whole after the compaction
    assert view[-2].text == "the latest question" and view[-1].role == "assistant"
    if which == "responses":  # OpenAI's compacted window keeps the user messages before its item
        assert any(m.role == "user" and m.text.startswith("question 0") for m in view[: view.index(anchor)])
    else:
        assert "keep the decisions" in anchor.compaction.readable  # the lab's summary names the instructions
    assert h.engine.measure(view) < before
    assert _receipts(h)[-1]["method"] == "provider" and _receipts(h)[-1]["trigger"] == "manual"
    recorded = h.session.store.list_requests(h.session.id)[-1]  # in the Requests panel like any request
    assert (
        recorded["purpose"] == "compact"
        and recorded["outcome"] == "ok"
        and recorded["url"].endswith(path[3:])
    )
    assert (await h.engine.submit("go on")).outcome == "answered"


async def test_compact_falls_back_to_local_where_the_provider_cannot(make_harness, lab):
    h = make_harness("bedrock", context_engine="provider")
    h.grow(4, 3_000)
    assert (await h.engine.submit("hello")).outcome == "answered"
    assert not h.engine.native.supported
    result = await h.engine.compact()
    assert result is not None and result.method != "provider"


async def test_applied_edits_are_mirrored_locally(make_harness, lab):
    h = _harness(
        make_harness,
        "anthropic",
        provider_compact_threshold=10_000_000,
        result_max_chars=100_000,
        turn_budget_chars=2_000_000,
    )
    files = {}
    for i in range(7):
        files[f"f{i}.txt"] = "".join(f"{i}:{n} alpha beta gamma delta epsilon zeta\n" for n in range(1_500))
        (h.engine.workspace / f"f{i}.txt").write_text(files[f"f{i}.txt"], encoding="utf-8")

    result = await h.engine.submit("\n".join(f"!read f{i}.txt" for i in range(7)))

    assert result.outcome == "answered", result.error
    edits = h.of_type("provider_edits")
    assert len(edits) == 1 and edits[0].cleared_tool_uses == 2 and edits[0].stubbed == 2
    assert edits[0].cleared_input_tokens > 20_000
    # The two oldest tool results are stubs now; their originals are archived and recallable.
    results = [p for m in h.session.view.messages for p in m.parts if isinstance(p, ToolResult)]
    stubbed = [p for p in results if p.content.startswith("[Tool result cleared by the provider")]
    assert [p.call_id for p in stubbed] == [p.call_id for p in results[:2]]
    originals = {p.call_id: p.content for m in h.session.master for p in m.parts if isinstance(p, ToolResult)}
    for part, name in zip(stubbed, ("f0.txt", "f1.txt"), strict=True):
        (key,) = markers_in(part.content)
        assert h.session.store.archive_get(key).content == originals[part.call_id]
        assert files[name].splitlines()[-1] in originals[part.call_id]
    assert all(not p.content.startswith("[Tool result cleared") for p in results[2:])
    # The edited request's usage did not move the calibration (only the first request's did);
    # the next cache write is booked as an expected rebuild.
    first, edited = _requests(h)[-2:]
    expected = round(calibrate(4.0, first["predicted_bytes"], first["usage"]["input_tokens"]), 3)
    assert h.session.flags.get("bytes_per_token") == expected
    assert calibrate(expected, edited["predicted_bytes"], edited["usage"]["input_tokens"]) != expected
    assert h.session.flags.get("expect_cache_rebuild") is True
    report = h.engine.context_report().provider_edits
    assert (report["edits"], report["tool_results"], report["stubbed"]) == (1, 2, 2)
    assert report["tokens"] == edits[0].cleared_input_tokens
    assert _receipts(h)[-1]["trigger"] == "provider-edit"

    before = _requests(h)[-1]["actual_bytes"]
    assert (await h.engine.submit("thanks")).outcome == "answered"
    assert _requests(h)[-1]["actual_bytes"] < before
    assert h.session.flags.get("expect_cache_rebuild") is False
    assert h.engine.context_report().provider_edits["expected_rebuilds"] == 1


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_preflight_against_a_known_cap_compacts_through_the_provider(make_harness, lab, which):
    h = _harness(make_harness, which, provider_compact_threshold=10_000_000, max_payload=64 * 1024)
    h.grow(7, 4_000)  # ≈ 60 KB: past 85% of the cap, and the compaction request (the history) still fits it
    result = await h.engine.submit("and the next step?")
    assert result.outcome == "answered", result.error
    compactions = h.of_type("compaction")
    assert (compactions[0].trigger, compactions[0].method) == ("preflight", "provider")
    if (
        which == "responses"
    ):  # OpenAI keeps the window's user messages: still over, the local pipeline goes on
        assert [c.trigger for c in compactions] == ["preflight", "preflight"] and compactions[
            1
        ].method != "provider"
    else:
        assert len(compactions) == 1
    assert _requests(h)[-1]["actual_bytes"] < 0.85 * 64 * 1024


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_a_native_compaction_request_over_the_cap_is_not_sent(make_harness, lab, which):
    """The provider's compaction request carries the history it compacts: over the cap (a gateway would refuse
    it), it is never sent — the local pipeline compacts, and a notice says why."""
    h = _harness(make_harness, which, provider_compact_threshold=10_000_000, max_payload=64 * 1024)
    h.grow(8, 8_000)  # ≈ 128 KB: the compaction request would be twice the cap
    result = await h.engine.submit("and the next step?")
    assert result.outcome == "answered", result.error
    assert all(r["purpose"] != "compact" for r in _requests(h))
    assert all(r["actual_bytes"] <= 64 * 1024 for r in _requests(h))
    assert [c.method for c in h.of_type("compaction")] != [] and "provider" not in [
        c.method for c in h.of_type("compaction")
    ]
    notices = [n.text for n in h.of_type("notice") if "compaction request would be" in n.text]
    assert (
        notices and "over the configured cap (64.0 KB)" in notices[0] and "compacting locally" in notices[0]
    )


@pytest.mark.parametrize("which", ["anthropic", "responses"])
async def test_the_ladder_still_recovers_what_native_compaction_did_not_prevent(make_harness, lab, which):
    lab.configure(gateway="nginx", cap="128KB")
    h = _harness(make_harness, which, provider_compact_threshold=10_000_000)
    h.grow(10, 16_000)
    result = await h.engine.submit("what did we discuss?")
    assert result.outcome == "answered", result.error
    records = h.session.store.list_requests(h.session.id)
    assert records[0]["status"] == 413 and records[0]["kind"] == "payload_too_large"
    assert h.session.view.reason.startswith("recovery:L")
    assert records[-1]["outcome"] == "ok" and records[-1]["actual_bytes"] <= 128 * 1024


async def test_esc_cancels_a_provider_compaction_in_flight(make_harness, lab):
    import asyncio

    h = _harness(make_harness, "anthropic", provider_compact_threshold=10_000_000)
    h.grow(4, 3_000)
    assert (await h.engine.submit("the latest question")).outcome == "answered"
    view = h.session.view.id
    lab.configure(faults="slow@1", slow_pause=30)  # the compaction request hangs
    cancel = asyncio.Event()
    task = asyncio.create_task(h.engine.compact(cancel=cancel))

    def in_flight() -> bool:
        records = h.session.store.list_requests(h.session.id)
        return any(r["purpose"] == "compact" and r["outcome"] == "sending" for r in records)

    for _ in range(2_000):  # a polling wait, bounded
        if in_flight():
            break
        await asyncio.sleep(0.005)
    assert in_flight()
    cancel.set()
    result = await asyncio.wait_for(task, 10)

    assert result is not None and result.cancelled and h.session.view.id == view
    record = [r for r in h.session.store.list_requests(h.session.id) if r["purpose"] == "compact"][-1]
    assert record["outcome"] == "cancelled"
