"""Listing a route's models for the /model picker, against servers speaking each format: the lab
(Anthropic `GET /v1/models`, OpenAI/vLLM `GET /v1/models` with `max_model_len`, Bedrock's control
plane `ListFoundationModels` + `ListInferenceProfiles` via `endpoint_url`), and a scripted server for
what goes wrong (a 401 in the provider's words, an endpoint that never answers)."""

from __future__ import annotations

import json

import pytest

from app.config import Route, Settings
from app.engine.model_list import list_route_models
from app.lab.embedded import start_embedded_lab
from tests.wire.scripted_server import Hold, Reply, ScriptedServer


@pytest.fixture(scope="module")
def lab():
    with start_embedded_lab() as handle:
        handle.configure(window=50_000)
        yield handle


@pytest.fixture
def aws(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKEFAKEFAKEFAKE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-for-tests")


def ids(found) -> list[str]:
    return [choice.model for choice in found.models]


async def test_anthropic_lists_its_models_with_catalog_limits(lab):
    route = Route(name="work", provider="anthropic", model="claude-opus-5", base_url=lab.url)
    found = await list_route_models(route, Settings(), "sk-ant-fake", timeout=20)
    assert found.error == ""
    assert ids(found) == ["claude-opus-5", "lab-1", "lab-1-mini"]  # the configured one first, always
    opus = found.models[0]
    assert (opus.window, opus.max_output, opus.limits_from) == (1_000_000, 128_000, "catalog")
    assert found.models[1].name == "Lab model 1 (offline, deterministic)"
    assert not lab.requests()  # a list is not a model request


async def test_the_lab_route_lists_the_lab_models(lab):
    route = Route(name="lab", provider="lab", model="lab-1", base_url=lab.url)
    found = await list_route_models(route, Settings(), None, timeout=20)
    assert ids(found) == ["lab-1", "lab-1-mini"] and found.models[0].window == 200_000


async def test_openai_compatible_servers_give_the_window_when_they_know_it(lab):
    route = Route(name="local", provider="openai", model="lab-1-mini", base_url=f"{lab.url}/v1")
    found = await list_route_models(route, Settings(), None, timeout=20)
    assert ids(found) == ["lab-1-mini", "lab-1"]
    assert {(c.window, c.limits_from) for c in found.models} == {(50_000, "endpoint")}  # vLLM's max_model_len
    assert found.models[0].note == "bulkhead-lab"  # owned_by


async def test_bedrock_lists_foundation_models_and_inference_profiles(lab, aws):
    route = Route(
        name="aws",
        provider="bedrock",
        model="anthropic.claude-sonnet-4-5-20250929-v1:0",
        region="us-east-1",
        endpoint_url=lab.url,
    )
    found = await list_route_models(route, Settings(), None, timeout=30)
    assert found.error == ""
    assert ids(found) == ["anthropic.claude-sonnet-4-5-20250929-v1:0", "lab-1", "lab-1-mini", "us.lab-1"]
    assert found.models[0].window == 200_000 and found.models[0].max_output == 64_000
    assert found.models[-1].note == "inference profile"


async def test_a_refusal_is_one_line_in_the_providers_words():
    server = ScriptedServer().start()
    try:
        body = {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        server.push(Reply(401, {"content-type": "application/json"}, json.dumps(body)))
        route = Route(name="work", provider="anthropic", model="claude-opus-5", base_url=server.url)
        found = await list_route_models(route, Settings(), "sk-ant-wrong", timeout=20)
        assert found.error.startswith("auth:") and ids(found) == ["claude-opus-5"]
        assert server.last.path.startswith("/v1/models")
    finally:
        server.stop()


async def test_an_endpoint_that_never_answers_times_out_with_the_key_to_change():
    server = ScriptedServer().start()
    try:
        server.push(Hold())
        route = Route(name="slow", provider="openai", model="qwen2.5-coder", base_url=f"{server.url}/v1")
        found = await list_route_models(route, Settings(), None, timeout=0.5)
        assert found.error == "no answer in 0.5 s (model_list_timeout)"
    finally:
        server.stop()
