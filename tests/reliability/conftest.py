"""Fixtures for the reliability suite: an embedded lab of its own, fake AWS credentials, sleeps recorded.

The engine tests' helpers are reused as they are (`route_for`, `MODELS`, `FAKE_KEY` from
`tests.engine.conftest`); nothing here changes them.
"""

from __future__ import annotations

import pytest

from app.lab.embedded import start_embedded_lab
from tests.engine.conftest import FAKE_KEY, MODELS, route_for

__all__ = ["FAKE_KEY", "MODELS", "PROVIDERS", "RecordedSleep", "route_for"]

PROVIDERS = ("anthropic", "openai", "bedrock")


class RecordedSleep:
    """An engine `sleep` that records the delay and returns at once (no waiting in tests)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture(scope="module")
def reliability_lab():
    with start_embedded_lab() as handle:
        yield handle


@pytest.fixture
def fresh_lab(reliability_lab):
    reliability_lab.configure(gateway="none", cap=None, window=None, faults=None, seed=0)
    reliability_lab.clear_requests()
    reliability_lab.clear_cache()
    return reliability_lab


@pytest.fixture
def aws_env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
