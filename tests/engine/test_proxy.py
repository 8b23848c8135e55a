"""Behind a corporate proxy: every provider's SDK takes the proxy from the environment, and a
proxy that wants credentials is reported as such (never retried, never "recovered")."""

from __future__ import annotations

import pytest

from .forward_proxy import ForwardProxy

PROVIDERS = ("anthropic", "openai", "bedrock")


@pytest.fixture
async def proxy_env(monkeypatch):
    proxies: list[ForwardProxy] = []

    async def use(credentials: str | None = None, *, url_credentials: str | None = None) -> ForwardProxy:
        proxy = await ForwardProxy(credentials=credentials).start()
        proxies.append(proxy)
        url = proxy.url.replace("http://", f"http://{url_credentials}@") if url_credentials else proxy.url
        for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
            monkeypatch.setenv(name, url)
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        return proxy

    yield use
    for proxy in proxies:
        await proxy.stop()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_every_provider_goes_through_the_proxy_from_the_environment(
    make_harness, lab, proxy_env, provider
):
    proxy = await proxy_env()
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert "hello" in result.text
    assert proxy.seen and all(target.startswith(lab.url) for _, target, _ in proxy.seen)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_credentials_in_the_proxy_url_are_sent(make_harness, lab, proxy_env, provider):
    proxy = await proxy_env("alice:s3cret", url_credentials="alice:s3cret")
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert proxy.seen and all(authorized for _, _, authorized in proxy.seen)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_proxy_that_wants_credentials_is_named_and_not_retried(
    make_harness, lab, proxy_env, provider
):
    proxy = await proxy_env("alice:s3cret")
    h = make_harness(provider)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    # issue 38 item 5: the lab is an http:// upstream, so HTTP_PROXY is the variable in effect
    assert "407" in result.error and "put them in HTTP_PROXY as user:password@host" in result.error
    assert len(proxy.seen) == 1 and h.sleeps == []  # not retried
    assert [m.role for m in h.session.master] == ["user"]  # the prompt is kept
    assert lab.requests() == []  # nothing got past the proxy
