"""The turn loop through the lab: tools, approvals, hooks, escalation, cancel, compaction, recall."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest

from app.config import HookSpec
from app.model.archive import markers_in
from app.model.prompts import CONTINUATION

PROVIDERS = ("anthropic", "openai", "bedrock")


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_round_trip_reads_a_file_and_answers(make_harness, provider):
    h = make_harness(provider)
    (h.engine.workspace / "notes.txt").write_text("alpha\nbeta\ngamma\n")

    result = await h.engine.submit("!read notes.txt")

    assert result.outcome == "answered", result.error
    roles = [m.role for m in h.session.master]
    assert roles == ["user", "assistant", "tool", "assistant"]
    tool_result = h.session.master[2].tool_results[0]
    assert "alpha" in tool_result.content and not tool_result.is_error
    assert "read_file" in h.session.master[-1].text
    assert [e.decision for e in h.of_type("tool_approval")] == ["auto"]
    assert h.session.counters.requests == 2
    # each request's events carry the send time the store keeps (the inspector shows that one)
    sent_at = [r["created_at"] for r in h.session.store.list_requests(h.session.id)]
    assert [e.started_at for e in h.of_type("request_started")] == sent_at
    assert [e.started_at for e in h.of_type("request")] == sent_at


async def test_shell_asks_and_a_denial_reaches_the_model(make_harness):
    asked: list[str] = []

    async def deny(name, args, why):
        asked.append(f"{name}: {why}")
        return False

    h = make_harness(approver=deny)
    result = await h.engine.submit("!shell echo hi")

    assert result.outcome == "answered"
    assert asked and asked[0].startswith("shell")
    denial = h.session.master[2].tool_results[0]
    assert denial.is_error and "denied" in denial.content.lower()


async def test_without_a_terminal_asking_means_deny(make_harness):
    h = make_harness(approver=None)

    await h.engine.submit("!shell echo hi")

    result = h.session.master[2].tool_results[0]
    assert result.is_error and "--yes" in result.content


async def test_an_approved_shell_call_runs(make_harness):
    async def allow(name, args, why):
        return True

    h = make_harness(approver=allow)
    await h.engine.submit("!shell echo bulkhead-ran-this")

    assert "bulkhead-ran-this" in h.session.master[2].tool_results[0].content


async def test_a_pretooluse_hook_blocks_with_its_reason(make_harness, tmp_path):
    script = tmp_path / "guard.sh"
    script.write_text("#!/bin/sh\ncat > /dev/null\necho 'no reading secrets here' >&2\nexit 2\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    h = make_harness(hooks=(HookSpec(event="PreToolUse", command=str(script), matcher="read_file"),))

    await h.engine.submit("!read notes.txt")

    result = h.session.master[2].tool_results[0]
    assert result.is_error and "no reading secrets here" in result.content
    runs = h.of_type("hook")
    assert runs and runs[0].decision == "block"
    stored = h.session.store.list_events(h.session.id, "hook")
    assert stored and stored[0]["data"]["decision"] == "block"


async def test_a_pretooluse_hook_printing_invalid_json_blocks_the_call(make_harness, tmp_path):
    script = tmp_path / "guard.sh"
    script.write_text('#!/bin/sh\ncat > /dev/null\necho \'{"decision": "block", "reason": "not today"\'\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    h = make_harness(
        approver=None,
        approval="never-ask",
        hooks=(HookSpec(event="PreToolUse", command=str(script), matcher="shell"),),
    )

    await h.engine.submit("!shell touch ran.txt")

    assert not (h.engine.workspace / "ran.txt").exists()
    result = h.session.master[2].tool_results[0]
    assert result.is_error and "invalid JSON" in result.content
    assert [run.decision for run in h.of_type("hook")] == ["block"]


async def test_a_pretooluse_hook_rewrites_the_tool_input(make_harness, tmp_path):
    script = tmp_path / "redirect.py"
    script.write_text(
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "assert data['tool_input']['path'] == 'secret.txt'\n"
        "print(json.dumps({'hookSpecificOutput': {'updatedInput': {'path': 'public.txt'}}}))\n"
    )
    h = make_harness(hooks=(HookSpec(event="PreToolUse", command=f"python3 {script}", matcher="Read"),))
    (h.engine.workspace / "secret.txt").write_text("the launch codes\n")
    (h.engine.workspace / "public.txt").write_text("the lunch menu\n")

    await h.engine.submit("!read secret.txt")

    result = h.session.master[2].tool_results[0]
    assert "the lunch menu" in result.content and "launch codes" not in result.content
    assert (
        h.session.master[1].tool_calls[0].args["path"] == "secret.txt"
    )  # what the model asked stays recorded
    notices = [e.text for e in h.of_type("notice") if e.code == "hook_input"]
    assert notices == ["A PreToolUse hook changed the input of read_file: now read_file path='public.txt'"]


async def test_a_rewritten_input_outside_the_workspace_still_asks(make_harness, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("outside\n")
    script = tmp_path / "redirect.sh"
    script.write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        f'echo \'{{"hookSpecificOutput": {{"updatedInput": {{"path": "{outside}"}}}}}}\'\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    asked: list[str] = []

    async def deny(name, args, why):
        asked.append(why)
        return False

    h = make_harness(approver=deny, hooks=(HookSpec(event="PreToolUse", command=str(script)),))
    (h.engine.workspace / "notes.txt").write_text("inside\n")

    await h.engine.submit("!read notes.txt")

    assert asked and str(outside) in asked[0]
    assert h.session.master[2].tool_results[0].is_error


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_at_mention_attaches_the_file_as_a_read(make_harness, provider, tmp_path):
    guard = tmp_path / "guard.sh"
    guard.write_text("#!/bin/sh\ncat > /dev/null\necho 'no reads' >&2\nexit 2\n")
    guard.chmod(guard.stat().st_mode | stat.S_IEXEC)
    asked: list[str] = []

    async def deny(name, args, why):
        asked.append(name)
        return False

    h = make_harness(
        provider, approval="ask", approver=deny, hooks=(HookSpec(event="PreToolUse", command=str(guard)),)
    )
    (h.engine.workspace / "notes.txt").write_text("alpha\nbeta\n")
    (h.engine.workspace / "src").mkdir()
    (h.engine.workspace / "src" / "main.py").write_text("print('hi')\n")

    result = await h.engine.submit("what is in @notes.txt, and @src/? (not @nowhere.txt or bob@example.com)")

    assert result.outcome == "answered", result.error
    assert [m.role for m in h.session.master] == ["user", "assistant", "tool", "tool", "assistant"]
    attach = h.session.master[1]
    assert attach.meta.origin == "mention"
    assert [(c.name, dict(c.args)) for c in attach.tool_calls] == [
        ("read_file", {"path": "notes.txt"}),
        ("list_dir", {"path": "src/"}),
    ]
    read, listing = (m.tool_results[0] for m in h.session.master[2:4])
    assert "alpha" in read.content and not read.is_error
    assert "main.py" in listing.content and not listing.is_error
    assert asked == [] and h.of_type("hook") == []  # your own mention: no approval, no hook
    assert "2 tool results" in h.session.master[-1].text  # the lab model saw both before answering
    from app.export import to_markdown

    assert "## Attached by the user (@)" in to_markdown(h.session)  # not shown as the model's call


@pytest.mark.parametrize("approve", [True, False])
async def test_a_mention_outside_the_workspace_asks_like_any_read_there(make_harness, tmp_path, approve):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("from outside\n")
    asked: list[str] = []

    async def answer(name, args, why):
        asked.append(why)
        return approve

    h = make_harness(approval="never-ask", approver=answer)

    await h.engine.submit(f"look at @{outside}")

    assert len(asked) == 1 and f"@{outside} is outside the workspace" in asked[0]
    result = h.session.master[2].tool_results[0]
    assert ("from outside" in result.content) is approve and result.is_error is not approve
    decisions = [(e.name, e.decision) for e in h.of_type("tool_approval")]
    assert decisions == [("read_file", "approved" if approve else "denied")]


async def test_only_the_typed_part_of_a_prompt_carries_mentions(make_harness):
    h = make_harness()
    (h.engine.workspace / "a.txt").write_text("a")
    (h.engine.workspace / "b.txt").write_text("b")

    await h.engine.submit("read @a.txt\n\npiped: @b.txt", typed="read @a.txt")

    assert [dict(c.args)["path"] for c in h.session.master[1].tool_calls] == ["a.txt"]


async def test_too_many_mentions_are_capped_with_a_notice(make_harness):
    h = make_harness(max_mentions=2)
    for name in "abc":
        (h.engine.workspace / f"{name}.txt").write_text(name)

    await h.engine.submit("@a.txt @b.txt @c.txt @a.txt")

    assert [dict(c.args)["path"] for c in h.session.master[1].tool_calls] == ["a.txt", "b.txt"]
    notice = [e.text for e in h.of_type("notice") if e.code == "mention"]
    assert notice == [
        "only the first 2 @mentions are attached (1 more left out; max_mentions in config.toml)"
    ]


async def test_max_mentions_zero_turns_mentions_off(make_harness):
    h = make_harness(max_mentions=0)
    (h.engine.workspace / "a.txt").write_text("a")

    await h.engine.submit("@a.txt")

    assert [m.role for m in h.session.master] == ["user", "assistant"]
    assert not [e for e in h.of_type("notice") if e.code == "mention"]


async def test_max_tokens_escalates_then_continues(make_harness):
    h = make_harness()

    result = await h.engine.submit("!cut")

    assert result.outcome == "answered", result.error
    continuation = [m for m in h.session.master if m.text == CONTINUATION]
    assert len(continuation) == 1
    sent = h.session.store.list_requests(h.session.id)
    assert len(sent) == 2
    assert h.of_type("answer")[-1].stop_reason == "end"


async def test_max_tokens_without_escalations_keeps_the_answer_partial(make_harness):
    h = make_harness(max_token_escalations=0)

    result = await h.engine.submit("!cut")

    assert result.outcome == "answered"
    assert h.session.master[-1].meta.partial
    assert h.of_type("answer")[-1].partial


async def test_esc_cancels_a_slow_stream_and_keeps_the_partial_answer(make_harness, lab):
    lab.configure(faults="slow@1", slow_pause=0.05)
    h = make_harness()
    seen = asyncio.Event()
    h.session.bus.subscribe(lambda e: seen.set() if e.type == "text" else None)

    task = asyncio.create_task(h.engine.submit("!big 8KB"))
    await asyncio.wait_for(seen.wait(), timeout=20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    last = h.session.master[-1]
    assert last.role == "assistant" and last.meta.partial and last.text
    assert h.of_type("turn_finished")[-1].outcome == "cancelled"
    assert not list(h.session.folder.glob("draft-*.txt"))


async def test_retry_after_a_partial_answer_asks_again(make_harness, lab):
    lab.configure(faults="cut@1")
    h = make_harness()
    assert (await h.engine.submit("tell me")).outcome == "partial"

    result = await h.engine.retry()

    assert result.outcome == "answered"
    assert not h.session.view.messages[-1].meta.partial
    assert any(m.meta.partial for m in h.session.master)  # the partial answer stays in the master log


async def test_a_draft_left_by_a_crash_becomes_a_partial_answer(make_harness):
    h = make_harness()
    (h.session.folder / "draft-m_cut_short.txt").write_text("half an answer")

    await h.engine.start()

    assert h.session.master[-1].text == "half an answer" and h.session.master[-1].meta.partial
    assert h.session.master[-1].id == "m_cut_short"
    assert not list(h.session.folder.glob("draft-*.txt"))


async def test_opening_a_long_session_measures_its_view_once(make_harness, monkeypatch):
    """The app reports on a session as it opens, then starts it: the start's ViewChanged carries the report's
    figure without building the request again — unless the view changed in between (a draft kept)."""
    h = make_harness()
    h.grow(50, 2_000)
    builds: list[int] = []  # messages of each request built (an empty one: the floor, system and tools)
    build = type(h.engine.provider).build

    def counted(provider, view, *args, **kwargs):
        if view:
            builds.append(len(view))
        return build(provider, view, *args, **kwargs)

    monkeypatch.setattr(type(h.engine.provider), "build", counted)
    report = h.engine.context_report()
    await h.engine.start(resumed=True)
    started = h.of_type("view")[-1]
    assert builds == [100] and started.predicted_bytes == report.predicted_bytes

    again = make_harness()
    again.grow(50, 2_000)
    (again.session.folder / "draft-m_cut.txt").write_text("half an answer")
    report = again.engine.context_report()
    await again.engine.start(resumed=True)
    started = again.of_type("view")[-1]
    assert started.predicted_bytes > report.predicted_bytes  # measured again, with the kept answer
    assert started.predicted_bytes == again.engine.measure(again.session.view.messages)


async def test_planned_compaction_when_the_window_fills(make_harness):
    h = make_harness(route_extra={"context_window": 40_000})
    h.grow(6, 20_000)  # ≈ 240 KB ≈ 60k tokens: over 85% of the usable window

    result = await h.engine.submit("carry on")

    assert result.outcome == "answered", result.error
    compactions = [e for e in h.of_type("compaction") if e.outcome == "applied"]
    assert compactions and compactions[0].trigger == "auto"
    assert compactions[0].bytes_after < compactions[0].bytes_before
    phases = [e.text for e in h.of_type("compaction_phase")]
    assert phases[0].startswith("📦 Compacting history")
    for key in {k for m in h.session.view.messages for k in markers_in(m.all_text())}:
        assert h.session.store.archive_get(key) is not None
    receipts = [json.loads(x) for x in h.session.receipts_path.read_text().splitlines()]
    assert receipts[-1]["trigger"] == "auto" and receipts[-1]["outcome"] == "applied"
    assert h.session.counters.compactions.get("auto") == 1


async def test_preflight_against_a_configured_cap(make_harness):
    h = make_harness(max_payload=64 * 1024)
    h.grow(6, 10_000)

    result = await h.engine.submit("next")

    assert result.outcome == "answered"
    notices = [e.text for e in h.of_type("notice") if e.code == "preflight"]
    assert (
        notices and notices[0].startswith("pre-flight: history") and "configured cap (64.0 KB)" in notices[0]
    )
    requests = h.session.store.list_requests(h.session.id)
    assert requests[-1]["actual_bytes"] <= 64 * 1024


async def test_no_cap_warning_fires_once(make_harness):
    h = make_harness(no_cap_warn_bytes=50_000, route_extra={"context_window": 2_000_000})
    h.grow(3, 10_000)

    await h.engine.submit("one")
    await h.engine.submit("two")

    warnings = [e for e in h.of_type("notice") if e.code == "no_cap_warning"]
    assert len(warnings) == 1 and "max_payload" in warnings[0].text


async def test_guided_compact_rewind_and_recall(make_harness, lab):
    h = make_harness()
    h.grow(8, 4_000)
    before = h.session.view

    outcome = await h.engine.compact("keep the decisions about the parser")

    assert outcome.changed and outcome.method in ("summary", "L3")
    summary_requests = [r for r in h.session.store.list_requests(h.session.id) if r["purpose"] == "summary"]
    assert summary_requests
    assert any(
        "keep the decisions about the parser" in (r.get("body_preview") or "") for r in summary_requests
    )
    assert h.session.counters.summarizer_calls >= 1
    keys = [k for m in h.session.view.messages for k in m.meta.archive_keys]
    assert keys

    recalled = h.engine.recall_into_view(f"please restore <<ccr:{keys[0]}>>")
    assert recalled is not None and recalled.meta.preserve_verbatim
    assert h.session.store.archive_get(keys[0]).content in recalled.text

    assert h.engine.rewind()
    assert [m.id for m in h.session.view.messages][: len(before)] == [m.id for m in before.messages]
    assert h.session.view.messages[-1].id == recalled.id  # what came after the compaction is kept


async def test_a_compaction_that_changes_nothing_is_skipped(make_harness):
    h = make_harness()
    h.grow(1, 100)
    views = len(h.session.views)

    await h.engine.compactor.run(trigger="auto", target_bytes=10**9)

    assert len(h.session.views) == views
    assert h.of_type("compaction")[-1].outcome == "skipped"


async def test_a_secret_never_reaches_the_database_or_records(make_harness, lab, tmp_path):
    h = make_harness()
    h.grow(2, 1_000)
    await h.engine.submit("!read nothing.txt")
    from tests.engine.conftest import FAKE_KEY

    database = h.session.store.path.read_bytes()
    wal = h.session.store.path.with_name(h.session.store.path.name + "-wal")
    blobs = [database, wal.read_bytes() if wal.exists() else b""]
    blobs += [p.read_bytes() for p in h.session.folder.rglob("*") if p.is_file()]
    assert all(FAKE_KEY.encode() not in blob for blob in blobs)
    records = h.session.store.list_requests(h.session.id)
    assert all(FAKE_KEY not in json.dumps(r) for r in records)
    assert any(v == "[redacted]" for r in records for v in r["request_headers"].values())
