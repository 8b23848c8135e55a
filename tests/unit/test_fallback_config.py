"""Issue 41: the fallback chain's configuration — checked whole at load time (and by `config check`), every
problem with its file and line — and which failures move a turn on."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.config import ConfigError, fallback_chain, load_settings
from app.engine.failures import classify_fields
from app.engine.fallback import moving_kind
from app.model.fallback import DEFAULT_FALLBACK_ON, FallbackKind

ROUTES = """
[routes.anthropic]
provider = "lab"
fallback = {a}
[routes.bedrock]
provider = "lab"
fallback = {b}
[routes.local]
provider = "lab"
"""


def _load(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path, load_settings(path, env={})


def test_a_chain_follows_each_route_s_own_fallback_then_the_global_default(tmp_path):
    _, settings = _load(tmp_path, 'fallback = ["local"]\n' + ROUTES.format(a='["bedrock"]', b='["local"]'))

    assert fallback_chain(settings, "anthropic") == ("anthropic", "bedrock", "local")
    assert fallback_chain(settings, "bedrock") == ("bedrock", "local")
    assert fallback_chain(settings, "local") == ("local",)  # the global default never lists a route twice
    assert settings.fallback_on == DEFAULT_FALLBACK_ON and settings.fallback_sticky is False


def test_an_unknown_route_in_a_chain_names_its_file_and_line(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('fallback = ["nowhere"]\n' + ROUTES.format(a='["bedrock", "gone"]', b="[]"))

    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})

    problems = caught.value.problems
    assert any(p.startswith(f"{path}:1: fallback names no route 'nowhere'") for p in problems), problems
    assert any(p.startswith(f"{path}:5: routes.anthropic.fallback names no route 'gone'") for p in problems)


def test_a_cycle_is_refused_with_the_circle_spelled_out(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(ROUTES.format(a='["bedrock"]', b='["anthropic"]'))

    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})

    [problem] = caught.value.problems
    assert problem.startswith(f"{path}:4: the fallback chain goes round in a circle")
    assert "anthropic → bedrock → anthropic" in problem


def test_a_route_that_falls_back_to_itself_is_a_cycle(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(ROUTES.format(a='["anthropic"]', b="[]"))

    with pytest.raises(ConfigError, match="goes round in a circle"):
        load_settings(path, env={})


def test_fallback_on_refuses_size_kinds_and_unknown_words(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('fallback_on = ["overloaded", "payload_too_large"]\n')
    with pytest.raises(
        ConfigError, match=r":1: fallback_on: 'payload_too_large' never moves to another route"
    ):
        load_settings(path, env={})

    path.write_text('fallback_on = ["overloadd"]\n')
    with pytest.raises(ConfigError, match=r"'overloadd' is not a failure kind that can move"):
        load_settings(path, env={})


def test_config_check_names_the_problem_and_prints_the_chain(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(ROUTES.format(a='["bedrock"]', b='["anthropic"]'))
    env = {"BULKHEAD_CONFIG": str(path), "BULKHEAD_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}

    bad = subprocess.run(
        [sys.executable, "-m", "app", "config", "check"], capture_output=True, text=True, env=env
    )
    assert bad.returncode == 2 and f"✖ {path}:4: the fallback chain goes round in a circle" in bad.stdout

    path.write_text(ROUTES.format(a='["bedrock"]', b='["local"]'))
    good = subprocess.run(
        [sys.executable, "-m", "app", "config", "check"], capture_output=True, text=True, env=env
    )
    assert good.returncode == 0, good.stdout
    assert "routes.anthropic: fallback chain anthropic → bedrock → local" in good.stdout


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {
                "status": 529,
                "body": '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            },
            "overloaded",
        ),
        ({"status": 500, "body": '{"error":{"message":"boom","type":"server_error"}}'}, "server_error"),
        (
            {
                "status": 401,
                "body": '{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
            },
            "auth",
        ),
        (
            {
                "status": 404,
                "body": '{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}',
            },
            "model_not_found",
        ),
        (
            {
                "status": 400,
                "body": '{"message":"The provided model identifier is invalid."}',
                "headers": {"x-amzn-ErrorType": "ValidationException"},
            },
            "model_not_found",
        ),
        ({"status": 413, "body": "<html><title>413 Request Entity Too Large</title></html>"}, None),
        (
            {
                "status": 400,
                "body": '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}',
            },
            None,
        ),
        (
            {
                "status": 400,
                "body": '{"error":{"message":"temperature must be below 2","type":"invalid_request_error"}}',
            },
            None,
        ),
    ],
)
def test_which_failures_move_on(fields, expected):
    kind = moving_kind(classify_fields(**fields))
    assert kind == (FallbackKind(expected) if expected else None)
