"""Recovery scenarios through the lab and the real SDKs (issue 5, Must show)."""

from __future__ import annotations

import json
import math

import pytest

from app.engine.prompts import PAYLOAD_NOTICE_PREFIX
from app.model.archive import markers_in
from app.sizes import KIB

PROVIDERS = ("anthropic", "openai", "bedrock")


def _requests(h):
    return h.session.store.list_requests(h.session.id)


def _notice_count(h) -> int:
    """Payload notices bulkhead put in the view (the lab model's echo of one does not count)."""
    return sum(m.all_text().count(PAYLOAD_NOTICE_PREFIX) for m in h.session.view.messages if m.role == "user")


def _markers_resolve(h) -> None:
    for message in h.session.view.messages:
        for key in markers_in(message.all_text()):
            assert h.session.store.archive_get(key) is not None, f"marker {key} does not resolve"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_413_at_128k_learns_the_cap_and_recovers(make_harness, lab, provider):
    lab.configure(gateway="nginx", cap="128KB")
    h = make_harness(provider)
    h.grow(10, 10_000)
    master_before = [m.id for m in h.session.master]

    result = await h.engine.submit("what did we discuss?")

    assert result.outcome == "answered", result.error
    assert "Lab model" in result.text
    records = _requests(h)
    rejected = records[0]
    assert rejected["status"] == 413 and rejected["kind"] == "payload_too_large"
    assert any("413" in e for e in rejected["evidence"])
    learned = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    assert learned.cap_bytes == math.floor(0.75 * rejected["actual_bytes"])
    assert [e.cap_bytes for e in h.of_type("cap_learned")][0] == learned.cap_bytes
    final = records[-1]
    assert final["outcome"] == "ok" and final["actual_bytes"] <= 128 * KIB
    assert final["actual_bytes"] <= learned.cap_bytes
    # The master log is untouched (only the new prompt and answer joined it); the view moved.
    assert [m.id for m in h.session.master][: len(master_before)] == master_before
    assert h.session.view.reason.startswith("recovery:L")
    assert _notice_count(h) == 1
    _markers_resolve(h)
    steps = h.of_type("recovery")
    assert steps[-1].outcome == "succeeded"
    assert h.session.counters.recoveries_ok == 1
    receipts = [json.loads(line) for line in h.session.receipts_path.read_text().splitlines()]
    assert any(r["trigger"] == "recovery" and r["retry_success"] is True for r in receipts)


@pytest.mark.parametrize(
    "provider,gateway",
    [("anthropic", "cloudflare"), ("openai", "akamai"), ("bedrock", "aws-waf"), ("bedrock", "cloudflare")],
)
async def test_waf_403_is_recovered(make_harness, lab, provider, gateway):
    lab.configure(gateway=gateway, cap="96KB")
    h = make_harness(provider)
    h.grow(8, 10_000)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    first = _requests(h)[0]
    assert first["status"] == 403 and first["kind"] == "waf_block"
    assert h.of_type("rejection")[0].payload_related
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is not None


async def test_reset_on_a_big_request_is_payload_related_and_recovered(make_harness, lab):
    lab.configure(gateway="reset", cap="400KB")
    h = make_harness("anthropic", route_extra={"context_window": 2_000_000})
    h.grow(6, 50_000)  # ≈ 600 KB, over the 500,000-byte drop threshold

    result = await h.engine.submit("and now?")

    assert result.outcome == "answered", result.error
    first = _requests(h)[0]
    assert first["kind"] == "connection_drop"
    assert h.sleeps == []  # not retried as transient: recovered by the ladder
    assert h.session.counters.recoveries_ok == 1


async def test_reset_on_a_small_request_is_retried_without_compaction(make_harness, lab):
    lab.configure(faults="drop@1")
    h = make_harness("openai")
    h.grow(2, 2_000)
    view_before = h.session.view.id

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    records = _requests(h)
    assert records[0]["outcome"] == "failed" and records[0]["kind"] == "other"
    assert records[1]["outcome"] == "ok"
    assert len(h.sleeps) == 1
    assert h.session.view.id == view_before  # no compaction, no new view
    assert h.of_type("recovery") == []


@pytest.mark.parametrize(
    ("faults", "advice"),
    [
        ("529:1", "the provider is overloaded: /retry in a few minutes"),
        (
            "drop:1",
            "check that {url}/v1/chat/completions is reachable (network, VPN, HTTPS_PROXY), then /retry",
        ),
    ],
)
async def test_when_retries_run_out_the_error_says_what_to_do(make_harness, lab, faults, advice):
    lab.configure(faults=faults)
    h = make_harness("openai", retry_max_attempts=2)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert len(h.sleeps) == 2 and len(_requests(h)) == 3
    assert "still failing after 2 retries: " + advice.format(url=lab.url) in result.error
    assert "never compact" not in result.error  # the plan is not advice
    assert [m.role for m in h.session.master] == ["user"]  # the prompt is kept for /retry


async def test_with_retries_off_the_error_says_so(make_harness, lab):
    lab.configure(faults="500:1")
    h = make_harness("anthropic", retry_max_attempts=0)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed" and h.sleeps == []
    assert "not retried (retry_max_attempts = 0): the provider or gateway keeps failing" in result.error


async def test_system_prompt_bigger_than_the_rejection_fails_fast(make_harness, lab):
    lab.configure(gateway="nginx", cap="32KB")
    h = make_harness("anthropic", system="You are a careful assistant. " * 2000)  # ≈ 58 KB of system prompt
    # This gateway already refused a 40 KB request here (remembered per endpoint, as in a past session).
    h.engine.state.learn_cap(
        h.engine.route.endpoint_id,
        30_000,
        rejected_bytes=40_000,
        kind="payload_too_large",
        reason="413 from nginx",
    )
    master_before = len(h.session.master)

    result = await h.engine.submit("hi")

    assert result.outcome == "failed"
    # Predicted over the learned cap (30,000) by its base alone: never sent, and the turn says why.
    assert result.error.startswith("Not sent: the request base alone")
    assert "no compaction of the history can make the request fit" in result.error
    assert _requests(h) == [] and lab.requests() == []
    assert h.sleeps == []
    assert len(h.session.master) == master_before + 1  # the prompt is kept, nothing else changed


async def test_a_base_bigger_than_a_fresh_rejection_fails_fast(make_harness, lab):
    """No cap known yet: the request goes, the gateway refuses it, and the floor diagnosis stops the ladder."""
    lab.configure(gateway="nginx", cap="32KB")
    h = make_harness("anthropic", system="You are a careful assistant. " * 2000)  # ≈ 58 KB of system prompt

    result = await h.engine.submit("hi")

    assert result.outcome == "failed"
    assert "non-compactable request base" in result.error
    assert len(_requests(h)) == 1  # zero retries
    assert h.of_type("recovery")[-1].outcome == "refused"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_context_overflow_in_each_wording_is_recovered(make_harness, lab, provider):
    lab.configure(window=30_000)
    h = make_harness(provider, route_extra={"context_window": 200_000})  # bulkhead believes the catalog
    h.grow(10, 16_000)  # ≈ 320 KB ≈ 80k tokens: over the lab's 30k window

    result = await h.engine.submit("summarise")

    assert result.outcome == "answered", result.error
    first = _requests(h)[0]
    assert first["kind"] == "context_overflow"
    assert h.session.counters.recoveries_ok == 1
    assert _notice_count(h) == 0  # the payload notice is for payload rejections only


async def test_visible_output_then_drop_is_not_retried_and_kept_partial(make_harness, lab):
    lab.configure(faults="cut@1")
    h = make_harness("anthropic")

    result = await h.engine.submit("tell me a long story")

    assert result.outcome == "partial"
    assert len(_requests(h)) == 1 and h.sleeps == []
    last = h.session.master[-1]
    assert last.role == "assistant" and last.meta.partial and last.text
    assert h.of_type("text")  # it really was visible


async def test_an_attempt_that_would_not_shrink_is_not_sent(make_harness, lab):
    # One huge user message: L1 and L2 cannot shrink it (L1 cuts tools/assistant, L2 keeps the last 10).
    lab.configure(gateway="nginx", cap="64KB")
    h = make_harness("anthropic")

    result = await h.engine.submit("x" * 200_000)

    steps = h.of_type("recovery")
    not_sent = [s for s in steps if s.outcome in ("not_smaller", "over_cap")]
    assert not_sent, steps
    sent = [s for s in steps if s.outcome == "sending"]
    assert len(_requests(h)) == 1 + len(sent)
    assert result.outcome == "answered", result.error  # L3 shrinks the message itself (archived first)
    _markers_resolve(h)


async def test_all_attempts_failing_restore_the_previous_view(make_harness, lab):
    lab.configure(gateway="nginx", cap="2KB")  # nothing bulkhead can send fits
    h = make_harness("anthropic", tools=())
    h.grow(3, 3_000)
    view_before = h.session.view
    master_before = [m.id for m in h.session.master]

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert h.session.view.id == view_before.id
    assert [m.id for m in h.session.view.messages][:-1] == [m.id for m in view_before.messages]
    assert [m.id for m in h.session.master][:-1] == master_before
    assert h.session.counters.recoveries_failed == 1


async def test_the_payload_notice_is_never_injected_twice(make_harness, lab):
    lab.configure(gateway="nginx", cap="128KB")
    h = make_harness("anthropic")
    h.grow(10, 10_000)
    assert (await h.engine.submit("first")).outcome == "answered"
    assert _notice_count(h) == 1
    h.engine.reset_cap()  # forget the learned cap so the next growth is rejected again
    h.grow(10, 10_000)

    assert (await h.engine.submit("second")).outcome == "answered"

    assert h.session.counters.recoveries_ok == 2
    assert _notice_count(h) <= 1
    assert (
        sum(PAYLOAD_NOTICE_PREFIX in m.text for m in h.session.view.messages if m.meta.origin == "notice")
        <= 1
    )
