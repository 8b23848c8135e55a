"""Property tests: for any realistic session and any chain of passes, the archive rules hold.

After every pass (and every chain, including L1/L2/L3, a summary by a fake summarizer and the
whole planned pipeline): every marker resolves, the master log + archive reproduce every
original string, pairing stays valid, the view starts with a user message after the system
messages, system messages are untouched, verbatim content is intact unless the quarter rule
applied, and markers are carried forward.
"""

from __future__ import annotations

import dataclasses
import os

from compaction_helpers import Builder, big_text, check_view, ctx_for, fake_summarizer, run
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from app.config import Settings
from app.engine.compaction.assistant_cut import cut_long_assistant
from app.engine.compaction.budget import enforce_budgets
from app.engine.compaction.context import content_bytes, merge_entries
from app.engine.compaction.dedup import dedup_reads
from app.engine.compaction.microcompact import microcompact
from app.engine.compaction.pairing import ensure_starts_with_user, pairing_problems, repair_pairing
from app.engine.compaction.pipeline import recovery_candidate, run_pipeline
from app.engine.compaction.summarize import summarize_pass
from app.engine.compaction.truncate import keep_recent, nuclear, shrink_to_fit
from app.model.archive import archive_key, marker
from app.model.messages import Image, Message, Text, ToolCall


def property_settings(examples: int):
    """No example database (nothing written to the repository); COMPACTION_EXAMPLES=N for a deeper run."""
    return settings(
        database=None,
        deadline=None,
        max_examples=int(os.environ.get("COMPACTION_EXAMPLES", examples)),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


SIZES = [0, 40, 700, 1200, 2900, 3100, 4500, 9000, 26000]
PATHS = ["app/x.py", "./app/x.py", "app/y.py", "README.md"]
small_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@st.composite
def sessions(draw):
    prior_contents = [big_text(draw(st.sampled_from([300, 2500, 7000])), f"prior{i}") for i in range(2)]
    prior = {archive_key(c): c for c in prior_contents}
    keys = list(prior)
    b = Builder()
    b.system("You are a test assistant. " + draw(small_text))
    if draw(st.booleans()):
        b.system("Project context: " + draw(small_text))
    for _ in range(draw(st.integers(1, 7))):
        text = draw(small_text) or "go"
        if draw(st.integers(0, 9)) == 0:
            text += f" /recall {marker(draw(st.sampled_from(keys)))}"
        b.user(text)
        if draw(st.integers(0, 12)) == 0:
            b.messages[-1] = dataclasses.replace(
                b.messages[-1],
                parts=b.messages[-1].parts
                + (Image("image/png", "iVBORw0KGgo" * draw(st.sampled_from([10, 400]))),),
            )
        for _step in range(draw(st.integers(0, 3))):
            kind = draw(
                st.sampled_from(["read", "read", "shell", "grep", "recall", "write", "parallel", "say"])
            )
            size = draw(st.sampled_from(SIZES))
            seed = draw(st.sampled_from(["a", "b", "ç"]))
            if kind == "read":
                offset = draw(st.sampled_from([None, 0, 10, 50]))
                limit = draw(st.sampled_from([None, 20, 100]))
                b.read(
                    draw(st.sampled_from(PATHS)),
                    big_text(size, seed),
                    offset,
                    limit,
                    is_error=draw(st.integers(0, 9)) == 0,
                )
            elif kind == "shell":
                b.tool("shell", {"command": "ls -la " + draw(small_text)}, big_text(size, seed))
            elif kind == "grep":
                b.tool("grep", {"pattern": "def ", "path": "app"}, big_text(size, seed))
            elif kind == "recall":
                key = draw(st.sampled_from(keys))
                b.tool("recall", {"keys": [f"ccr:{key}"]}, prior[key], verbatim=True)
            elif kind == "write":
                b.tool("write_file", {"path": "out.txt", "content": big_text(size, seed)}, "written")
            elif kind == "parallel":
                c1 = ToolCall(f"p{len(b.messages)}a", "shell", {"command": "pwd"})
                c2 = ToolCall(f"p{len(b.messages)}b", "read_file", {"path": draw(st.sampled_from(PATHS))})
                b.assistant("two at once", [c1, c2])
                b.result(c1.id, big_text(size, seed))
                b.result(c2.id, big_text(draw(st.sampled_from(SIZES)), seed))
            else:
                b.assistant(big_text(size, "say"))
        b.assistant(big_text(draw(st.sampled_from([20, 600, 5200, 12000])), "answer"))
    return b.view, prior


OPS = [
    "microcompact",
    "dedup",
    "budget",
    "budget_half",
    "L1",
    "L2",
    "L3",
    "shrink",
    "summary",
    "refused",
    "repair",
    "start",
    "assistant_cut",
    "keep_recent",
    "nuclear",
    "pipeline",
    "pipeline_nosum",
]


@st.composite
def scenario(draw):
    view, prior = draw(sessions())
    ops = draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=4))
    settings_ = Settings(
        emergency_keep_messages=draw(st.sampled_from([2, 5, 10])),
        nuclear_keep_messages=draw(st.sampled_from([1, 2, 4])),
        summary_keep_messages=draw(st.sampled_from([2, 6])),
        nuclear_message_chars=draw(st.sampled_from([1000, 4000])),
    )
    extra_turns = draw(st.integers(0, 5))
    target_ratio = draw(st.sampled_from([None, 0.05, 0.2, 0.5, 0.9, 1.5]))
    return view, prior, ops, settings_, extra_turns, target_ratio


def apply(op, view, ctx):
    if op == "microcompact":
        return microcompact(view, ctx)
    if op == "dedup":
        return dedup_reads(view, ctx)
    if op == "budget":
        return enforce_budgets(view, ctx)
    if op == "budget_half":
        return enforce_budgets(view, dataclasses.replace(ctx, budget_scale=0.05))
    if op in ("L1", "L2", "L3"):
        return recovery_candidate(int(op[1]), view, ctx)
    if op == "shrink":
        return shrink_to_fit(view, ctx)
    if op == "summary":
        return run(summarize_pass(view, ctx, summarizer=fake_summarizer(), window_tokens=8000))
    if op == "refused":
        return run(
            summarize_pass(
                view, ctx, summarizer=fake_summarizer("I can't help with that."), window_tokens=8000
            )
        )
    if op == "repair":
        return repair_pairing(view, ctx)
    if op == "start":
        return ensure_starts_with_user(view, ctx)
    if op == "assistant_cut":
        return cut_long_assistant(view, ctx)
    if op == "keep_recent":
        return keep_recent(view, ctx)
    if op == "nuclear":
        return nuclear(view, ctx)
    if op == "pipeline":
        return run(run_pipeline(view, ctx, trigger="auto", summarizer=fake_summarizer(), window_tokens=8000))
    if op == "pipeline_nosum":
        return run(run_pipeline(view, ctx, trigger="auto", window_tokens=8000))
    raise AssertionError(op)


@property_settings(120)
@given(scenario())
def test_any_chain_of_passes_keeps_the_archive_rules(case):
    master, prior, ops, settings_, extra_turns, target_ratio = case
    assert pairing_problems(master) == []
    view = master
    entries: list = []
    may_move = False
    note(
        f"ops={ops} target_ratio={target_ratio} extra_turns={extra_turns} settings={settings_.emergency_keep_messages},"
        f"{settings_.nuclear_keep_messages},{settings_.summary_keep_messages},{settings_.nuclear_message_chars}"
    )
    note(
        "view: "
        + " | ".join(
            f"{m.role}:{m.meta.origin}:{m.char_size()}{'V' if m.meta.preserve_verbatim else ''}"
            for m in master
        )
    )
    for op in ops:
        base = ctx_for(master, settings=settings_, prior=prior)
        target = None if target_ratio is None else int(base.measure(view) * target_ratio)
        ctx = dataclasses.replace(base, turn=base.turn + extra_turns, target_bytes=target)
        ctx = ctx.with_entries(entries)
        result = apply(op, view, ctx)
        assert all(isinstance(m, Message) for m in result.messages)
        verbatim_total = sum(content_bytes(m) + 200 for m in view if m.meta.preserve_verbatim)
        may_move = may_move or (target is not None and verbatim_total > target // 4)
        entries = merge_entries(entries, result.entries)
        event(f"{op} changed={[m.id for m in view] != [m.id for m in result.messages]}")
        check_view(master, view, result.messages, entries, prior, verbatim_may_move=may_move)
        view = result.messages


@st.composite
def broken_sessions(draw):
    view, prior = draw(sessions())
    view = list(view)
    for _ in range(draw(st.integers(1, 4))):
        candidates = [i for i, m in enumerate(view) if m.role != "system"]
        if not candidates:
            break
        del view[draw(st.sampled_from(candidates))]
    return tuple(view), prior


@property_settings(80)
@given(broken_sessions(), st.sampled_from(["repair", "L1", "L2", "L3"]))
def test_repair_makes_any_broken_view_valid(case, op):
    view, prior = case
    ctx = ctx_for(view, prior=prior, target=20_000)
    if op == "repair":
        repaired = repair_pairing(view, ctx)
        result = ensure_starts_with_user(repaired.messages, ctx)
        entries = merge_entries(repaired.entries, result.entries)
    else:
        result = recovery_candidate(int(op[1]), view, ctx)
        entries = result.entries
    assert pairing_problems(result.messages) == []
    # lossless and resolvable even when the input was broken (verbatim may be re-stubbed at L3)
    check_view(view, view, result.messages, entries, prior, verbatim_may_move=True)


def test_text_parts_survive_in_simple_chain():
    b = Builder()
    b.system()
    b.user("hi")
    b.assistant("hello", [])
    view = b.view
    ctx = ctx_for(view)
    for op in OPS:
        result = apply(op, view, ctx)
        assert [m.id for m in result.messages] == [m.id for m in view], op
        assert result.messages[1].parts == (Text("hi"),)
