"""Config for provider-native context: `api` on openai routes, the threshold key, what `config check` says."""

from __future__ import annotations

import pytest

from app.cli import main
from app.config import ConfigError, load_settings


def _check(capsys) -> str:
    main(["config", "check"])
    return capsys.readouterr().out


def test_api_and_threshold_are_typed_settings(tmp_path):
    (tmp_path / "config.toml").write_text(
        'context_engine = "provider"\nprovider_compact_threshold = 120000\n'
        '[routes.gpt]\nprovider = "openai"\nmodel = "gpt-5.5"\napi = "chat"\n',
        encoding="utf-8",
    )
    settings = load_settings()
    assert settings.routes["gpt"].api == "chat" and settings.provider_compact_threshold == 120_000


def test_a_wrong_api_value_names_file_line_and_choices(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        '[routes.gpt]\nprovider = "openai"\nmodel = "gpt-5.5"\napi = "completions"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"{path}:4" in str(caught.value) and "responses, chat" in str(caught.value)


def test_config_check_says_what_provider_context_does_per_route(tmp_path, capsys):
    (tmp_path / "config.toml").write_text(
        'context_engine = "provider"\ndefault_route = "aws"\n'
        '[routes.aws]\nprovider = "bedrock"\nmodel = "m"\nregion = "us-east-1"\n'
        '[routes.gpt]\nprovider = "openai"\nmodel = "gpt-5.5"\n'
        '[routes.azure]\nprovider = "openai"\nmodel = "dep"\nbase_url = "https://r.openai.azure.com/openai/v1/"\n'
        '[routes.local]\nprovider = "openai"\nmodel = "qwen"\nbase_url = "http://localhost:11434/v1"\n'
        '[routes.claude]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n',
        encoding="utf-8",
    )
    out = _check(capsys)
    assert (
        "routes.aws: context_engine = provider: none — Bedrock Converse has no native compaction; the local "
        "pipeline compacts" in out
    )
    assert "routes.gpt: speaks the OpenAI Responses API (the default for this base_url)" in out
    assert "routes.azure: speaks the OpenAI Responses API" in out
    assert "routes.local: speaks the OpenAI Chat Completions API" in out
    assert "routes.local: context_engine = provider: none — Chat Completions has no native compaction" in out
    assert "routes.claude: context_engine = provider: Anthropic server-side compaction" in out
