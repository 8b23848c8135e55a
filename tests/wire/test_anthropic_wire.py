"""The Anthropic adapter against a local server speaking the Messages API's SSE."""

from __future__ import annotations

import json

import pytest

from app.config import Settings
from app.model.messages import Message, Text, ToolCall, ToolResult
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
from .conftest import FAKE_ANTHROPIC_KEY, make_anthropic
from .scripted_server import Hold, Reply, Reset, Stream


async def test_streams_text_and_records_the_exchange(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=512)
    server.push(Stream(200, F.SSE, F.anthropic_text(["Hel", "lo ", "wörld 🌍"])))

    events = await collect(provider, request)

    assert text_of(events) == "Hello wörld 🌍"
    assert stop_of(events).reason == "end"
    received = server.last
    assert received.path == "/v1/messages"
    assert received.body == dumps(request.body)  # byte for byte what build() predicted
    assert request.actual_bytes == request.predicted_bytes == received.body_bytes
    assert request.status == 200
    assert request.response_headers["content-type"].startswith("text/event-stream")
    assert request.request_headers["content-length"] == str(received.body_bytes)
    sent = json.loads(received.body)
    assert sent["stream"] is True and sent["max_tokens"] == 512 and sent["model"] == "claude-sonnet-5"
    assert sent["tools"][0]["input_schema"]["required"] == ["path"]


async def test_secrets_are_redacted_in_recorded_headers(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Stream(200, F.SSE, F.anthropic_text(["ok"])))
    await collect(provider, request)
    assert FAKE_ANTHROPIC_KEY in json.dumps(server.last.headers)  # it was really sent …
    assert FAKE_ANTHROPIC_KEY not in json.dumps(request.request_headers)  # … and never recorded
    assert any(v == "[redacted]" for v in request.request_headers.values())


async def test_tool_call_round_trip(server, settings):
    provider = make_anthropic(server, settings)
    view = [user("What is in README.md?")]
    server.push(Stream(200, F.SSE, F.anthropic_tool("toolu_01FAKE", "read_file", {"path": "README.md"})))

    first = await collect(provider, provider.build(view, SYSTEM, [READ_TOOL], max_tokens=512))

    assert text_of(first) == "Let me look."
    (call,) = tool_calls_of(first)
    assert (call.id, call.name, call.args) == ("toolu_01FAKE", "read_file", {"path": "README.md"})
    assert stop_of(first).reason == "tool_use"

    view = after_tool_call(view, call, "Let me look.", "# bulkhead\nA terminal chat client.")
    server.push(Stream(200, F.SSE, F.anthropic_text(["It describes bulkhead."])))
    second_request = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=512)
    second = await collect(provider, second_request)

    assert text_of(second) == "It describes bulkhead."
    assert server.last.body == dumps(second_request.body)  # cached pieces reused, still exact
    sent = json.loads(server.last.body)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01FAKE",
        "name": "read_file",
        "input": {"path": "README.md"},
    }
    result = sent[2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01FAKE"
    assert result["content"].startswith("# bulkhead")


async def test_tool_results_lead_merged_user_turns_and_errors_are_flagged(server, settings):
    provider = make_anthropic(server, settings)
    view = [
        user("run it"),
        Message.create("assistant", [ToolCall("toolu_A", "shell", {"cmd": "false"})]),
        Message.create("user", "(meanwhile, a note)"),
        Message.create("tool", [ToolResult("toolu_A", "exit 1", is_error=True)]),
        Message.create("system", "Notice: history was compacted."),
        Message.create("user", [Text("   "), Text("and now?")]),
    ]
    request = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=100)
    sent = request.body
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    content = sent["messages"][2]["content"]
    assert content[0]["type"] == "tool_result" and content[0]["is_error"] is True
    assert [b.get("text") for b in content[1:]] == ["(meanwhile, a note)", "and now?"]  # blank text dropped
    assert [b["text"] for b in sent["system"]] == [SYSTEM, "Notice: history was compacted."]
    server.push(Stream(200, F.SSE, F.anthropic_text(["fine"])))
    await collect(provider, request)
    assert server.last.body == dumps(request.body)


async def test_prompt_caching_marks_system_and_last_two_user_turns(server, settings):
    provider = make_anthropic(server, settings)
    view = [
        user("one"),
        Message.create("assistant", "a"),
        user("two"),
        Message.create("assistant", "b"),
        user("three"),
    ]
    body = provider.build(view, SYSTEM, [], max_tokens=100).body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    marked = [i for i, m in enumerate(body["messages"]) if "cache_control" in m["content"][-1]]
    assert marked == [2, 4]
    # the cached block is a copy: the next build (and the per-message cache) stays clean
    summary = provider.build(view, SYSTEM, [], max_tokens=100, purpose="summary").body
    assert "cache_control" not in json.dumps(summary)


async def test_images_travel_as_base64_blocks(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build([image_message()], SYSTEM, [], max_tokens=100)
    block = request.body["messages"][0]["content"][1]
    assert block["type"] == "image" and block["source"]["type"] == "base64"
    assert block["source"]["media_type"] == "image/png"


async def test_usage_counts_cache_reads_and_writes_in_the_prompt(server, settings):
    provider = make_anthropic(server, settings)
    server.push(
        Stream(
            200,
            F.SSE,
            F.anthropic_text(["ok"], input_tokens=12, output_tokens=9, cache_read=1000, cache_write=300),
        )
    )
    usage = usage_of(await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=64)))
    assert usage.input_tokens == 12 + 1000 + 300
    assert (usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (9, 1000, 300)


async def test_max_tokens_stop(server, settings):
    provider = make_anthropic(server, settings)
    server.push(Stream(200, F.SSE, F.anthropic_text(["The answer is"], stop="max_tokens")))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=5))
    assert stop_of(events).reason == "max_tokens" and stop_of(events).raw == "max_tokens"
    assert text_of(events) == "The answer is"


async def test_context_management_beta_when_the_provider_manages_context(server):
    provider = make_anthropic(server, Settings(context_engine="provider"))
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Stream(200, F.SSE, F.anthropic_text(["ok"])))
    await collect(provider, request)
    assert server.last.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert json.loads(server.last.body)["context_management"]["edits"]
    assert server.last.body == dumps(request.body) and request.predicted_bytes == server.last.body_bytes


# -- errors ---------------------------------------------------------------------------------------

ERRORS = {
    "nginx-413-html": (Reply(413, F.HTML, F.NGINX_413), 413, "ContentTooLargeError", "http"),
    "cloudflare-403-html": (
        Reply(403, F.CLOUDFLARE_HEADERS, F.CLOUDFLARE_403),
        403,
        "PermissionDeniedError",
        "http",
    ),
    "json-401": (
        Reply(401, F.JSON, F.anthropic_error_json("authentication_error", "invalid x-api-key")),
        401,
        "authentication_error",
        "http",
    ),
    "429-retry-after": (
        Reply(
            429,
            {**F.JSON, "retry-after": "17"},
            F.anthropic_error_json(
                "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"
            ),
        ),
        429,
        "rate_limit_error",
        "http",
    ),
    "overflow-400": (
        Reply(
            400,
            F.JSON,
            F.anthropic_error_json(
                "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"
            ),
        ),
        400,
        "invalid_request_error",
        "http",
    ),
    "overloaded-529": (
        Reply(529, F.JSON, F.anthropic_error_json("overloaded_error", "Overloaded")),
        529,
        "overloaded_error",
        "http",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
async def test_error_responses_become_provider_errors(server, settings, case):
    reply, status, error_type, transport = ERRORS[case]
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=64)
    server.push(reply)

    events, error = await collect_error(provider, request)

    assert events == []
    assert error.provider == "anthropic" and error.status == status
    assert error.error_type == error_type and error.transport == transport
    assert error.body == (reply.body if isinstance(reply.body, str) else reply.body.decode())
    assert error.request_bytes == request.predicted_bytes == server.last.body_bytes
    assert request.actual_bytes == error.request_bytes and request.status == status
    assert error.headers["content-type"] == reply.headers["content-type"]
    assert error.original is not None and error.output_visible is False
    assert len(server.requests) == 1  # max_retries=0: bulkhead owns retries
    if case == "cloudflare-403-html":
        assert error.headers["cf-ray"] == "8f1e2d3c4b5a6978-FRA"
        assert "Cloudflare" in error.body and "Attention Required" in error.message
    if case == "429-retry-after":
        assert error.retry_after == 17.0
    if case == "overflow-400":
        assert "prompt is too long" in error.body


async def test_html_200_is_an_error(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Reply(200, F.HTML, F.CAPTIVE_200))
    events, error = await collect_error(provider, request)
    assert events == []
    assert (error.status, error.transport, error.body) == (200, "html-200", F.CAPTIVE_200)
    assert error.request_bytes == request.predicted_bytes == server.last.body_bytes


async def test_html_200_without_a_content_type_is_still_recognised(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Reply(200, {"content-type": "application/octet-stream"}, F.CAPTIVE_200))
    _, error = await collect_error(provider, request)
    assert error.transport == "html-200" and error.body == F.CAPTIVE_200


async def test_error_event_inside_the_stream(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    frames = F.anthropic_text(["partial "])[:4] + [F.anthropic_error_event("overloaded_error", "Overloaded")]
    server.push(Stream(200, F.SSE, frames))
    events, error = await collect_error(provider, request)
    assert text_of(events) == "partial "
    assert (error.status, error.transport, error.error_type) == (200, "stream-error", "overloaded_error")
    assert json.loads(error.body)["error"]["type"] == "overloaded_error"
    assert error.request_bytes == server.last.body_bytes


async def test_connection_reset_while_uploading(server, settings):
    provider = make_anthropic(server, settings)
    view = [user("x" * 600_000)]
    request = provider.build(view, SYSTEM, [], max_tokens=64)
    server.push(Reset(after_bytes=4096))
    _, error = await collect_error(provider, request)
    assert error.transport == "connection" and error.status is None
    assert error.error_type == "APIConnectionError"
    assert error.request_bytes == request.predicted_bytes  # what we tried to send …
    assert server.last.body_bytes == 4096 < error.request_bytes  # … not what arrived


async def test_connection_dropped_mid_stream(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Stream(200, F.SSE, F.anthropic_text(["half an ans"])[:4], reset=True))
    events, error = await collect_error(provider, request)
    assert text_of(events) == "half an ans"
    assert error.transport == "connection" and error.request_bytes == server.last.body_bytes


async def test_stream_that_ends_early_is_a_drop(server, settings):
    provider = make_anthropic(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Stream(200, F.SSE, F.anthropic_text(["cut"])[:4]))
    _, error = await collect_error(provider, request)
    assert (error.transport, error.error_type) == ("connection", "IncompleteStream")


async def test_read_timeout(server):
    provider = make_anthropic(server, Settings(request_timeout=0.3, connect_timeout=0.3))
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Hold())
    _, error = await collect_error(provider, request)
    assert error.transport == "timeout" and error.error_type == "APITimeoutError"
    assert error.request_bytes == request.predicted_bytes


async def test_sse_with_the_wrong_content_type_is_still_read(server, settings):
    provider = make_anthropic(server, settings)
    server.push(Reply(200, {"content-type": "text/plain"}, "".join(F.anthropic_text(["mislabelled"]))))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=8))
    assert text_of(events) == "mislabelled" and stop_of(events).reason == "end"
