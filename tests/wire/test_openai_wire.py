"""The OpenAI adapter against a local server speaking Chat Completions SSE."""

from __future__ import annotations

import json

import pytest

from app.config import Route, Settings
from app.model.messages import Message, ToolCall, ToolResult
from app.providers.base import dumps

from . import frames as F
from .common import (
    READ_TOOL,
    SYSTEM,
    after_tool_call,
    collect,
    collect_error,
    image_message,
    simple_view,
    stop_of,
    text_of,
    tool_calls_of,
    usage_of,
    user,
)
from .conftest import FAKE_OPENAI_KEY, make_openai
from .scripted_server import Hold, Reply, Reset, Stream


async def test_streams_text_with_usage_and_records_the_exchange(server, settings):
    provider = make_openai(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=256)
    server.push(
        Stream(200, F.SSE, F.openai_text(["Bon", "jour ", "😀"], usage=F.openai_usage(20, 3, cached=16)))
    )

    events = await collect(provider, request)

    assert text_of(events) == "Bonjour 😀"
    assert stop_of(events).reason == "end"
    usage = usage_of(events)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (20, 3, 16)
    received = server.last
    assert received.path == "/v1/chat/completions"
    assert received.body == dumps(request.body)
    assert request.actual_bytes == request.predicted_bytes == received.body_bytes
    sent = json.loads(received.body)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["messages"][0] == {"role": "system", "content": SYSTEM}
    assert sent["max_tokens"] == 256  # a compatible server: the long-supported field
    assert sent["tools"][0]["function"]["name"] == "read_file"
    assert FAKE_OPENAI_KEY not in json.dumps(request.request_headers)


def test_official_endpoint_uses_max_completion_tokens():
    from app.providers.openai import OpenAIProvider

    official = OpenAIProvider(Route(name="o", provider="openai", model="o3"), Settings(), "sk-FAKE-test")
    body = official.build(simple_view(), "", [], max_tokens=99).body
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body
    assert (
        official.build(simple_view(), "", [], max_tokens=99).url
        == "https://api.openai.com/v1/chat/completions"
    )
    azure = OpenAIProvider(
        Route(
            name="az", provider="openai", model="gpt-4o", base_url="https://corp.openai.azure.com/openai/v1"
        ),
        Settings(),
        "FAKE",
    )
    assert azure.is_azure and azure.max_tokens_field == "max_completion_tokens"


async def test_local_server_needs_no_key(server, settings):
    provider = make_openai(server, settings, model="llama3.1:8b", key=None)
    server.push(Stream(200, F.SSE, F.openai_text(["hi from ollama"])))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=32))
    assert text_of(events) == "hi from ollama"
    assert server.last.headers["authorization"] == "Bearer sk-no-key-required"


async def test_tool_call_round_trip(server, settings):
    provider = make_openai(server, settings)
    view = [user("What is in README.md?")]
    server.push(Stream(200, F.SSE, F.openai_tool("call_FAKE1", "read_file", {"path": "README.md"})))

    first = await collect(provider, provider.build(view, SYSTEM, [READ_TOOL], max_tokens=256))

    (call,) = tool_calls_of(first)
    assert (call.id, call.name, call.args) == ("call_FAKE1", "read_file", {"path": "README.md"})
    assert stop_of(first).reason == "tool_use"
    assert usage_of(first).input_tokens == 40

    view = after_tool_call(view, call, "", "# bulkhead")
    server.push(Stream(200, F.SSE, F.openai_text(["A README."])))
    second_request = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=256)
    second = await collect(provider, second_request)

    assert text_of(second) == "A README."
    assert server.last.body == dumps(second_request.body)  # cached pieces reused, still exact
    sent = json.loads(server.last.body)["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[2]["content"] is None
    assert sent[2]["tool_calls"] == [
        {
            "id": "call_FAKE1",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
        }
    ]
    assert sent[3] == {"role": "tool", "tool_call_id": "call_FAKE1", "content": "# bulkhead"}


def test_one_tool_message_per_result_and_errors_prefixed(server, settings):
    provider = make_openai(server, settings)
    view = [
        user("go"),
        Message.create("assistant", [ToolCall("c1", "shell", {"cmd": "ls"}), ToolCall("c2", "shell", {})]),
        Message.create("tool", [ToolResult("c1", "a\nb"), ToolResult("c2", "denied", is_error=True)]),
        Message.create("system", "Notice: compacted."),
        image_message(),
    ]
    sent = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=10).body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "tool", "system", "user"]
    assert sent[4]["content"] == "ERROR: the tool call failed.\ndenied"
    assert sent[5] == {"role": "system", "content": "Notice: compacted."}
    parts = sent[6]["content"]
    assert parts[0] == {"type": "text", "text": "What is in this picture?"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")


async def test_length_finish_is_max_tokens(server, settings):
    provider = make_openai(server, settings)
    server.push(Stream(200, F.SSE, F.openai_text(["Once upon"], finish="length")))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=3))
    assert (stop_of(events).reason, stop_of(events).raw) == ("max_tokens", "length")


async def test_a_server_that_ignores_stream_still_works(server, settings):
    provider = make_openai(server, settings)
    completion = {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "whole answer"}}
        ],
        "usage": F.openai_usage(9, 2),
    }
    server.push(Reply(200, F.JSON, json.dumps(completion)))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=3))
    assert text_of(events) == "whole answer" and stop_of(events).reason == "end"
    assert usage_of(events).input_tokens == 9


# -- errors ---------------------------------------------------------------------------------------

ERRORS = {
    "nginx-413-html": (Reply(413, F.HTML, F.NGINX_413), 413, "APIStatusError"),
    "cloudflare-403-html": (Reply(403, F.CLOUDFLARE_HEADERS, F.CLOUDFLARE_403), 403, "PermissionDeniedError"),
    "json-401": (
        Reply(
            401,
            F.JSON,
            F.openai_error_json(
                "Incorrect API key provided: sk-FAKE***", "invalid_request_error", "invalid_api_key"
            ),
        ),
        401,
        "invalid_api_key",
    ),
    "429-retry-after": (
        Reply(
            429,
            {**F.JSON, "retry-after": "3"},
            F.openai_error_json("Rate limit reached for gpt-4o", "requests", "rate_limit_exceeded"),
        ),
        429,
        "rate_limit_exceeded",
    ),
    "overflow-400": (
        Reply(
            400,
            F.JSON,
            F.openai_error_json(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 "
                "tokens. Please reduce the length of the messages.",
                "invalid_request_error",
                "context_length_exceeded",
            ),
        ),
        400,
        "context_length_exceeded",
    ),
    "503": (
        Reply(503, F.JSON, F.openai_error_json("The engine is currently overloaded", "server_error")),
        503,
        "server_error",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
async def test_error_responses_become_provider_errors(server, settings, case):
    reply, status, error_type = ERRORS[case]
    provider = make_openai(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=64)
    server.push(reply)

    events, error = await collect_error(provider, request)

    assert events == []
    assert (error.provider, error.status, error.error_type, error.transport) == (
        "openai",
        status,
        error_type,
        "http",  # an HTTP error answer: the classifier reads how the answer arrived
    )
    assert error.body == reply.body  # the raw HTML, although str(exc) is only "Error code: 403"
    assert error.request_bytes == request.predicted_bytes == server.last.body_bytes == request.actual_bytes
    assert error.headers["content-type"] == reply.headers["content-type"]
    assert len(server.requests) == 1
    if case == "cloudflare-403-html":
        assert error.headers["cf-ray"] == "8f1e2d3c4b5a6978-FRA"
        assert str(error.original) == "Error code: 403"
    if case == "429-retry-after":
        assert error.retry_after == 3.0
    if case == "overflow-400":
        assert "maximum context length" in error.body


async def test_html_200_is_an_error(server, settings):
    provider = make_openai(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Reply(200, F.HTML, F.CAPTIVE_200))
    events, error = await collect_error(provider, request)
    assert events == []
    assert (error.status, error.transport, error.body) == (200, "html-200", F.CAPTIVE_200)
    assert error.request_bytes == server.last.body_bytes == request.predicted_bytes


async def test_error_chunk_inside_the_stream(server, settings):
    provider = make_openai(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    frames = F.openai_text(["so far "])[:2] + [
        F.openai_stream_error("The server had an error", "server_error")
    ]
    server.push(Stream(200, F.SSE, frames))
    events, error = await collect_error(provider, request)
    assert text_of(events) == "so far "
    assert (error.status, error.transport, error.error_type) == (200, "stream-error", "server_error")
    assert "The server had an error" in error.body
    assert error.request_bytes == server.last.body_bytes


async def test_connection_reset_while_uploading(server, settings):
    provider = make_openai(server, settings)
    request = provider.build([user("y" * 700_000)], SYSTEM, [], max_tokens=64)
    server.push(Reset(after_bytes=1000))
    _, error = await collect_error(provider, request)
    assert (error.transport, error.error_type, error.status) == ("connection", "APIConnectionError", None)
    assert error.request_bytes == request.predicted_bytes > server.last.body_bytes == 1000


async def test_connection_dropped_mid_stream(server, settings):
    provider = make_openai(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Stream(200, F.SSE, F.openai_text(["partial"])[:2], reset=True))
    events, error = await collect_error(provider, request)
    assert text_of(events) == "partial" and error.transport == "connection"


async def test_read_timeout(server):
    provider = make_openai(server, Settings(request_timeout=0.3, connect_timeout=0.3))
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Hold())
    _, error = await collect_error(provider, request)
    assert (error.transport, error.error_type) == ("timeout", "APITimeoutError")
    assert error.request_bytes == request.predicted_bytes


async def test_json_error_with_status_200(server, settings):
    provider = make_openai(server, settings)
    server.push(Reply(200, F.JSON, F.openai_error_json("model overloaded", "server_error", "overloaded")))
    _, error = await collect_error(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=8))
    assert (error.status, error.transport, error.error_type) == (200, "stream-error", "overloaded")
    assert "model overloaded" in error.body


# -- issue 15 item 1: a stream that ends without finish_reason or [DONE] is cut, not complete ------------
async def test_a_close_delimited_stream_cut_mid_answer_is_incomplete(server, settings):
    """Behind nginx with `chunked_transfer_encoding off` the upstream dying ends the body cleanly: no
    finish_reason, no [DONE]. The text that arrived is yielded, then an IncompleteStream error."""
    from app.engine.failures import classify

    provider = make_openai(server, settings)
    frames = F.openai_text(["Once upon ", "a time"])[:3]  # role, two deltas: no finish, no usage, no [DONE]
    server.push(Stream(200, F.SSE, frames, close_delimited=True))

    events, error = await collect_error(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=256))

    assert text_of(events) == "Once upon a time"
    assert error.error_type == "IncompleteStream" and error.status == 200
    failure = classify(error)
    assert failure.kind == "other" and not failure.payload_related
    assert "retried" not in failure.reason  # a cut that showed text is kept partial, never retried


@pytest.mark.parametrize(
    ("frames", "why"),
    [
        (lambda: F.openai_text(["done"])[:-1], "finish_reason without [DONE]"),
        (
            lambda: [f for f in F.openai_text(["done"]) if '"finish_reason": "stop"' not in f],
            "[DONE] without finish",
        ),
    ],
)
async def test_either_terminator_makes_a_close_delimited_stream_complete(server, settings, frames, why):
    provider = make_openai(server, settings)
    server.push(Stream(200, F.SSE, frames(), close_delimited=True))

    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=256))

    assert text_of(events) == "done", why
