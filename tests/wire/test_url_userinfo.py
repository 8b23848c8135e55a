"""A password in base_url never replaces the route's key (issue 37, item 19): the provider still gets the key
in its own header, and the userinfo goes nowhere it would be mistaken for it."""

from __future__ import annotations

import base64

from app.config import Route
from app.providers.base import make_provider

from . import frames as F
from .common import SYSTEM, collect, simple_view
from .conftest import FAKE_OPENAI_KEY
from .scripted_server import Stream

KEY = FAKE_OPENAI_KEY


def _with_userinfo(url: str) -> str:
    return url.replace("http://", "http://alice:s3cret-pass@", 1)


async def test_openai_sends_the_key_not_the_urls_userinfo(server, settings):
    route = Route(name="gpt", provider="openai", model="gpt-4o", base_url=_with_userinfo(server.url) + "/v1")
    provider = make_provider(route, settings, KEY)
    server.push(Stream(200, F.SSE, F.openai_text(["ok"], usage=F.openai_usage(5, 1))))

    await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=16))

    headers = server.last.headers
    assert headers.get("authorization") == f"Bearer {KEY}", headers.get("authorization")
    basic = base64.b64encode(b"alice:s3cret-pass").decode()
    assert basic not in str(headers)


async def test_anthropic_sends_the_key_not_the_urls_userinfo(server, settings):
    route = Route(
        name="claude", provider="anthropic", model="claude-sonnet-5", base_url=_with_userinfo(server.url)
    )
    provider = make_provider(route, settings, "sk-ant-FAKE-userinfo-test")
    server.push(Stream(200, F.SSE, F.anthropic_text(["ok"])))

    await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=16))

    headers = server.last.headers
    sent = {headers.get("x-api-key"), headers.get("authorization")}
    assert sent & {"sk-ant-FAKE-userinfo-test", "Bearer sk-ant-FAKE-userinfo-test"}, (
        headers
    )  # the SDK's own way
    basic = base64.b64encode(b"alice:s3cret-pass").decode()
    assert basic not in str(headers) and "Basic" not in str(headers.get("authorization"))
