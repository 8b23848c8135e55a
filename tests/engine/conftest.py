"""Engine tests run real turns: the real provider adapters and SDKs against the embedded lab."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from app.config import Route, Settings
from app.engine.session import Session
from app.engine.turn import Engine
from app.model.messages import Message
from app.providers.base import make_provider
from app.state import State
from app.store import Store

FAKE_KEY = "sk-ant-FAKE-test-key"
MODELS = {
    "anthropic": "claude-sonnet-5-5",
    "openai": "gpt-5.5",
    "bedrock": "anthropic.claude-sonnet-5-5-v1:0",
}


@pytest.fixture
def lab(lab_server):
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0)
    lab_server.clear_requests()
    lab_server.clear_cache()
    return lab_server


@pytest.fixture
def aws_env(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def route_for(provider: str, lab_url: str, **extra) -> Route:
    where = {
        "anthropic": {"base_url": lab_url},
        "openai": {"base_url": f"{lab_url}/v1"},
        "bedrock": {"endpoint_url": lab_url, "region": "us-east-1"},
    }[provider]
    return Route(name="t", provider=provider, model=MODELS[provider], **where, **extra)


class Harness:
    """An engine on a fresh session, with sleeps recorded instead of slept."""

    def __init__(self, engine: Engine, sleeps: list[float], events: list) -> None:
        self.engine = engine
        self.session = engine.session
        self.sleeps = sleeps
        self.events = events

    def of_type(self, type_: str) -> list:
        return [e for e in self.events if e.type == type_]

    def grow(self, pairs: int, chars: int) -> None:
        """Append `pairs` user/assistant exchanges of about `chars` each to the master log."""
        for i in range(pairs):
            turn = self.session.turn + 1
            self.session.append(
                Message.create("user", f"question {i}: " + ("lorem ipsum " * (chars // 12)), turn=turn)
            )
            self.session.append(
                Message.create("assistant", f"answer {i}: " + ("dolor sit amet " * (chars // 15)), turn=turn)
            )


@pytest.fixture
def make_harness(lab, tmp_path: Path, aws_env) -> Callable[..., Harness]:
    def build(
        provider: str = "anthropic",
        *,
        system: str | None = None,
        tools=None,
        route_extra=None,
        approver=None,
        base_url: str | None = None,
        api_key: str = FAKE_KEY,
        **settings_changes,
    ) -> Harness:
        route = route_for(provider, base_url or lab.url, **(route_extra or {}))
        settings_changes.setdefault(
            "memory", "off"
        )  # the memory worker's own requests only where a test asks
        settings = Settings(
            routes={"t": route},
            default_route="t",
            retry_base_delay=0.01,
            retry_max_delay=0.05,
            request_timeout=30.0,
            **settings_changes,
        )
        store = Store()
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        session = Session.create(
            store,
            route="t",
            provider=provider,
            model=route.model,
            workspace=str(workspace),
            system_prompt=system or "",
        )
        sleeps: list[float] = []

        async def sleep(delay: float) -> None:
            sleeps.append(delay)

        engine = Engine(
            settings,
            session,
            route,
            make_provider(route, settings, api_key),
            state=State(),
            sleep=sleep,
            workspace=workspace,
            tools=tools,
            approver=approver,
        )
        events: list = []
        session.bus.subscribe(events.append)
        return Harness(engine, sleeps, events)

    return build


@pytest.fixture
def servers(tmp_path: Path):
    """`servers(kind, *args)`: start a real server (`kind(folder, *args)`: nginx, mitmproxy, …) in a folder of
    its own under the test's tmp_path; all stopped after the test."""
    started = []

    def start(kind, *args, **kwargs):
        folder = tmp_path / f"{kind.__name__}-{len(started)}"
        folder.mkdir()
        server = kind(folder, *args, **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
