"""Issue 41, part 2: memory flushed before compaction — real turns through the real SDKs against the lab.

At every compaction site (pre-flight, `/compact`, guided `/compact`, each recovery level, the provider's own
compaction) the master messages that leave the view unread by the memory worker are in its durable queue before
the new view is committed; the receipts say so in that order. The worker reads them (and the conversation a few
turns behind) with the summarizer route — the lab model answers the memory prompt with the segment's
`remember:` lines — never over the route's cap, and recovers from a size refusal like any request.
"""

from __future__ import annotations

import json

import pytest

from app.engine.memory.memory_file import memory_path, read_facts
from app.model.messages import Message


def _remember(h, facts: list[str], filler: int = 6_000) -> list[str]:
    """One user/assistant exchange per fact, each user message carrying `remember: FACT` and some bulk."""
    ids = []
    for fact in facts:
        turn = h.session.turn + 1
        user = h.session.append(
            Message.create("user", f"remember: {fact}\n" + "lorem ipsum " * (filler // 12), turn=turn)
        )
        answer = h.session.append(
            Message.create("assistant", "noted. " + "dolor sit " * (filler // 10), turn=turn)
        )
        ids += [user.id, answer.id]
    return ids


def _receipts(h) -> list[dict]:
    path = h.session.receipts_path
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _queue(h) -> list[dict]:
    rows = h.session.store.query(
        "SELECT * FROM memory_queue WHERE session_id = ? ORDER BY id", (h.session.id,)
    )
    return [dict(row) | {"message_ids": json.loads(row["message_ids"])} for row in rows]


def _facts(h, state: str | None = None) -> list[str]:
    facts = h.engine.memory.journal.facts(h.engine.memory.project, state)
    return [f.text for f in facts]


def _left_view(h, before: tuple[Message, ...]) -> set[str]:
    now = {m.id for m in h.session.view.messages}
    return {m.id for m in before if m.id not in now and h.session.is_master(m)}


def _order_is_queue_then_commit(h) -> None:
    """In the receipts: `memory: queued N messages` for a queue entry, then `view committed` for the same one."""
    lines = [(r.get("event"), r.get("queue_id")) for r in _receipts(h) if r.get("method") == "memory"]
    assert lines, "no memory receipt"
    for index, (event, queue_id) in enumerate(lines):
        if event.startswith("memory: queued"):
            assert ("view committed", queue_id) in lines[index + 1 :], lines


async def test_a_preflight_compaction_queues_the_unread_segment_before_the_view_commit(make_harness, lab):
    h = make_harness(memory="suggest", max_payload=40 * 1024)
    _remember(h, ["the tests run with make check", "configs live in etc/", "never push on fridays"])
    before = h.session.view.messages

    result = await h.engine.submit("what now?")

    assert result.outcome == "answered", result.error
    left = _left_view(h, before)
    assert left, "the pre-flight compaction took nothing out of the view"
    [entry] = _queue(h)
    assert set(entry["message_ids"]) == left and entry["reason"].startswith("preflight:")
    _order_is_queue_then_commit(h)
    types = [e.type for e in h.events]
    assert types.index("memory_queued") < types.index("compaction")
    # the queue is read (by the worker, as the TUI does after a turn) with the summarizer route
    await h.engine.memory.catch_up(live=False)
    await h.session.drain()
    assert _queue(h)[0]["state"] == "distilled"
    pending = _facts(h, "pending")
    assert "the tests run with make check" in pending
    memory_requests = [r for r in h.session.store.list_requests(h.session.id) if r["purpose"] == "memory"]
    assert memory_requests and all(r["outcome"] == "ok" for r in memory_requests)


@pytest.mark.parametrize("instructions", [None, "keep the decisions"])
async def test_compact_and_guided_compact_queue_first(make_harness, lab, instructions):
    h = make_harness(memory="suggest")
    _remember(h, [f"fact {i}" for i in range(10)], filler=3_000)
    before = h.session.view.messages

    result = await h.engine.compact(instructions)

    assert result is not None and result.changed
    left = _left_view(h, before)
    queued = {i for e in _queue(h) for i in e["message_ids"]}
    assert left and left <= queued
    assert all(e["reason"].startswith("manual:") for e in _queue(h))
    _order_is_queue_then_commit(h)


async def test_each_recovery_level_queues_what_it_drops(make_harness, lab):
    lab.configure(gateway="nginx", cap="64KB")
    h = make_harness(memory="suggest")
    _remember(h, [f"recovered fact {i}" for i in range(12)], filler=8_000)
    before = h.session.view.messages

    result = await h.engine.submit("and now?")

    assert result.outcome == "answered", result.error
    left = _left_view(h, before)
    entries = _queue(h)
    assert left and left <= {i for e in entries for i in e["message_ids"]}
    assert all(e["reason"].startswith("recovery:L") for e in entries)
    _order_is_queue_then_commit(h)


async def test_a_provider_compaction_queues_first(make_harness, lab):
    h = make_harness(memory="suggest", context_engine="provider", provider_compact_threshold=6_000)
    _remember(h, ["the provider compacts"], filler=2_000)
    prompts = 0
    while (
        not [e for e in h.of_type("compaction") if e.trigger in ("provider", "auto", "manual")]
        and prompts < 8
    ):
        assert (
            await h.engine.submit(f"remember: note {prompts}\n" + "lorem ipsum " * 300)
        ).outcome == "answered"
        prompts += 1
    provider = [e for e in h.of_type("compaction") if e.method == "provider" and e.outcome == "applied"]
    assert provider, [(e.trigger, e.method) for e in h.of_type("compaction")]
    entries = _queue(h)
    assert any(":provider" in e["reason"] or e["reason"].startswith("provider") for e in entries), entries
    _order_is_queue_then_commit(h)


async def test_what_the_worker_read_is_not_queued_again_and_nothing_is_read_twice(make_harness, lab):
    h = make_harness(memory="suggest", memory_lag_turns=2)
    h.engine.memory.background = False  # read when this test says, as the TUI's worker would after a turn
    for i in range(5):
        assert (await h.engine.submit(f"remember: live fact {i}\nhello")).outcome == "answered"
    await h.engine.memory.catch_up(live=True)  # as the TUI's background worker does after a turn

    read = _facts(h)
    assert read == [f"live fact {i}" for i in range(3)]  # turns 1–3: two turns behind turn 5
    progress = h.engine.memory.journal.progress(h.session.id)
    before = h.session.view.messages
    await h.engine.compact()
    left = _left_view(h, before)
    queued = {i for e in _queue(h) for i in e["message_ids"]}
    assert left and not (
        queued & {m.id for m in h.session.master[: progress + 1]}
    )  # read ones are not queued
    await h.engine.memory.catch_up(live=False)
    by_id = {m.id: m for m in h.session.master}
    from_queue = [
        line.split(":", 1)[1].strip()
        for i in queued
        for line in by_id[i].all_text().splitlines()
        if line.startswith("remember:")
    ]
    facts = _facts(h)
    assert len(facts) == len(set(facts))  # nothing distilled twice
    assert set(facts) == {*read, *from_queue}


async def test_suggested_facts_are_accepted_into_the_instructions_file_edited_or_rejected(make_harness, lab):
    h = make_harness(memory="suggest", max_payload=40 * 1024)
    h.engine.memory.background = False
    _remember(h, ["use uv for dependencies", "the api lives in src/api", "tabs are forbidden"])
    await h.engine.submit("go on")
    await h.engine.memory.catch_up(live=False)
    pending = {f.text: f for f in h.engine.memory.pending()}
    agents = h.engine.workspace / "AGENTS.md"
    assert not agents.exists()  # nothing is written to the repository unasked

    path = h.engine.memory.accept(pending["use uv for dependencies"])
    h.engine.memory.accept(pending["the api lives in src/api"], text="the HTTP API lives in src/api/")
    h.engine.memory.reject(pending["tabs are forbidden"])

    assert path == agents
    text = agents.read_text()
    assert "- use uv for dependencies" in text and "- the HTTP API lives in src/api/" in text
    assert "tabs" not in text
    assert "use uv for dependencies" in h.engine.system  # the instructions are reloaded
    assert h.engine.memory.pending() == []
    states = {f.text: f.state for f in h.engine.memory.journal.facts(h.engine.memory.project)}
    assert (
        states["tabs are forbidden"] == "rejected" and states["the HTTP API lives in src/api/"] == "accepted"
    )


async def test_accepting_never_writes_through_a_link(make_harness, lab, tmp_path):
    h = make_harness(memory="suggest", max_payload=40 * 1024)
    h.engine.memory.background = False
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n")
    (h.engine.workspace / "AGENTS.md").symlink_to(outside)
    _remember(h, ["a fact", "another fact", "a third fact"])
    await h.engine.submit("go on")
    await h.engine.memory.catch_up(live=False)
    fact = h.engine.memory.pending()[0]

    with pytest.raises(OSError, match="link"):
        h.engine.memory.accept(fact)

    assert outside.read_text() == "keep me\n" and fact in h.engine.memory.pending()


async def test_auto_keeps_facts_in_a_bounded_file_outside_the_repository_that_joins_the_floor(
    make_harness, lab
):
    h = make_harness(memory="auto", max_payload=40 * 1024, memory_max_bytes=1024)
    _remember(h, [f"auto fact number {i:02d} with a few words to take room" for i in range(6)])
    floor_before = h.engine.floor_sizes().total_bytes

    await h.engine.submit("go on")
    await h.engine.memory.catch_up(live=False)

    path = memory_path(h.engine.workspace)
    assert path.is_file() and not path.is_relative_to(h.engine.workspace)
    assert path.parent == h.session.store.home / "memory"  # under BULKHEAD_HOME's data folder
    assert len(path.read_bytes()) <= 1024
    kept = read_facts(path)
    assert kept and all(f in h.engine.system for f in kept)
    parts = {p.label: p.bytes for p in h.engine.floor_sizes().parts}
    assert parts.get("memory", 0) > 0 and h.engine.floor_sizes().total_bytes > floor_before
    assert not list(h.engine.workspace.glob("*.md"))  # nothing written to the repository


async def test_the_worker_never_sends_over_the_cap_and_recovers_from_a_size_refusal(make_harness, lab):
    """A 180 KB segment, a summarizer route behind a gateway that refuses bodies over 20 KB: the first memory
    request is refused, the cap is learned, the segment is read in parts that fit, and every fact is found."""
    h = make_harness(memory="suggest")
    ids = _remember(h, [f"big fact {i}" for i in range(9)], filler=10_000)
    entry = h.engine.memory.journal.queue(h.session.id, "manual:test", ids, 90_000)
    lab.configure(gateway="nginx", cap="20KB")

    await h.engine.memory.catch_up(live=False)
    await h.session.drain()

    assert sorted(_facts(h)) == sorted(f"big fact {i}" for i in range(9))
    assert _queue(h)[0]["id"] == entry and _queue(h)[0]["state"] == "distilled"
    requests = [r for r in h.session.store.list_requests(h.session.id) if r["purpose"] == "memory"]
    refused = [r for r in requests if r["outcome"] == "failed"]
    passed = [r for r in requests if r["outcome"] == "ok"]
    assert refused and refused[0]["kind"] == "payload_too_large"
    assert len(passed) >= 5 and all(r["predicted_bytes"] <= 20 * 1024 for r in passed)
    cap = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    assert cap is not None and all(r["predicted_bytes"] <= cap.cap_bytes for r in passed)


async def test_a_known_cap_is_respected_before_anything_is_sent(make_harness, lab):
    h = make_harness(memory="suggest", max_payload=16 * 1024)
    ids = _remember(h, [f"capped fact {i}" for i in range(5)], filler=10_000)
    h.engine.memory.journal.queue(h.session.id, "manual:test", ids, 50_000)

    await h.engine.memory.catch_up(live=False)
    await h.session.drain()

    requests = [r for r in h.session.store.list_requests(h.session.id) if r["purpose"] == "memory"]
    assert requests and all(r["outcome"] == "ok" and r["predicted_bytes"] <= 16 * 1024 for r in requests)
    assert sorted(_facts(h)) == sorted(f"capped fact {i}" for i in range(5))


async def test_memory_off_queues_nothing(make_harness, lab):
    h = make_harness(memory="off", max_payload=40 * 1024)
    _remember(h, ["a fact"])
    assert (await h.engine.submit("go on")).outcome == "answered"
    assert _queue(h) == [] and not [r for r in _receipts(h) if r.get("method") == "memory"]


async def test_a_session_older_than_the_worker_is_read_from_where_it_was_first_seen(make_harness, lab):
    """Turning memory on does not read a long history back to its start (nobody asked for that bill): the
    worker starts after the last message it found; a new session is read from its first message."""
    from app.engine.memory.journal import MemoryJournal
    from app.engine.memory.worker import MemoryWorker

    h = make_harness(memory="off")
    _remember(h, ["an old fact", "another old fact"], filler=500)
    journal = MemoryJournal(h.session.store)
    assert journal.progress(h.session.id) == -1  # never seen

    h.engine.settings = h.engine.settings.with_overrides(memory="suggest")
    worker = MemoryWorker(h.engine)

    assert worker.enabled and journal.progress(h.session.id) == h.session.master_len() - 1
    fresh = make_harness(memory="suggest")
    assert fresh.engine.memory.journal.progress(fresh.session.id) == -1
