"""Issue 15 through real gateway software in front of the lab: nginx (`return 444`, a close-delimited
stream, small header buffers), HAProxy (Debian) and Caddy with body limits, and Node's own HTTP server
answering 431 on big headers. `.ci/run` installs them; a missing one skips with its package named."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.sizes import KIB
from tests.engine.real_gateways import start_caddy, start_haproxy, start_nginx, start_node_proxy

LIMIT = 200_000  # bytes: every gateway below refuses bodies over this
PROXY = """
        location / {{
            {extra}
            proxy_pass http://127.0.0.1:{{upstream}};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}"""


def _server(directives: str = "", location_extra: str = "") -> str:
    return f"""    map $http_content_length $too_big {{ default 0; "~^[2-9][0-9]{{5}}$" 1; "~^[0-9]{{7,}}$" 1; }}
    server {{
        listen 127.0.0.1:{{port}};
        client_max_body_size 64m;
        {directives}
{PROXY.format(extra=location_extra)}
    }}"""


@pytest.fixture
def gateways(tmp_path: Path):
    started = []

    def start(kind: str, upstream: int, *args: str):
        folder = tmp_path / f"{kind}-{len(started)}"
        folder.mkdir()
        gateway = {
            "nginx": start_nginx,
            "haproxy": start_haproxy,
            "caddy": start_caddy,
            "node": start_node_proxy,
        }[kind](folder, upstream, *args)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()


def _requests(h):
    return h.session.store.list_requests(h.session.id)


RESETTING = {
    "nginx-return-444": ("nginx", _server(location_extra="if ($too_big) { return 444; }")),
    # `reject` closes at once; `silent-drop` leaves the client waiting (a timeout or a reset, by timing)
    "haproxy-reject": ("haproxy", f"    http-request reject if {{ req.hdr_val(content-length) gt {LIMIT} }}"),
}


@pytest.mark.parametrize("name", sorted(RESETTING))
async def test_a_repeated_reset_under_500kb_is_learned_as_a_cap_and_recovered(
    make_harness, lab, gateways, name
):
    """Item 3: nginx `return 444` / HAProxy `http-request reject` close the connection on a ~290 KB body. The first
    reset is retried (under drop_payload_min_bytes); the identical second one, at an endpoint that accepted
    a small request, is the gateway's cap: learned, and the ladder recovers."""
    kind, config = RESETTING[name]
    gateway = gateways(kind, lab.port, config)
    h = make_harness("anthropic", base_url=gateway.url)
    assert (await h.engine.submit("hello")).outcome == "answered"  # the endpoint accepts small requests
    h.grow(10, 14_000)  # ≈ 290 KB: over the gateway's 200 KB, under the 500,000-byte threshold

    result = await h.engine.submit("what now?")

    assert result.outcome == "answered", result.error
    records = _requests(h)
    assert [r["outcome"] for r in records[:3]] == ["ok", "failed", "failed"]
    first, second = records[1], records[2]
    assert first["kind"] == "other" and LIMIT < first["actual_bytes"] < 500_000
    assert "drop_payload_min_bytes" in first["reason"] and "bulkhead probe" in first["reason"]
    assert second["kind"] == "connection_drop" and second["actual_bytes"] == first["actual_bytes"]
    assert any("reset twice in a row" in e for e in second["evidence"])
    assert len(h.sleeps) == 1  # one transient retry, then the evidence decided
    learned = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    assert learned is not None and learned.cap_bytes == int(0.75 * second["actual_bytes"])
    assert records[-1]["outcome"] == "ok" and records[-1]["actual_bytes"] < LIMIT
    assert h.session.counters.recoveries_ok == 1


LIMITING = {
    "haproxy-deny-413": (
        "haproxy",
        f"    http-request deny deny_status 413 if {{ req.hdr_val(content-length) gt {LIMIT} }}",
    ),
    "caddy-request-body": ("caddy", "    request_body {\n        max_size 200KB\n    }"),
}


@pytest.mark.parametrize("name", sorted(LIMITING))
async def test_body_limits_of_haproxy_and_caddy_are_recovered(make_harness, lab, gateways, name):
    kind, config = LIMITING[name]
    gateway = gateways(kind, lab.port, config)
    h = make_harness("openai", base_url=f"{gateway.url}/v1")
    assert (await h.engine.submit("small enough")).outcome == "answered"
    h.grow(10, 14_000)

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    rejected = _requests(h)[1]
    assert rejected["status"] == 413 and rejected["kind"] == "payload_too_large"
    assert (kind == "caddy") == (rejected["response_headers"].get("server") == "Caddy")
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id).cap_bytes == int(
        0.75 * rejected["actual_bytes"]
    )
    assert _requests(h)[-1]["actual_bytes"] <= 200 * KIB


async def test_a_close_delimited_stream_cut_behind_nginx_is_kept_partial(make_harness, lab, gateways):
    """Item 1: nginx with `chunked_transfer_encoding off` ends the body cleanly when the upstream dies
    mid-answer — no finish_reason, no [DONE]. The answer so far is kept, marked partial, not retried."""
    gateway = gateways("nginx", lab.port, _server("chunked_transfer_encoding off;"))
    lab.configure(faults="cut@1")
    h = make_harness("openai", base_url=f"{gateway.url}/v1")

    result = await h.engine.submit("!big 8KB")

    assert result.outcome == "partial", result.error
    assert len(_requests(h)) == 1 and h.sleeps == []
    last = h.session.master[-1]
    assert last.role == "assistant" and last.meta.partial and 0 < len(last.text) < 8 * 1024
    assert "marked partial" in result.error and "retried" not in result.error.split(" — ")[0]


async def test_node_431_on_a_long_key_is_headers_too_large_without_a_cap(make_harness, lab, gateways):
    """Item 2: Node answers 431 when the headers pass 16 KiB (a long gateway token as the key). No cap is
    learned, no ladder runs, and the message names the culprits and the header bytes sent. Node closes
    the socket with the body unread, so depending on timing the client reads the 431 or a reset: both
    are a header problem."""
    gateway = gateways("node", lab.port)
    assert (await make_harness("anthropic", base_url=gateway.url).engine.submit("hi")).outcome == "answered"
    h = make_harness("anthropic", base_url=gateway.url, api_key="sk-ant-" + "t" * 20_000)

    result = await h.engine.submit("hi")

    assert result.outcome == "failed"
    record = _requests(h)[0]
    assert record["status"] in (431, None) and record["kind"] == "headers_too_large", record["evidence"]
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None
    assert h.of_type("recovery") == [] and h.of_type("cap_learned") == [] and h.sleeps == []
    assert "a long API key or token, cookies, or custom headers" in result.error
    assert "KB of headers" in result.error and "no cap is learned" in result.error
    assert len(_requests(h)) == 1


async def test_nginx_header_page_is_quoted_by_its_title(make_harness, lab, gateways):
    """Item 4: nginx's own 400 for headers over its buffers is recognised, and its title is quoted."""
    gateway = gateways("nginx", lab.port, _server("large_client_header_buffers 4 2k;"))
    h = make_harness("openai", base_url=f"{gateway.url}/v1", api_key="sk-" + "k" * 3000)

    result = await h.engine.submit("hi")

    record = _requests(h)[0]
    assert record["status"] == 400 and record["kind"] == "headers_too_large"
    assert "“400 Request Header Or Cookie Too Large”" in result.error
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None


async def test_after_a_recovery_the_lab_model_answers_the_users_request(make_harness, lab):
    """Item 5: the payload notice injected by the recovery comes after the user's request; the model
    answers the request, as a real one would."""
    lab.configure(gateway="nginx", cap="128KB")
    h = make_harness("openai")
    h.grow(10, 10_000)

    result = await h.engine.submit("which files did we touch?")

    assert result.outcome == "answered", result.error
    assert "You said: “which files did we touch?”" in result.text
    assert "SYSTEM NOTICE" not in result.text
