"""The real anthropic SDK against the lab: streaming, tools, usage and caching, max_tokens, count_tokens, errors."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import anthropic
import pytest

from app.lab.model import CUT_ENDING
from app.model.prompts import CONTINUATION

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file",
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer"},
                "limit": {"type": "integer"},
            },
            "required": ["path"],
        },
    }
]


def test_streamed_text_equals_the_json_answer(sdk, lab):
    pieces, final = sdk.stream_anthropic("hello lab")
    plain = sdk.ask_anthropic("hello lab")
    assert len(pieces) > 1
    assert "".join(pieces) == final.content[0].text
    assert final.content[0].text.startswith(
        "Lab model · turn 1 · received 100 B (≈3 tokens) in 1 message. You said: “hello lab”"
    )
    assert plain.content[0].text.startswith("Lab model · turn 1 · received 86 B")  # no "stream": true
    assert final.stop_reason == plain.stop_reason == "end_turn"
    assert final.usage.output_tokens == plain.usage.output_tokens > 1
    assert final.usage.input_tokens == plain.usage.input_tokens == 3  # "hello lab" = 9 bytes
    assert final.id.startswith("msg_") and final.model == "lab-1"
    assert [r["stream"] for r in lab.requests()] == [True, False]


def test_tool_call_round_trip(sdk):
    client = sdk.anthropic
    messages = [{"role": "user", "content": "Look at the start of the app.\n!read app/cli.py 1-40"}]
    with client.messages.stream(model="lab-1", max_tokens=1024, messages=messages, tools=TOOLS) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    call = next(b for b in first.content if b.type == "tool_use")
    assert (call.name, call.input) == ("read_file", {"path": "app/cli.py", "offset": 1, "limit": 40})
    assert call.id.startswith("toolu_")
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": '"""`bulkhead` — argument parsing."""\nimport sys\n',
                }
            ],
        },
    ]
    second = client.messages.create(model="lab-1", max_tokens=1024, messages=messages, tools=TOOLS)
    assert second.stop_reason == "end_turn"
    assert "read_file (" in second.content[0].text and "argument parsing" in second.content[0].text


def test_usage_reports_prompt_caching(sdk):
    system = [
        {
            "type": "text",
            "text": "You are a careful assistant. " * 200,
            "cache_control": {"type": "ephemeral"},
        }
    ]
    cold = sdk.ask_anthropic("first question", system=system)
    warm = sdk.ask_anthropic("second question", system=system)
    prefix = len(system[0]["text"]) // 4
    assert cold.usage.cache_creation_input_tokens == prefix and cold.usage.cache_read_input_tokens == 0
    assert warm.usage.cache_read_input_tokens == prefix and warm.usage.cache_creation_input_tokens == 0
    # input_tokens excludes what was cached, as the real API reports it
    assert warm.usage.input_tokens == 4  # "second question" (15 bytes) + the rounding of the prefix
    no_cache = sdk.ask_anthropic("second question", system=system[0]["text"])
    assert no_cache.usage.cache_read_input_tokens == 0
    assert no_cache.usage.input_tokens == warm.usage.input_tokens + prefix


def test_max_tokens_stop_and_continuation(sdk):
    cut = sdk.ask_anthropic("!cut", max_tokens=50)
    assert (
        cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 50 and len(cut.content[0].text) == 200
    )
    done = sdk.anthropic.messages.create(
        model="lab-1",
        max_tokens=100,
        messages=[
            {"role": "user", "content": "!cut"},
            {"role": "assistant", "content": cut.content[0].text},
            {"role": "user", "content": CONTINUATION},
        ],
    )
    assert done.stop_reason == "end_turn" and done.content[0].text == CUT_ENDING
    big_pieces, big = sdk.stream_anthropic("!big 40KB", max_tokens=20_000)
    assert big.stop_reason == "end_turn" and len("".join(big_pieces)) == 40 * 1024


def test_count_tokens(sdk, lab):
    lab.configure(window=10)  # counting is not generating: the window does not apply
    count = sdk.anthropic.messages.count_tokens(
        model="lab-1", messages=[{"role": "user", "content": "x" * 400}]
    )
    assert count.input_tokens == 100
    assert lab.requests()[-1]["verdict"] == "passed" and lab.requests()[-1]["operation"] == "count_tokens"
    lab.configure(faults="429@1")  # but it is rate limited like any provider request
    with pytest.raises(anthropic.RateLimitError):
        sdk.anthropic.messages.count_tokens(model="lab-1", messages=[{"role": "user", "content": "x"}])
    assert sdk.anthropic.messages.count_tokens(model="lab-1", messages=[{"role": "user", "content": "x"}])


def test_context_window_overflow_wording(sdk, lab):
    lab.configure(window=100)
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.ask_anthropic("y" * 2000)
    exc = caught.value
    assert exc.body["error"] == {
        "type": "invalid_request_error",
        "message": "prompt is too long: 500 tokens > 100 maximum",
    }
    assert exc.request_id and exc.response.headers["request-id"] == exc.request_id
    assert lab.requests()[-1]["verdict"] == "overflow"


def test_invalid_requests_get_anthropic_error_shapes(sdk, lab):
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.anthropic.messages.create(
            model="lab-1", max_tokens=0, messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.body["type"] == "error" and "max_tokens" in caught.value.body["error"]["message"]
    request = urllib.request.Request(
        lab.url + "/v1/messages",
        data=b"{not json",
        method="POST",
        headers={"content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as http_error:
        urllib.request.urlopen(request, timeout=10)
    assert http_error.value.code == 400 and http_error.value.headers["request-id"]
    body = json.loads(http_error.value.read())
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert [r["verdict"] for r in lab.requests()] == ["bad-request", "bad-request"]
