"""The real openai SDK against the lab: SSE with usage, tool_calls, finish reasons, caching, errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "grep",
            "description": "Search files",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {"type": "function", "function": {"name": "shell", "parameters": {"type": "object", "properties": {}}}},
]


def test_streamed_text_with_a_final_usage_chunk(sdk, lab):
    pieces, chunks = sdk.stream_openai("hello from openai")
    text = "".join(pieces)
    assert text.startswith("Lab model · turn 1 · received ") and "You said: “hello from openai”" in text
    assert chunks[0].choices[0].delta.role == "assistant"
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ["stop"]
    usage = chunks[-1].usage
    assert chunks[-1].choices == [] and usage is not None
    assert usage.prompt_tokens == 5 and usage.completion_tokens == -(-len(text) // 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert all(c.usage is None for c in chunks[:-1])


def test_tool_calls_stream_and_round_trip(sdk):
    client = sdk.openai
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "!grep 'def run' app\n!shell git status"},
    ]
    calls: dict[int, dict] = {}
    finish = None
    for chunk in client.chat.completions.create(model="lab-1", messages=messages, tools=TOOLS, stream=True):
        choice = chunk.choices[0]
        finish = choice.finish_reason or finish
        for delta in choice.delta.tool_calls or []:
            entry = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
            entry["id"] = delta.id or entry["id"]
            entry["name"] = delta.function.name if delta.function and delta.function.name else entry["name"]
            entry["arguments"] += (delta.function.arguments or "") if delta.function else ""
    assert finish == "tool_calls"
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == [
        ("grep", {"pattern": "def run", "path": "app"}),
        ("shell", {"command": "git status"}),
    ]
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls.values()
            ],
        }
    )
    messages += [
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "app/cli.py:12: def run(args):"},
        {"role": "tool", "tool_call_id": calls[1]["id"], "content": "On branch main\nnothing to commit"},
    ]
    answer = client.chat.completions.create(model="lab-1", messages=messages, tools=TOOLS)
    text = answer.choices[0].message.content
    assert answer.choices[0].finish_reason == "stop"
    assert "received 2 tool results" in text and "- grep (" in text and "“On branch main”" in text


def test_length_finish_and_max_tokens_validation(sdk, lab):
    answer = sdk.ask_openai("!big 8KB", max_tokens=100)
    assert answer.choices[0].finish_reason == "length" and len(answer.choices[0].message.content) == 400
    assert answer.usage.completion_tokens == 100
    answer = sdk.ask_openai("!big 8KB", max_completion_tokens=3000)
    assert answer.choices[0].finish_reason == "stop" and len(answer.choices[0].message.content) == 8192
    for field in ("max_tokens", "max_completion_tokens"):
        with pytest.raises(openai.BadRequestError) as caught:
            sdk.ask_openai("cheap rejection", **{field: 0})
        assert caught.value.code == "integer_below_min_value" and caught.value.param == field
        assert caught.value.type == "invalid_request_error"
    assert [r["verdict"] for r in lab.requests()][-2:] == ["bad-request", "bad-request"]


def test_automatic_prompt_caching_reports_cached_tokens(sdk):
    context = [{"role": "system", "content": "Project notes. " * 600}]
    first = sdk.openai.chat.completions.create(
        model="lab-1", messages=context + [{"role": "user", "content": "a?"}]
    )
    second = sdk.openai.chat.completions.create(
        model="lab-1", messages=context + [{"role": "user", "content": "b?"}]
    )
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= second.usage.prompt_tokens
    assert (
        second.usage.prompt_tokens == first.usage.prompt_tokens
    )  # OpenAI counts cached tokens as prompt tokens


def test_context_window_overflow_wording(sdk, lab):
    lab.configure(window=1000)
    with pytest.raises(openai.BadRequestError) as caught:
        sdk.ask_openai("z" * 8000)
    exc = caught.value
    assert exc.code == "context_length_exceeded" and exc.param == "messages"
    assert exc.body["message"] == (
        "This model's maximum context length is 1000 tokens. However, your messages "
        "resulted in 2000 tokens. Please reduce the length of the messages."
    )
    assert exc.response.headers["x-request-id"].startswith("req_")


def test_malformed_json_gets_the_openai_error_shape(lab):
    request = urllib.request.Request(
        lab.url + "/v1/chat/completions",
        data=b'{"model": ',
        method="POST",
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    body = json.loads(caught.value.read())
    assert caught.value.code == 400
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert "could not parse the JSON body" in body["error"]["message"]
