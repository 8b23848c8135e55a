"""Issue 38 item 9: a capability profile per endpoint — refused betas (dropped, retried once, remembered),
header limits, content blocks, streaming quirks (buffered SSE, idle cuts behind real nginx), proxy hops —
learned from real requests against the lab and nginx, and read back by the next session."""

from __future__ import annotations

import pytest

from app.engine.block_cause import judge
from app.engine.failure_hops import Hop, HopKind
from app.engine.failures import Failure
from app.engine.profile_evidence import on_failure
from app.engine.resets import SizeEvidence
from app.gateway_profile import (
    describe_profile,
    load_profile,
    profile_lines,
    record_content_block,
)
from app.state import State
from tests.engine.real_gateways import start_nginx


def _requests(h) -> list[dict]:
    return h.session.store.list_requests(h.session.id)


@pytest.mark.parametrize(("gateway", "how"), [("beta-refuse", "refused"), ("beta-strip", "stripped")])
async def test_a_refused_or_stripped_beta_is_dropped_retried_once_and_remembered(
    make_harness, lab, gateway, how
):
    lab.configure(gateway=gateway)
    h = make_harness("anthropic", context_engine="provider")

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    records = _requests(h)
    assert [r["status"] for r in records] == [400, 200]  # one refusal, one retry without the beta
    assert "context_management" not in str(records[1].get("body_preview", ""))
    seen = lab.requests()
    assert seen[-1]["beta"] == "" and seen[-1]["verdict"] == "passed"
    profile = load_profile(h.engine.state, h.engine.route.endpoint_id)
    assert "context-management-2025-06-27" in profile.refused_betas
    assert {b["how"] for b in profile.learned.betas} == {how}
    notice = [n.text for n in h.of_type("notice") if n.code == "beta_refused"]
    assert notice and "stops sending it there" in notice[0]

    # the next session on this endpoint never sends it: no refusal at all
    lab.clear_requests()
    again = make_harness("anthropic", context_engine="provider")
    assert (await again.engine.submit("hi again")).outcome == "answered"
    assert [r["status"] for r in _requests(again)] == [200] and lab.requests()[-1]["beta"] == ""


async def test_without_betas_nothing_changes_behind_a_beta_refusing_gateway(make_harness, lab):
    lab.configure(gateway="beta-refuse")
    h = make_harness("anthropic")  # context_engine = "local": no beta header is sent

    assert (await h.engine.submit("hello")).outcome == "answered"
    assert [r["status"] for r in _requests(h)] == [200]
    assert load_profile(h.engine.state, h.engine.route.endpoint_id).empty


async def test_a_beta_refusal_is_retried_once_only(make_harness, lab, monkeypatch):
    """A gateway that refuses the request again without the beta: no loop — the second 400 is the answer."""
    lab.configure(gateway="beta-refuse")
    h = make_harness("anthropic", context_engine="provider")
    monkeypatch.setattr(type(h.engine.provider), "chat_headers", lambda self: {"anthropic-beta": "x-always"})
    h.engine.provider._call_arguments = lambda request, original=h.engine.provider._call_arguments: {  # type: ignore[method-assign]
        **original(request),
        "extra_headers": {"anthropic-beta": "x-always"},
    }

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert [r["status"] for r in _requests(h)] == [400, 400]


async def test_a_header_limit_is_remembered(make_harness, lab):
    lab.configure(gateway="header-431", cap=4096)
    h = make_harness("anthropic", api_key="sk-ant-" + "k" * 6000)

    assert (await h.engine.submit("hi")).outcome == "failed"

    limit = load_profile(h.engine.state, h.engine.route.endpoint_id).learned.header_limit
    assert limit is not None and limit["refused_bytes"] > 6000


def test_a_judged_content_block_and_the_failures_hop_are_recorded(tmp_path):
    """Only a refusal judged content (app.engine.block_cause) is a content block, with why, who and the
    page's incident ID; the classifier's typed hop (Failure.hop) is kept by name; the endpoint itself is
    no hop."""
    state = State(tmp_path / "state.toml")
    endpoint = "anthropic http://gw"
    apache = Hop(HopKind.GATEWAY, "apache", "Apache", evidence=("header server: Apache (Apache)",))
    waf = Failure(
        kind="waf_block", status=403, reason="Rejected by a WAF", evidence=("status 403",), hop=apache
    )
    accepted, undecided = SizeEvidence(), SizeEvidence()
    accepted.accepted(50_000)

    def judged(sizes):
        return judge(
            waf,
            request_bytes=20_000,
            accepted_max=sizes.accepted_max,
            floor_bytes=None,
            body="<html><body>Reference #18.2d351ab8.1700000000.3f2a1b</body></html>",
        )

    on_failure(state, endpoint, judged(undecided))  # nothing tells size from content: no content block
    assert load_profile(state, endpoint).learned.content_blocks == ()
    on_failure(state, endpoint, judged(accepted))
    on_failure(state, endpoint, judged(accepted))
    squid = Hop(
        HopKind.FORWARD_PROXY,
        "squid",
        "Squid (the proxy at 127.0.0.1:3128, from HTTP_PROXY)",
        "127.0.0.1:3128",
        "HTTP_PROXY",
        "ERR_ACCESS_DENIED",
        ("header X-Squid-Error: ERR_ACCESS_DENIED 0",),
    )
    on_failure(state, endpoint, Failure(kind="auth", status=403, hop=squid))
    nothing_there = Hop(HopKind.ENDPOINT, None, "127.0.0.1:9", "127.0.0.1:9", "base_url")
    on_failure(state, endpoint, Failure(kind="other", hop=nothing_there))

    profile = load_profile(state, endpoint)
    (block,) = profile.learned.content_blocks
    assert block["count"] == 2 and block["gateway"] == "Apache (ModSecurity or a similar filter)"
    assert block["incident_id"] == "reference 18.2d351ab8.1700000000.3f2a1b"
    assert "accepted 48.8 KB before and refused 19.5 KB now" in block["why"]
    hops = [(h["name"], h["kind"], h.get("error"), h["count"]) for h in profile.learned.hops]
    assert hops == [
        ("Apache", "gateway", None, 3),  # every refusal named it, the undecided one too
        ("Squid (the proxy at 127.0.0.1:3128, from HTTP_PROXY)", "forward-proxy", "ERR_ACCESS_DENIED", 1),
    ]
    text = "\n".join(f"{a}: {b}" for a, b in describe_profile(profile))
    assert (
        "content block: waf_block 403 ×2 by Apache (ModSecurity or a similar filter), reference 18.2d" in text
    )
    assert (
        "proxy hop: Squid (the proxy at 127.0.0.1:3128, from HTTP_PROXY) ERR_ACCESS_DENIED — header X-Squid"
        in text
    )
    assert any(line.startswith("gateway hop: Apache") for line in profile_lines(profile))


def test_repeated_facts_count_up_and_lists_stay_bounded(tmp_path):
    from app.gateway_profile import MAX_FACTS

    state = State(tmp_path / "state.toml")
    for i in range(MAX_FACTS + 5):
        record_content_block(state, "e", kind="waf_block", why="judged", gateway=f"gateway {i}")
    record_content_block(state, "e", kind="waf_block", why="again", gateway=f"gateway {MAX_FACTS + 4}")
    blocks = load_profile(state, "e").learned.content_blocks
    assert len(blocks) == MAX_FACTS and blocks[-1]["count"] == 2 and blocks[-1]["why"] == "again"


NGINX_STREAM = """    server {{
        listen 127.0.0.1:{{port}};
        location / {{
            proxy_pass http://127.0.0.1:{{upstream}};
            proxy_http_version 1.1;
            {extra}
        }}
    }}"""


async def test_buffered_sse_behind_real_nginx_is_seen_and_remembered(make_harness, lab, tmp_path):
    """nginx compressing the event stream (`gzip_types text/event-stream`, a common catch-all) holds a slow
    stream in its gzip buffers and sends it at the end: the answer arrives in one burst."""
    folder = tmp_path / "nginx"
    folder.mkdir()
    gw = start_nginx(
        folder,
        lab.port,
        NGINX_STREAM.format(
            extra="gzip on; gzip_types text/event-stream; gzip_min_length 0; gzip_proxied any;"
        ),
    )
    try:
        lab.configure(faults="slow@1", slow_pause=0.05)
        h = make_harness("anthropic", base_url=gw.url)
        result = await h.engine.submit("!big 2KB")
        assert result.outcome == "answered", result.error
        quirks = load_profile(h.engine.state, h.engine.route.endpoint_id).learned.streaming
        assert [q["quirk"] for q in quirks] == ["buffered_sse"], quirks
    finally:
        gw.stop()


async def test_an_unbuffered_stream_is_no_quirk(make_harness, lab, tmp_path):
    folder = tmp_path / "nginx"
    folder.mkdir()
    gw = start_nginx(folder, lab.port, NGINX_STREAM.format(extra="proxy_buffering off;"))
    try:
        lab.configure(faults="slow@1", slow_pause=0.05)
        h = make_harness("anthropic", base_url=gw.url)
        assert (await h.engine.submit("!big 2KB")).outcome == "answered"
        assert load_profile(h.engine.state, h.engine.route.endpoint_id).learned.streaming == ()
    finally:
        gw.stop()


async def test_an_idle_cut_behind_real_nginx_is_remembered_with_its_silence(make_harness, lab, tmp_path):
    """nginx's proxy_read_timeout 1s cuts a stream that pauses 2 s between events."""
    folder = tmp_path / "nginx"
    folder.mkdir()
    gw = start_nginx(
        folder, lab.port, NGINX_STREAM.format(extra="proxy_buffering off; proxy_read_timeout 1s;")
    )
    try:
        lab.configure(faults="slow@1", slow_pause=2.0)
        h = make_harness("anthropic", base_url=gw.url, retry_max_attempts=0)
        await h.engine.submit("!big 2KB")
        quirks = load_profile(h.engine.state, h.engine.route.endpoint_id).learned.streaming
        assert [q["quirk"] for q in quirks] == ["idle_cut"], quirks
        assert 0.8 <= quirks[0]["idle_seconds"] <= 3.0
    finally:
        gw.stop()
