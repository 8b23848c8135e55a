"""Fixtures for wire tests: a scripted local HTTP server and provider factories pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.config import Route, Settings

from .scripted_server import ScriptedServer

FAKE_ANTHROPIC_KEY = "sk-ant-FAKE-test"
FAKE_OPENAI_KEY = "sk-FAKE-test"
FAKE_AWS_KEY_ID = "AKIAFAKEFAKEFAKEFAKE"
FAKE_AWS_SECRET = "FAKE/secret/for/tests/only/0000000000000"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer().start()
    try:
        yield scripted
    finally:
        scripted.stop()


@pytest.fixture
def settings() -> Settings:
    return Settings(request_timeout=30.0, connect_timeout=5.0)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_AWS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_AWS_SECRET)


def make_anthropic(server: ScriptedServer, settings: Settings, model: str = "claude-sonnet-5"):
    from app.providers.anthropic import AnthropicProvider

    route = Route(name="claude", provider="anthropic", model=model, base_url=server.url)
    return AnthropicProvider(route, settings, FAKE_ANTHROPIC_KEY)


def make_openai(
    server: ScriptedServer, settings: Settings, model: str = "gpt-4o", key: str | None = FAKE_OPENAI_KEY
):
    from app.providers.openai import OpenAIProvider

    route = Route(name="gpt", provider="openai", model=model, base_url=server.url + "/v1")
    return OpenAIProvider(route, settings, key)


def make_bedrock(
    server: ScriptedServer, settings: Settings, model: str = "anthropic.claude-sonnet-4-5-20250929-v1:0"
):
    from app.providers.bedrock import BedrockProvider

    route = Route(
        name="bedrock", provider="bedrock", model=model, region="us-east-1", endpoint_url=server.url
    )
    return BedrockProvider(route, settings)


def pytest_terminal_summary(terminalreporter) -> None:
    """Report the measured predicted/actual byte ratios (worst per provider)."""
    from .common import BYTE_RATIOS

    if not BYTE_RATIOS:
        return
    terminalreporter.write_sep("-", "wire bytes: predicted / actual")
    for provider, ratios in sorted(BYTE_RATIOS.items()):
        worst = max(ratios, key=lambda r: abs(r - 1))
        terminalreporter.write_line(f"{provider:10s} worst ratio {worst:.6f} over {len(ratios)} views")
