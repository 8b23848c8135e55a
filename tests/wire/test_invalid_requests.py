"""Requests the provider refuses as invalid (unknown model, max_tokens too high, wrong path),
through each real SDK: the classification quotes the provider's own words and says what to change."""

from __future__ import annotations

import pytest

from app.engine.failures import OTHER, classify

from . import frames as F
from .common import SYSTEM, collect_error, simple_view
from .conftest import make_anthropic, make_bedrock, make_openai
from .scripted_server import Reply

MODEL_HINT = "check the route's `model`"
TOKENS_HINT = "lower `max_output_tokens`"
PATH_HINT = "check the route's `base_url`"
AMZN_VALIDATION = {**F.JSON, "x-amzn-errortype": "ValidationException:http://internal.amazon.com/coral/"}

CASES = {
    "anthropic-model": (
        make_anthropic,
        Reply(404, F.JSON, F.anthropic_error_json("not_found_error", "model: claude-sonnet-9")),
        "model: claude-sonnet-9",
        MODEL_HINT,
    ),
    "anthropic-max-tokens": (
        make_anthropic,
        Reply(
            400,
            F.JSON,
            F.anthropic_error_json(
                "invalid_request_error",
                "max_tokens: 64000 > 32000, which is the maximum allowed number of output "
                "tokens for claude-x",
            ),
        ),
        "max_tokens: 64000 > 32000",
        TOKENS_HINT,
    ),
    "openai-model": (
        make_openai,
        Reply(
            404,
            F.JSON,
            F.openai_error_json(
                "The model `gpt-9` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            ),
        ),
        "The model `gpt-9` does not exist",
        MODEL_HINT,
    ),
    "ollama-model": (
        make_openai,
        Reply(404, F.JSON, '{"error": "model \\"qwen9\\" not found, try pulling it first"}'),
        'model "qwen9" not found, try pulling it first',
        MODEL_HINT,
    ),
    "openai-path": (make_openai, Reply(404, F.JSON, '{"detail": "Not Found"}'), "Not Found", PATH_HINT),
    "bedrock-model": (
        make_bedrock,
        Reply(400, AMZN_VALIDATION, F.bedrock_error_json("The provided model identifier is invalid.")),
        "The provided model identifier is invalid.",
        MODEL_HINT,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_provider_s_words_and_what_to_change(server, settings, aws_env, case):
    make, reply, words, hint = CASES[case]
    provider = make(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(reply)

    _, error = await collect_error(provider, request)
    failure = classify(error)

    assert failure.kind == OTHER and not failure.recoverable and not failure.transient
    assert words in failure.reason and hint in failure.reason
    assert any(e.startswith('message "') for e in failure.evidence)
