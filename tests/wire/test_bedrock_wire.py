"""The Bedrock adapter against a local server speaking ConverseStream's AWS event-stream framing."""

from __future__ import annotations

import base64
import json

import pytest

from app.config import Settings
from app.lab import eventstream
from app.model.messages import Message, ToolCall, ToolResult

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
from .conftest import FAKE_AWS_SECRET, make_bedrock
from .scripted_server import Hold, Reply, Reset, Stream

pytestmark = pytest.mark.usefixtures("aws_env")


async def test_streams_text_and_records_the_exchange(server, settings):
    provider = make_bedrock(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=300)
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["Guten ", "Tag ", "👋"])))

    events = await collect(provider, request)

    assert text_of(events) == "Guten Tag 👋"
    assert stop_of(events).reason == "end"
    received = server.last
    assert received.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    assert request.actual_bytes == request.predicted_bytes == received.body_bytes
    sent = json.loads(received.body)
    assert sent["inferenceConfig"] == {"maxTokens": 300}
    assert sent["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["required"] == ["path"]
    assert "modelId" not in sent
    assert request.status == 200
    assert request.request_headers["authorization"] == "[redacted]"
    assert FAKE_AWS_SECRET not in json.dumps(request.request_headers)


async def test_body_is_serialized_like_botocore(server, settings):
    provider = make_bedrock(server, settings)
    request = provider.build([user("é 😀 你好 שלום"), image_message()], SYSTEM, [], max_tokens=10)
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["ok"])))
    await collect(provider, request)
    body = server.last.body
    assert b'"\\u00e9 \\ud83d\\ude00 \\u4f60\\u597d' in body  # ensure_ascii, surrogate pairs
    assert b'"messages": [{"role": "user"' in body  # default separators
    (image,) = [b["image"] for b in json.loads(body)["messages"][0]["content"] if "image" in b]
    assert image["format"] == "png"
    assert base64.b64decode(image["source"]["bytes"]).startswith(b"\x89PNG")
    assert request.predicted_bytes == len(body)


async def test_tool_call_round_trip(server, settings):
    provider = make_bedrock(server, settings)
    view = [user("What is in README.md?")]
    server.push(
        Stream(200, F.EVENTSTREAM, F.bedrock_tool("tooluse_FAKE1", "read_file", {"path": "README.md"}))
    )

    first = await collect(provider, provider.build(view, SYSTEM, [READ_TOOL], max_tokens=300))

    assert text_of(first) == "Checking."
    (call,) = tool_calls_of(first)
    assert (call.id, call.name, call.args) == ("tooluse_FAKE1", "read_file", {"path": "README.md"})
    assert stop_of(first).reason == "tool_use"

    view = after_tool_call(view, call, "Checking.", "# bulkhead")
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["It is a README."])))
    second = await collect(provider, provider.build(view, SYSTEM, [READ_TOOL], max_tokens=300))

    assert text_of(second) == "It is a README."
    sent = json.loads(server.last.body)["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"][1] == {
        "toolUse": {"toolUseId": "tooluse_FAKE1", "name": "read_file", "input": {"path": "README.md"}}
    }
    assert sent[2]["content"][0] == {
        "toolResult": {"toolUseId": "tooluse_FAKE1", "content": [{"text": "# bulkhead"}]}
    }
    assert sent[2]["content"][-1] == {"cachePoint": {"type": "default"}}


def test_roles_alternate_and_errors_have_status(server, settings):
    provider = make_bedrock(server, settings)
    view = [
        user("a"),
        user("b"),
        Message.create("assistant", [ToolCall("t1", "shell", {"cmd": "x"})]),
        Message.create("tool", [ToolResult("t1", "", is_error=True)]),
        Message.create("system", "Notice."),
        user("c"),
    ]
    body = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=10, purpose="summary").body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][0]["content"] == [{"text": "a"}, {"text": "b"}]
    assert body["messages"][2]["content"][0] == {
        "toolResult": {"toolUseId": "t1", "content": [{"text": "(no output)"}], "status": "error"}
    }
    assert body["system"] == [{"text": SYSTEM}, {"text": "Notice."}]
    # without tools in the request, tool blocks travel as text (Bedrock rejects them otherwise)
    plain = provider.build(view, SYSTEM, [], max_tokens=10, purpose="summary").body
    assert "toolUse" not in json.dumps(plain) and "toolConfig" not in plain


def test_cache_points_only_where_the_model_accepts_them(server, settings):
    view = [user("one"), Message.create("assistant", "a"), user("two")]
    cached = make_bedrock(server, settings).build(view, SYSTEM, [], max_tokens=10).body
    assert cached["system"][-1] == {"cachePoint": {"type": "default"}}
    assert [m["content"][-1] for m in cached["messages"] if m["role"] == "user"] == [
        {"cachePoint": {"type": "default"}}
    ] * 2
    old = make_bedrock(server, settings, model="anthropic.claude-3-haiku-20240307-v1:0")
    assert "cachePoint" not in json.dumps(old.build(view, SYSTEM, [], max_tokens=10).body)


async def test_usage_counts_cache_reads_and_writes_in_the_prompt(server, settings):
    provider = make_bedrock(server, settings)
    usage = {
        "inputTokens": 10,
        "outputTokens": 4,
        "totalTokens": 514,
        "cacheReadInputTokens": 400,
        "cacheWriteInputTokens": 100,
    }
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["ok"], usage=usage)))
    result = usage_of(await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=10)))
    assert (result.input_tokens, result.output_tokens) == (510, 4)
    assert (result.cache_read_tokens, result.cache_write_tokens) == (400, 100)


async def test_max_tokens_stop(server, settings):
    provider = make_bedrock(server, settings)
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["Trunc"], stop="max_tokens")))
    events = await collect(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=2))
    assert (stop_of(events).reason, stop_of(events).raw) == ("max_tokens", "max_tokens")


# -- errors ---------------------------------------------------------------------------------------


def _amzn(error_type: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **F.JSON,
        "x-amzn-errortype": f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/",
        "x-amzn-requestid": "00000000-FAKE",
        **(extra or {}),
    }


ERRORS = {
    "nginx-413-html": (Reply(413, F.HTML, F.NGINX_413), 413, "413"),
    "cloudflare-403-html": (Reply(403, F.CLOUDFLARE_HEADERS, F.CLOUDFLARE_403), 403, "403"),
    "json-401": (
        Reply(
            401,
            _amzn("UnrecognizedClientException"),
            F.bedrock_error_json("The security token included in the request is invalid."),
        ),
        401,
        "UnrecognizedClientException",
    ),
    "429-retry-after": (
        Reply(
            429,
            _amzn("ThrottlingException", {"retry-after": "7"}),
            F.bedrock_error_json("Too many requests, please wait before trying again."),
        ),
        429,
        "ThrottlingException",
    ),
    "overflow-400": (
        Reply(
            400, _amzn("ValidationException"), F.bedrock_error_json("Input is too long for requested model.")
        ),
        400,
        "ValidationException",
    ),
    "gateway-413-header": (
        Reply(413, _amzn("RequestEntityTooLargeException"), F.bedrock_error_json("Request body too large")),
        413,
        "RequestEntityTooLargeException",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
async def test_error_responses_become_provider_errors(server, settings, case):
    reply, status, error_type = ERRORS[case]
    provider = make_bedrock(server, settings)
    request = provider.build(simple_view(), SYSTEM, [READ_TOOL], max_tokens=64)
    server.push(reply)

    events, error = await collect_error(provider, request)

    assert events == []
    assert (error.provider, error.status, error.error_type, error.transport) == (
        "bedrock",
        status,
        error_type,
        "http",  # an HTTP error answer: the classifier reads how the answer arrived
    )
    assert error.body == reply.body  # the raw body, even where botocore keeps only a message
    assert error.request_bytes == request.predicted_bytes == server.last.body_bytes == request.actual_bytes
    assert error.headers["content-type"] == reply.headers["content-type"]
    assert type(error.original).__name__ in ("ClientError", f"{error_type}")
    assert len(server.requests) == 1  # total_max_attempts=1
    if case == "cloudflare-403-html":
        assert error.headers["cf-ray"] == "8f1e2d3c4b5a6978-FRA"
    if case == "429-retry-after":
        assert error.retry_after == 7.0


async def test_html_5xx_keeps_the_page_botocore_drops(server, settings):
    provider = make_bedrock(server, settings)
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    server.push(Reply(502, F.HTML, page))
    _, error = await collect_error(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=8))
    assert error.status == 502 and error.body == page
    assert "Bad Gateway" in str(error.original)


async def test_html_200_is_an_error(server, settings):
    provider = make_bedrock(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Reply(200, F.HTML, F.CAPTIVE_200))
    events, error = await collect_error(provider, request)
    assert events == []
    assert (error.status, error.transport, error.body) == (200, "html-200", F.CAPTIVE_200)
    assert error.request_bytes == server.last.body_bytes == request.predicted_bytes


async def test_exception_frame_inside_the_stream(server, settings):
    provider = make_bedrock(server, settings)
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    frames = F.bedrock_text(["begun "])[:2] + [
        eventstream.exception("throttlingException", "Too many tokens")
    ]
    server.push(Stream(200, F.EVENTSTREAM, frames))
    events, error = await collect_error(provider, request)
    assert text_of(events) == "begun "
    assert (error.status, error.transport, error.error_type) == (200, "stream-error", "throttlingException")
    assert json.loads(error.body) == {"message": "Too many tokens"}
    assert type(error.original).__name__ == "EventStreamError"
    assert error.request_bytes == server.last.body_bytes


async def test_connection_reset_while_uploading(server, settings):
    provider = make_bedrock(server, settings)
    request = provider.build([user("z" * 600_000)], SYSTEM, [], max_tokens=64)
    server.push(Reset(after_bytes=2048))
    _, error = await collect_error(provider, request)
    assert (error.transport, error.error_type) == ("connection", "ConnectionClosedError")
    assert error.request_bytes == request.predicted_bytes > server.last.body_bytes == 2048


async def test_stream_that_ends_early_is_a_drop(server, settings):
    provider = make_bedrock(server, settings)
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["cut"])[:2]))
    events, error = await collect_error(provider, provider.build(simple_view(), SYSTEM, [], max_tokens=8))
    assert text_of(events) == "cut"
    assert (error.transport, error.error_type) == ("connection", "IncompleteStream")


async def test_read_timeout(server, aws_env):
    provider = make_bedrock(server, Settings(request_timeout=0.3, connect_timeout=0.3))
    request = provider.build(simple_view(), SYSTEM, [], max_tokens=64)
    server.push(Hold())
    _, error = await collect_error(provider, request)
    assert (error.transport, error.error_type) == ("timeout", "ReadTimeoutError")
    assert error.request_bytes == request.predicted_bytes


async def test_stopping_early_releases_the_worker(server, settings):
    provider = make_bedrock(server, settings)
    server.push(Stream(200, F.EVENTSTREAM, F.bedrock_text(["a", "b", "c", "d"])))
    stream = provider.stream(provider.build(simple_view(), SYSTEM, [], max_tokens=8))
    first = await anext(stream)
    await stream.aclose()
    assert text_of([first]) == "a"
