"""The `lab` provider starts the embedded lab on first use and speaks the Anthropic wire to it."""

from __future__ import annotations

from app.config import Route, Settings
from app.providers.factory import make_provider

from .common import READ_TOOL, SYSTEM, collect, collect_error, stop_of, text_of, user


async def test_lab_provider_starts_the_embedded_lab_once():
    provider = make_provider(Route(name="lab", provider="lab", model="lab-1"), Settings())
    assert provider.lab is None  # nothing runs until the first request
    try:
        request = provider.build([user("Hello lab")], SYSTEM, [READ_TOOL], max_tokens=200)
        events = await collect(provider, request)
        lab = provider.lab
        assert lab is not None and request.url == lab.url + "/v1/messages"
        assert "Hello lab" in text_of(events) and stop_of(events).reason == "end"
        (record,) = lab.requests()
        assert record["bytes"] == request.actual_bytes == request.predicted_bytes

        lab.configure(gateway="nginx", cap=request.actual_bytes // 2)
        second = provider.build([user("Hello lab")], SYSTEM, [READ_TOOL], max_tokens=200)
        _, error = await collect_error(provider, second)
        assert provider.lab is lab  # still the same lab
        assert error.provider == "lab" and error.status == 413 and "<html" in error.body.lower()
        assert error.request_bytes == second.predicted_bytes
    finally:
        await provider.aclose()
    assert provider.lab is None
