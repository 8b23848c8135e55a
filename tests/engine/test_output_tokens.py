"""max_output_tokens: a configured value wins over the catalog's guess (issue 15 item 5)."""

from __future__ import annotations

import json

from app.config import Route, Settings
from app.engine.session import Session
from app.engine.turn import Engine
from app.providers.factory import make_provider
from app.state import State
from app.store import Store


def _engine(tmp_path, route: Route, settings: Settings | None = None) -> Engine:
    settings = settings or Settings(routes={route.name: route}, default_route=route.name)
    session = Session.create(
        Store(),
        route=route.name,
        provider=route.provider,
        model=route.model,
        workspace=str(tmp_path),
        system_prompt="",
    )
    return Engine(
        settings, session, route, make_provider(route, settings, "sk-FAKE"), state=State(), workspace=tmp_path
    )


def test_an_unknown_models_route_setting_wins(tmp_path, lab):
    route = Route(
        name="azure",
        provider="openai",
        model="my-gpt-deployment",
        base_url=f"{lab.url}/v1",
        max_output_tokens=16_000,
    )
    engine = _engine(tmp_path, route)
    assert engine.max_tokens == 16_000 and engine.model_output_cap == 16_000
    body = engine.provider.build((), "", (), max_tokens=engine.max_tokens).body
    assert body["max_tokens"] == 16_000


def test_an_explicit_global_setting_wins_for_an_unknown_model(tmp_path, lab):
    route = Route(name="local", provider="openai", model="qwen-local-build", base_url=f"{lab.url}/v1")
    settings = Settings(
        routes={"local": route},
        default_route="local",
        max_output_tokens=12_000,
        sources={"max_output_tokens": "config.toml:3"},
    )
    assert _engine(tmp_path, route, settings).max_tokens == 12_000


def test_without_a_setting_an_unknown_model_keeps_the_default(tmp_path, lab):
    route = Route(name="local", provider="openai", model="qwen-local-build", base_url=f"{lab.url}/v1")
    engine = _engine(tmp_path, route)
    assert engine.max_tokens == 8192 and json.dumps(engine.model_output_cap) == "8192"
