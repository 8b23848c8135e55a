"""Behind a real Squid (issue 38 items 4–5): which hop refused, and what its refusal means.

- an ACL refusal (`X-Squid-Error: ERR_ACCESS_DENIED`) is the proxy's policy, named as Squid, never a cap;
- `ERR_CONNECT_FAIL` is the proxy failing to reach the provider, not "provider overloaded";
- a CONNECT the proxy refuses names the proxy;
- a 407's advice names the variable actually in effect: HTTP_PROXY for an http:// upstream, HTTPS_PROXY for https.

Squid is Debian's `squid`, started by the test in a temp folder (`tests/engine/real_proxies.py`).
"""

from __future__ import annotations

import socket

import pytest

from app.gateway_profile import load_profile
from app.ui.explain import explain_request
from tests.engine.real_proxies import start_squid

PROVIDERS = ("anthropic", "openai", "bedrock")
VARIABLES = (
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)


@pytest.fixture
def squid(monkeypatch):
    started = []

    def start(
        rules: str = "http_access allow all",
        *,
        credentials: str | None = None,
        variables=("HTTP_PROXY",),
        url_credentials: str | None = None,
    ):
        proxy = start_squid(rules, credentials)
        started.append(proxy)
        for name in VARIABLES:
            monkeypatch.delenv(name, raising=False)
        url = proxy.url.replace("http://", f"http://{url_credentials}@") if url_credentials else proxy.url
        for name in variables:
            monkeypatch.setenv(name, url)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _where(provider: str, url: str) -> dict:
    return {"base_url": url} if provider == "anthropic" else {"base_url": f"{url}/v1"}


def _records(h):
    return h.session.store.list_requests(h.session.id)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_acl_refusal_is_squids_policy_never_a_cap(make_harness, lab, squid, provider):
    proxy = squid(f"acl lab_port port {lab.port}\nhttp_access deny lab_port\nhttp_access allow all")
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert "Refused by the proxy's policy (Squid)" in result.error
    assert f"the proxy at 127.0.0.1:{proxy.port}, from HTTP_PROXY" in result.error
    assert "WAF" not in result.error
    record = _records(h)[-1]
    assert record["kind"] == "auth" and record["status"] == 403
    assert any("X-Squid-Error: ERR_ACCESS_DENIED" in line for line in record["evidence"])
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None  # never a cap
    assert h.sleeps == [] and lab.requests() == []  # not retried; nothing got past the proxy
    assert [m.role for m in h.session.master] == ["user"]  # the prompt is kept
    # the hop the classifier named (Failure.hop) is in the endpoint's gateway profile, as `gateway show` says
    (hop,) = load_profile(h.engine.state, h.engine.route.endpoint_id).learned.hops
    assert hop["kind"] == "forward-proxy" and hop["vendor"] == "squid" and hop["error"] == "ERR_ACCESS_DENIED"
    assert hop["name"] == f"Squid (the proxy at 127.0.0.1:{proxy.port}, from HTTP_PROXY)"
    assert hop["setting"] == "HTTP_PROXY" and "X-Squid-Error: ERR_ACCESS_DENIED" in hop["detail"]
    # the Requests panel's "Why" gives the rule's own action and the hop, not advice rebuilt from the kind
    why = explain_request(record)
    assert "ask the proxy's admins to allow the provider's host" in why and "API key" not in why
    assert f"Hop: Squid (the proxy at 127.0.0.1:{proxy.port}, from HTTP_PROXY) (forward-proxy)." in why


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connect_fail_at_squid_is_the_proxy_not_the_provider(make_harness, squid, provider):
    port = _closed_port()
    proxy = squid()
    url = f"http://127.0.0.1:{port}"
    h = (
        make_harness(provider, base_url=url)
        if provider != "openai"
        else make_harness(provider, base_url=url + "/v1")
    )

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert result.error.startswith("The proxy could not reach the provider (Squid): 503 from Squid")
    assert f"127.0.0.1:{port}" in result.error and "from HTTP_PROXY" in result.error
    assert "Provider overloaded" not in result.error and "switch route" not in result.error
    record = _records(h)[-1]
    assert record["status"] == 503 and any("ERR_CONNECT_FAIL" in line for line in record["evidence"])
    assert h.sleeps == []  # said at once
    assert proxy.port


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_407_names_http_proxy_for_an_http_upstream(make_harness, lab, squid, provider):
    squid(credentials="alice:s3cret", variables=("HTTP_PROXY", "HTTPS_PROXY"))
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed" and "407" in result.error
    assert "put them in HTTP_PROXY as user:password@host" in result.error
    assert "HTTPS_PROXY" not in result.error
    assert h.sleeps == [] and lab.requests() == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_right_credentials_pass_squid(make_harness, lab, squid, provider):
    squid(credentials="alice:s3cret", url_credentials="alice:s3cret")
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert len(lab.requests()) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_407_on_connect_names_https_proxy_for_an_https_upstream(make_harness, squid, provider):
    squid(credentials="alice:s3cret", variables=("HTTPS_PROXY",))
    url = f"https://127.0.0.1:{_closed_port()}"
    h = (
        make_harness(provider, base_url=url)
        if provider != "openai"
        else make_harness(provider, base_url=url + "/v1")
    )

    result = await h.engine.submit("hello")

    assert result.outcome == "failed" and "407" in result.error
    assert "put them in HTTPS_PROXY as user:password@host" in result.error
    assert h.sleeps == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_connect_refused_at_the_proxy_names_the_proxy(make_harness, squid, provider):
    proxy = squid(variables=("HTTPS_PROXY",))
    port = _closed_port()
    url = f"https://127.0.0.1:{port}"
    h = (
        make_harness(provider, base_url=url)
        if provider != "openai"
        else make_harness(provider, base_url=url + "/v1")
    )

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert (
        f"the proxy at 127.0.0.1:{proxy.port} (HTTPS_PROXY) refused to open a tunnel to 127.0.0.1:{port} (503)"
        in (result.error)
    )
    assert h.sleeps == []
