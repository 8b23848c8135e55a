"""Issue 38 items 3, 6, 7 and 8 through the real adapters and the lab.

- nothing listening at base_url (or at the proxy) is said at once, naming host:port and the setting;
- a gateway's HTML 400 on a request with many JSON values or a large body gets one attempt with fewer
  messages, and says why; a gateway's 408 means the upload was too slow: a smaller request, not a longer
  timeout. The lab stands in for Apache + ModSecurity here (its `html-400` and `408` faults answer with
  Apache's own pages); the real Apache + ModSecurity variants are in test_apache_limits.py;
- a reset is judged with the same evidence and verdict for every SDK, also when the session is continued by
  another process (its own request records are the evidence).
"""

from __future__ import annotations

import socket

import pytest

from app.engine.turn import Engine

PROVIDERS = ("anthropic", "openai", "bedrock")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _url(provider: str, url: str) -> str:
    return url + "/v1" if provider == "openai" else url


def _records(h):
    return h.session.store.list_requests(h.session.id)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_nothing_listening_is_said_at_once_with_the_address_and_setting(
    make_harness, monkeypatch, provider
):
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    port = _closed_port()
    h = make_harness(provider, base_url=_url(provider, f"http://127.0.0.1:{port}"))

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    key = "endpoint_url" if provider == "bedrock" else "base_url"
    assert f"nothing listens at 127.0.0.1:{port} ({key} of [routes.t])" in result.error
    assert h.sleeps == []  # no retries: a refused connection will not start listening by waiting
    assert h.session.counters.retries == 0
    assert [m.role for m in h.session.master] == ["user"]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_proxy_variable_pointing_at_nothing_names_the_variable(
    make_harness, lab, monkeypatch, provider
):
    port = _closed_port()
    for name in (
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert f"nothing listens at 127.0.0.1:{port}, the proxy at 127.0.0.1:{port} (HTTP_PROXY)" in result.error
    assert "correct or unset HTTP_PROXY" in result.error
    assert h.sleeps == [] and lab.requests() == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_gateway_html_400_on_a_large_request_gets_one_attempt_with_fewer_messages(
    make_harness, lab, provider
):
    h = make_harness(provider)
    h.grow(12, 14_000)  # ≈ 340 KB over many messages: past what a WAF takes in one body
    lab.configure(faults="html-400@1")

    result = await h.engine.submit("and now?")

    assert result.outcome == "answered", result.error
    first, second = _records(h)[:2]
    assert first["status"] == 400 and first["kind"] == "other"
    assert "from a gateway, not the provider's JSON" in first["reason"]
    assert "SecArgumentsLimit" in first["reason"] and "one attempt with fewer messages" in first["reason"]
    assert second["outcome"] == "ok" and second["level"] == 2  # straight to fewer messages
    assert second["actual_bytes"] < first["actual_bytes"]
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None  # not a byte cap
    assert h.sleeps == []


async def test_many_json_values_count_even_on_a_small_body(make_harness, lab):
    h = make_harness("anthropic")
    for _ in range(260):  # many short messages: > 1,000 JSON values, a small body
        h.grow(1, 30)
    lab.configure(faults="html-400@1")

    result = await h.engine.submit("next")

    assert result.outcome == "answered", result.error
    first = _records(h)[0]
    assert first["actual_bytes"] < 128 * 1024
    assert any("JSON values ≥ 1,000" in line for line in first["evidence"])


async def test_one_attempt_only_then_the_error_stands(make_harness, lab):
    h = make_harness("openai")
    h.grow(12, 14_000)
    lab.configure(faults="html-400@1+2")

    result = await h.engine.submit("and now?")

    assert result.outcome == "failed"
    assert "Recovery failed after 1 attempt —" in result.error
    assert len(_records(h)) == 2 and lab.requests()
    assert [m.role for m in h.session.master][-1] == "user"  # the conversation is unchanged


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_gateway_408_means_a_smaller_request_not_a_longer_timeout(make_harness, lab, provider):
    h = make_harness(provider)
    h.grow(12, 14_000)
    lab.configure(faults="408@1")

    result = await h.engine.submit("and now?")

    assert result.outcome == "answered", result.error
    first, second = _records(h)[:2]
    assert first["status"] == 408 and first["kind"] == "timeout"
    assert "a smaller request helps, raising request_timeout does not" in first["reason"]
    assert second["level"] == 2 and second["actual_bytes"] < first["actual_bytes"]
    assert h.sleeps == []  # the same body is never sent again


async def test_the_providers_own_408_is_still_a_transient_timeout(make_harness, lab):
    from app.engine.failures import classify_fields

    failure = classify_fields(408, "Request Timeout", '{"error": {"message": "timeout", "type": "timeout"}}')
    assert failure.kind == "timeout" and failure.transient and not failure.recoverable


# -- item 8: the same evidence, the same verdict, for every SDK ----------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_continued_session_judges_resets_with_its_own_records(make_harness, lab, provider):
    """A session whose small requests this endpoint answered is continued by a new engine (a `-c -p` run, a
    reopened TUI): a body reset twice in a row is the endpoint's cap, learned — for every SDK."""
    first = make_harness(provider)
    assert (await first.engine.submit("hello")).outcome == "answered"
    first.grow(10, 14_000)  # ≈ 280 KB: under the 500,000-byte threshold
    lab.configure(gateway="reset", cap=200_000)
    engine = Engine(
        first.engine.settings,
        first.session,
        first.engine.route,
        first.engine.provider,
        state=first.engine.state,
        sleep=first.engine.sleep,
        workspace=first.engine.workspace,
    )

    result = await engine.submit("what now?")

    assert result.outcome == "answered", result.error
    records = _records(first)
    resets = [r for r in records if r["outcome"] == "failed"]
    assert [r["kind"] for r in resets] == ["other", "connection_drop"]
    assert resets[0]["actual_bytes"] == resets[1]["actual_bytes"]
    assert any("reset twice in a row" in e for e in resets[1]["evidence"])
    learned = engine.state.learned_cap(engine.route.endpoint_id)
    assert learned is not None and learned.cap_bytes == int(0.75 * resets[1]["actual_bytes"])


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_nginx_444_resets_get_the_same_verdict_for_every_sdk(make_harness, lab, tmp_path, provider):
    """Behind real nginx `return 444` (resets over 200 KB): each SDK's first reset is retried, the identical
    second one is learned as the cap with the same evidence lines, and the ladder recovers."""
    from tests.engine.real_gateways import start_nginx
    from tests.engine.test_real_gateways import RESETTING

    _, config = RESETTING["nginx-return-444"]
    nginx = start_nginx(tmp_path / "nginx", lab.port, config)
    try:
        h = make_harness(provider, base_url=_url(provider, nginx.url))
        assert (await h.engine.submit("hello")).outcome == "answered"
        h.grow(10, 14_000)

        result = await h.engine.submit("what now?")
    finally:
        nginx.stop()

    assert result.outcome == "answered", result.error
    resets = [r for r in _records(h) if r["outcome"] == "failed"]
    assert [(r["kind"], r["status"]) for r in resets] == [("other", None), ("connection_drop", None)]
    assert "transport: connection dropped (no HTTP response)" in resets[1]["evidence"]
    assert any(e.startswith("the same ") and "reset twice in a row" in e for e in resets[1]["evidence"])
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id).cap_bytes == int(
        0.75 * resets[1]["actual_bytes"]
    )
    assert len(h.sleeps) == 1
