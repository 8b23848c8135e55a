"""Issue 38 item 1: every request bulkhead sends fits the effective byte cap of its route; one predicted over
it is never sent.

Each test wraps the transport of every provider the engine uses (`stream`, `send_compaction`) and records,
for each request that really goes out, its purpose, its predicted bytes and its route's effective cap at that
moment. The last test runs the scenarios that send each purpose — chat, continuation, recovery attempt,
summary (on the session's route and on the summarizer route), native compaction — and checks that every one
was seen under the cap, so none passes by not happening (on its own, in any order).
"""

from __future__ import annotations

import dataclasses

import pytest

from app.config import Route
from app.engine.cap_guard import OverCap
from app.sizes import KIB
from tests.engine.conftest import MODELS
from tests.engine.real_gateways import start_nginx


class SentLog:
    """What went out through the wrapped transports: (purpose, predicted bytes, cap then, route)."""

    def __init__(self, engine) -> None:
        self.engine = engine
        self.sent: list[tuple[str, int, int | None, str]] = []
        self.wrapped: set[int] = set()
        self.wrap(engine.provider)

    def wrap(self, provider) -> None:
        if id(provider) in self.wrapped:
            return
        self.wrapped.add(id(provider))
        stream, send_compaction = provider.stream, provider.send_compaction
        default_max_tokens = self.engine.max_tokens

        def note(request) -> None:
            purpose = request.purpose
            if purpose == "chat" and request.max_tokens > default_max_tokens:
                purpose = "continuation"
            elif purpose == "chat" and request.body.get("messages") and _is_recovery(request):
                purpose = "recovery"
            cap = self.engine.route_cap(provider.route).bytes
            self.sent.append((purpose, request.predicted_bytes, cap, provider.route.name))

        def wrapped_stream(request):
            note(request)
            return stream(request)

        async def wrapped_compaction(request):
            note(request)
            return await send_compaction(request)

        provider.stream = wrapped_stream
        provider.send_compaction = wrapped_compaction

    def wrap_summarizer(self) -> None:
        self.wrap(self.engine.summarizer()[0])

    def assert_all_under_cap(self) -> None:
        assert self.sent, "nothing was sent"
        over = [entry for entry in self.sent if entry[2] is not None and entry[1] > entry[2]]
        assert over == [], f"sent over the effective cap: {over}"

    def purposes(self) -> list[str]:
        return [purpose for purpose, *_ in self.sent]

    def seen(self) -> set[str]:
        """Each purpose sent, marked with its route when that is not the session's ("summary@small")."""
        session_route = self.engine.route.name
        return {p if route == session_route else f"{p}@{route}" for p, _, _, route in self.sent}


def _is_recovery(request) -> bool:
    from app.engine.prompts import PAYLOAD_NOTICE_PREFIX

    return PAYLOAD_NOTICE_PREFIX in str(request.body.get("messages", ""))[-20_000:]


def _with_summarizer_route(h, lab, name: str, **extra) -> Route:
    route = Route(name=name, provider="anthropic", model=MODELS["anthropic"], base_url=lab.url, **extra)
    settings = h.engine.settings
    h.engine.settings = dataclasses.replace(
        settings, routes={**settings.routes, name: route}, compact_model=name
    )
    h.engine._summarizer = None
    return route


def _notices(h, code: str) -> list[str]:
    return [n.text for n in h.of_type("notice") if n.code == code]


NGINX_100K = """    server {
        listen 127.0.0.1:{port};
        client_max_body_size 100k;
        location / { proxy_pass http://127.0.0.1:{upstream}; proxy_http_version 1.1; proxy_buffering off; }
    }"""


async def test_the_summary_of_a_130kb_session_fits_a_100kb_cap_behind_real_nginx(make_harness, lab, tmp_path):
    """The issue's reproduction: a 40-turn ~130 KB session continued on a route with max_payload = "100KB"
    behind nginx (client_max_body_size 100k). The summary request used to go at ~127 KB (half the window was
    its only bound) and get a 413; now it is fitted under the cap, and nginx takes it."""
    folder = tmp_path / "nginx"
    folder.mkdir()
    gateway = start_nginx(folder, lab.port, NGINX_100K)
    try:
        h = make_harness("anthropic", base_url=gateway.url, route_extra={"max_payload": 100 * KIB})
        log = SentLog(h.engine)
        h.grow(20, 3_200)  # 40 messages
        assert h.engine.measure(h.session.view.messages) > 130_000

        result = await h.engine.submit("continue")

        assert result.outcome == "answered", result.error
        records = h.session.store.list_requests(h.session.id)
        summary = [r for r in records if r["purpose"] == "summary"]
        assert len(summary) == 1 and summary[0]["status"] == 200
        assert 80 * KIB < summary[0]["actual_bytes"] <= 100 * KIB  # as much input as fits, no more
        assert all(r["status"] == 200 for r in records), [(r["purpose"], r["status"]) for r in records]
        log.assert_all_under_cap()
        assert "summary" in log.purposes() and "chat" in log.purposes()
    finally:
        gateway.stop()


async def test_summary_request_fits_the_lab_nginx_cap_that_refused_before(make_harness, lab):
    """Same through the lab's nginx profile: no 413 at all, the compaction is a summary, not L3."""
    await _summary_behind_the_lab_nginx(make_harness, lab)


async def _summary_behind_the_lab_nginx(make_harness, lab) -> SentLog:
    lab.configure(gateway="nginx", cap="100KB")
    h = make_harness("openai", route_extra={"max_payload": 100 * KIB})
    log = SentLog(h.engine)
    h.grow(20, 3_200)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    assert [c.method for c in h.of_type("compaction")] == ["summary"]
    assert h.of_type("rejection") == []
    log.assert_all_under_cap()
    return log


async def test_summary_on_the_summarizer_route_fits_its_own_tighter_cap(make_harness, lab):
    """compact_model sits behind another gateway with a 40 KB cap: the summary request is fitted under that
    cap (not the session's 100 KB)."""
    await _summary_on_the_summarizer_route(make_harness, lab)


async def _summary_on_the_summarizer_route(make_harness, lab) -> SentLog:
    h = make_harness("anthropic", route_extra={"max_payload": 100 * KIB})
    _with_summarizer_route(h, lab, "small", max_payload=40 * KIB)
    log = SentLog(h.engine)
    log.wrap_summarizer()
    h.grow(20, 3_200)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    sent = [(p, size, cap, route) for p, size, cap, route in log.sent if p == "summary"]
    assert len(sent) == 1 and sent[0][3] == "small" and 30 * KIB < sent[0][1] <= 40 * KIB
    log.assert_all_under_cap()
    return log


async def test_a_summarizer_route_without_room_leaves_the_summary_to_the_sessions_route(make_harness, lab):
    """compact_model's cap (12 KB) leaves no room for the summary input at its minimum (20,000 chars): the
    summary is written on the session's route, and the compaction says so."""
    h = make_harness("anthropic", route_extra={"max_payload": 100 * KIB})
    _with_summarizer_route(h, lab, "tiny", max_payload=12 * KIB)
    log = SentLog(h.engine)
    log.wrap_summarizer()
    h.grow(20, 3_200)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    assert [route for p, _, _, route in log.sent if p == "summary"] == ["t"]
    phases = [e.text for e in h.of_type("compaction_phase") if e.phase == "summary_applied"]
    assert phases and "on route t (route tiny's cap (12.0 KB) leaves no room" in phases[0]
    log.assert_all_under_cap()


async def test_no_room_for_a_summary_anywhere_falls_back_to_l3_with_a_notice(make_harness, lab):
    """A 16 KB cap leaves no room for 20,000 chars of summary input: nothing is asked, L3 compacts, and a
    notice says why and what to change."""
    h = make_harness("anthropic", route_extra={"max_payload": 16 * KIB})
    log = SentLog(h.engine)
    h.grow(10, 3_200)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    assert "summary" not in log.purposes()
    assert [c.method for c in h.of_type("compaction")] == ["L3"]
    notice = _notices(h, "summary_no_room")
    assert notice and "route t's cap (16.0 KB) leaves no room for the summary input" in notice[0]
    assert "Set compact_model to a route with more room, or raise max_payload" in notice[0]
    log.assert_all_under_cap()


async def test_a_summary_refused_by_the_gateway_teaches_a_cap_and_the_retry_fits_it(make_harness, lab):
    """No cap known; the lab's nginx refuses bodies over 64 KB. The chat request is refused and recovered; a
    manual /compact then asks for a summary: it goes under the learned cap."""
    await _summary_after_a_refusal(make_harness, lab)


async def _summary_after_a_refusal(make_harness, lab) -> SentLog:
    lab.configure(gateway="nginx", cap="64KB")
    h = make_harness("anthropic")
    log = SentLog(h.engine)
    h.grow(12, 3_200)

    result = await h.engine.submit("continue")
    assert result.outcome == "answered", result.error
    h.grow(12, 3_200)  # the history grows again past what the gateway takes
    compacted = await h.engine.compact()

    assert compacted is not None and compacted.method == "summary"
    learned = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    summaries = [(size, cap) for p, size, cap, _ in log.sent if p == "summary"]
    assert summaries and all(size <= learned.cap_bytes for size, _ in summaries)
    assert "recovery" in log.purposes()
    log.assert_all_under_cap()
    return log


async def test_a_continuation_near_the_cap_fits_it(make_harness, lab):
    """An answer cut at max_tokens is continued with doubled max_tokens: that request is under the cap too."""
    await _continuation_near_the_cap(make_harness, lab)


async def _continuation_near_the_cap(make_harness, lab) -> SentLog:
    h = make_harness("anthropic", route_extra={"max_payload": 64 * KIB}, max_output_tokens=256)
    log = SentLog(h.engine)
    h.grow(3, 8_000)  # ≈ 48 KB, under 85% of the cap

    result = await h.engine.submit("!cut")

    assert result.outcome == "answered", result.error
    assert "continuation" in log.purposes()
    log.assert_all_under_cap()
    return log


async def test_native_compaction_goes_only_under_the_cap(make_harness, lab):
    await _native_compaction_under_the_cap(make_harness, lab)


async def _native_compaction_under_the_cap(make_harness, lab) -> SentLog:
    h = make_harness(
        "anthropic", context_engine="provider", provider_compact_threshold=10_000_000, max_payload=64 * KIB
    )
    log = SentLog(h.engine)
    h.grow(7, 4_000)

    assert (await h.engine.submit("and the next step?")).outcome == "answered"
    assert "compact" in log.purposes()
    h.grow(8, 8_000)  # now the history it would carry is twice the cap: not sent, compacted locally
    assert (await h.engine.submit("and now?")).outcome == "answered"
    assert log.purposes().count("compact") == 1
    log.assert_all_under_cap()
    return log


async def test_a_request_over_the_cap_after_a_blocked_compaction_is_not_sent(make_harness, lab, tmp_path):
    """A PreCompact hook blocks every compaction: the request over the cap is never sent, the turn says why,
    and the conversation is intact."""
    from app.config import HookSpec

    h = make_harness(
        "anthropic",
        route_extra={"max_payload": 64 * KIB},
        hooks=(HookSpec("PreCompact", "echo 'not now' >&2; exit 2"),),
    )
    log = SentLog(h.engine)
    h.grow(6, 8_000)  # ≈ 96 KB
    master = len(h.session.master)

    result = await h.engine.submit("go on")

    assert result.outcome == "failed"
    assert result.error.startswith("Not sent: the request (")
    assert "a PreCompact hook blocked the compaction" in result.error
    assert log.sent == [] and lab.requests() == []
    assert len(h.session.master) == master + 1  # the prompt is kept for /retry


async def test_the_sender_refuses_a_request_over_the_cap(make_harness, lab):
    """The last check, below every caller: the sender raises OverCap and nothing reaches the wire."""
    h = make_harness("anthropic", route_extra={"max_payload": 8 * KIB})
    h.grow(2, 8_000)
    request = h.engine.provider.build(
        h.session.view.messages, h.engine.system, h.engine.tools, max_tokens=100
    )

    with pytest.raises(OverCap) as raised:
        await h.engine.sender.send(request)

    assert lab.requests() == [] and h.session.store.list_requests(h.session.id) == []
    assert "is over the configured cap of route t (8.0 KB" in str(raised.value)


async def test_every_purpose_goes_out_under_the_cap(make_harness, lab):
    """Every purpose went out at least once, each under its route's effective cap (none is vacuous): the
    scenarios above that send them, run here in one test so it holds alone and in any order. The MCP context
    engine's call is checked in tests/mcp/test_mcp_context_engine.py."""
    seen: set[str] = set()
    for scenario in (
        _summary_behind_the_lab_nginx,
        _summary_on_the_summarizer_route,
        _summary_after_a_refusal,
        _continuation_near_the_cap,
        _native_compaction_under_the_cap,
    ):
        lab.configure(gateway="none", cap=None, window=None, faults=None, seed=0)
        seen |= (await scenario(make_harness, lab)).seen()
    assert {"chat", "continuation", "recovery", "summary", "summary@small", "compact"} <= seen, seen
