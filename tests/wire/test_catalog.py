"""Model limits from the catalog: known ids, Bedrock forms, the lab, and the default."""

from __future__ import annotations

import pytest

from app.providers.catalog import DEFAULT_LIMITS, ModelLimits, model_limits, supports_prompt_cache


@pytest.mark.parametrize(
    ("provider", "model", "window", "output"),
    [
        ("anthropic", "claude-sonnet-4-5", 200_000, 64_000),
        ("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000),
        ("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000),
        ("anthropic", "claude-opus-4-20250514", 200_000, 32_000),
        ("anthropic", "claude-haiku-4-5", 200_000, 64_000),
        ("anthropic", "claude-3-5-haiku-20241022", 200_000, 8192),
        ("anthropic", "claude-opus-4-6", 1_000_000, 128_000),
        ("anthropic", "claude-sonnet-5", 1_000_000, 128_000),
        ("openai", "gpt-4o", 128_000, 16384),
        ("openai", "gpt-4o-mini-2024-07-18", 128_000, 16384),
        ("openai", "gpt-4.1-mini", 1_047_576, 32768),
        ("openai", "gpt-4-turbo", 128_000, 4096),
        ("openai", "gpt-5", 400_000, 128_000),
        ("openai", "gpt-5-mini-2025-08-07", 400_000, 128_000),
        ("openai", "o3-mini", 200_000, 100_000),
        ("openai", "o1-mini", 128_000, 65536),
        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0", 200_000, 64_000),
        ("bedrock", "us.anthropic.claude-opus-4-1-20250805-v1:0", 200_000, 32_000),
        ("bedrock", "global.anthropic.claude-haiku-4-5-20251001-v1:0", 200_000, 64_000),
        ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", 200_000, 4096),
        ("bedrock", "amazon.nova-pro-v1:0", 300_000, 10_000),
        ("openai", "anthropic/claude-sonnet-4-5", 200_000, 64_000),  # through an OpenAI-compatible gateway
    ],
)
def test_known_models(provider, model, window, output):
    assert model_limits(provider, model) == ModelLimits(window, output)


def test_lab_and_unknown_models():
    assert model_limits("lab", "lab-1").context_window == 200_000
    assert model_limits("openai", "llama3.1:8b") == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.context_window == 128_000 and DEFAULT_LIMITS.max_output_tokens == 8192
    assert DEFAULT_LIMITS.source == "default"
    assert model_limits("openai", "gpt-4o2") == DEFAULT_LIMITS  # a prefix must end at a boundary


def test_prompt_cache_support_on_bedrock():
    assert supports_prompt_cache("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    assert supports_prompt_cache("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0")
    assert supports_prompt_cache("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0")
    assert not supports_prompt_cache("bedrock", "anthropic.claude-3-haiku-20240307-v1:0")
    assert not supports_prompt_cache("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0")
    assert supports_prompt_cache("bedrock", "amazon.nova-lite-v1:0")
    assert not supports_prompt_cache("bedrock", "meta.llama3-1-70b-instruct-v1:0")
