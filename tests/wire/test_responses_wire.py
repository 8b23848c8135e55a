"""The OpenAI Responses adapter through the real `openai` SDK, against the lab's `/v1/responses`.

Text, a tool round trip, reasoning items kept encrypted and replayed, usage with cached tokens,
each error class as the classifier sees it, exact bytes (predicted = sent = received, ±1%),
probing, cost, and which API a route speaks by default.
"""

from __future__ import annotations

import base64
import random

import pytest

from app.config import Route, Settings
from app.engine.failures import classify
from app.model.costs import price_usd
from app.model.messages import Image, Message, Native, Text, ToolCall, ToolResult
from app.providers.base import (
    NativeChunk,
    ProviderError,
    StopChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
    make_provider,
)
from app.providers.openai import OpenAIProvider, openai_api
from app.providers.responses import API, ResponsesProvider

from .common import BYTE_RATIOS, READ_TOOL, SYSTEM, user

MODEL = "gpt-5.5"


@pytest.fixture
def lab(lab_server):
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0, slow_pause=0.01)
    lab_server.clear_requests()
    lab_server.clear_cache()
    return lab_server


def responses(lab, settings: Settings | None = None, **route) -> ResponsesProvider:
    provider = make_provider(
        Route(name="r", provider="openai", model=MODEL, base_url=lab.url + "/v1", api="responses", **route),
        settings or Settings(),
        "sk-FAKE-test",
    )
    assert isinstance(provider, ResponsesProvider)
    return provider


async def drain(provider, view, tools=(), max_tokens=512):
    request = provider.build(view, SYSTEM, tools, max_tokens=max_tokens)
    events = [event async for event in provider.stream(request)]
    return request, events


def test_routes_speak_responses_on_openai_and_azure_v1_and_chat_elsewhere(lab):
    def api(base_url=None, **extra):
        return openai_api(Route(name="x", provider="openai", model="m", base_url=base_url, **extra))

    assert api() == "responses"
    assert api("https://api.openai.com/v1") == "responses"
    assert api("https://contoso.openai.azure.com/openai/v1/") == "responses"
    assert api("http://localhost:11434/v1") == "chat"  # Ollama
    assert api("https://llm-gateway.example.com/v1") == "chat"
    assert api("https://contoso.openai.azure.com/openai/v1/", api="chat") == "chat"
    assert api("http://localhost:8000/v1", api="responses") == "responses"
    assert isinstance(
        make_provider(
            Route(name="x", provider="openai", model="m", base_url="http://localhost:1/v1"), Settings(), None
        ),
        OpenAIProvider,
    )
    assert not isinstance(
        make_provider(
            Route(name="x", provider="openai", model="m", base_url="http://localhost:1/v1"), Settings(), None
        ),
        ResponsesProvider,
    )


async def test_text_streams_from_v1_responses_with_usage_and_stop(lab):
    provider = responses(lab)
    request, events = await drain(provider, [user("Hello there")])
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert text.startswith("Lab model · turn 1") and "Hello there" in text
    assert [e.reason for e in events if isinstance(e, StopChunk)] == ["end"]
    usage = next(e.usage for e in events if isinstance(e, UsageChunk))
    assert usage.input_tokens > 0 and usage.output_tokens > 0
    record = lab.requests()[-1]
    assert record["path"] == "/v1/responses" and record["stream"] is True
    assert request.body["store"] is False and request.body["include"] == ["reasoning.encrypted_content"]
    assert request.body["instructions"] == SYSTEM and request.body["max_output_tokens"] == 512


async def test_reasoning_items_are_kept_encrypted_and_replayed(lab):
    provider = responses(lab)
    _, events = await drain(provider, [user("think about it")])
    natives = [e for e in events if isinstance(e, NativeChunk)]
    assert [n.item["type"] for n in natives] == ["reasoning"]
    assert natives[0].api == API and natives[0].item["encrypted_content"].startswith("lab-reasoning:")
    answer = Message.create(
        "assistant",
        [Native(n.api, n.item) for n in natives]
        + [Text("".join(e.text for e in events if isinstance(e, TextChunk)))],
    )
    request, _ = await drain(provider, [user("think about it"), answer, user("and now?")])
    # The item went back verbatim, before the assistant's text, and the lab verified it.
    assert request.body["input"][1] == natives[0].item
    assert request.body["input"][2]["role"] == "assistant"
    assert lab.requests()[-1]["reasoning_replayed"] == 1
    # A tampered item is refused as OpenAI refuses one (400 invalid_encrypted_content).
    bad = Message.create("assistant", [Native(API, {**natives[0].item, "encrypted_content": "gAAAA-forged"})])
    with pytest.raises(ProviderError) as caught:
        await drain(provider, [user("think about it"), bad, user("and now?")])
    assert caught.value.status == 400 and "encrypted" in (caught.value.body or "")


async def test_tool_round_trip_function_call_and_output(lab):
    provider = responses(lab)
    view = [user("!read notes.txt")]
    _, events = await drain(provider, view, tools=[READ_TOOL])
    calls = [e for e in events if isinstance(e, ToolCallChunk)]
    assert [(c.name, c.args) for c in calls] == [("read_file", {"path": "notes.txt"})]
    assert [e.reason for e in events if isinstance(e, StopChunk)] == ["tool_use"]
    view += [
        Message.create("assistant", [ToolCall(calls[0].id, calls[0].name, calls[0].args)]),
        Message.create("tool", [ToolResult(calls[0].id, "line one\nline two")]),
    ]
    request, events = await drain(provider, view, tools=[READ_TOOL])
    kinds = [item.get("type", "message") for item in request.body["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]
    assert request.body["input"][2] == {
        "type": "function_call_output",
        "call_id": calls[0].id,
        "output": "line one\nline two",
    }
    assert request.body["tools"][0] == {
        "type": "function",
        "name": "read_file",
        "description": READ_TOOL.description,
        "parameters": dict(READ_TOOL.input_schema),
        "strict": False,
    }
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert "read_file" in text and "line one" in text


async def test_cached_tokens_are_reported_and_priced(lab):
    provider = responses(lab)
    view = [user("a long shared prefix " * 400)]
    await drain(provider, view)
    _, events = await drain(provider, view + [Message.create("assistant", "ok"), user("again")])
    usage = next(e.usage for e in events if isinstance(e, UsageChunk))
    assert usage.cache_read_tokens > 0 and usage.cache_read_tokens <= usage.input_tokens
    cost = price_usd(usage, MODEL, "openai")
    assert cost is None or cost > 0  # unpriced models are "unpriced", never a crash


async def test_max_output_tokens_cut_is_max_tokens(lab):
    provider = responses(lab)
    _, events = await drain(provider, [user("!big 8KB")], max_tokens=64)
    assert [(e.reason, e.raw) for e in events if isinstance(e, StopChunk)] == [
        ("max_tokens", "max_output_tokens")
    ]


@pytest.mark.parametrize(
    ("configure", "kind"),
    [
        ({"faults": "429@1"}, "rate_limit"),
        ({"faults": "500@1"}, "server_error"),
        ({"faults": "529@1"}, "overloaded"),
        ({"faults": "drop@1"}, "other"),  # small requests the connection dropped: transient, retried
        ({"faults": "cut@1"}, "other"),
        ({"gateway": "nginx", "cap": "16KB"}, "payload_too_large"),
        ({"gateway": "cloudflare", "cap": "16KB"}, "waf_block"),
        ({"gateway": "html-200", "cap": "16KB"}, "waf_block"),
        ({"window": 2000}, "context_overflow"),
    ],
)
async def test_each_error_class_is_classified(lab, configure, kind):
    lab.configure(**configure)
    provider = responses(lab, Settings(request_timeout=10))
    request = provider.build([user("x" * 20_000 + " !big 4KB")], SYSTEM, (), max_tokens=512)
    with pytest.raises(ProviderError) as caught:
        async for _event in provider.stream(request):
            pass
    failure = classify(caught.value)
    assert failure.kind == kind, (failure, caught.value)
    if kind == "other":
        assert failure.transient and caught.value.transport == "connection"


async def test_a_stream_that_fails_mid_answer_is_a_stream_error(lab):
    lab.configure(faults="stream-error@1")
    provider = responses(lab)
    request = provider.build([user("!big 4KB")], SYSTEM, (), max_tokens=4096)
    seen: list = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(request):
            seen.append(event)
    assert caught.value.transport == "stream-error" and caught.value.error_type == "server_error"
    assert any(isinstance(e, TextChunk) for e in seen)  # output had become visible: never retried
    assert classify(caught.value).kind in ("overloaded", "server_error")


async def test_bad_request_quotes_the_api(lab):
    provider = responses(lab)
    request = provider.build([user("hi")], SYSTEM, (), max_tokens=8)  # below the API's minimum of 16
    with pytest.raises(ProviderError) as caught:
        async for _event in provider.stream(request):
            pass
    assert caught.value.status == 400 and "max_output_tokens" in caught.value.message
    assert classify(caught.value).kind == "other"


def _image(seed: int, size: int) -> Image:
    return Image("image/png", base64.b64encode(random.Random(seed).randbytes(size)).decode())


UNICODE = 'Olá 😀 👩‍👩‍👧 café — 你好 \u200fمرحبا\u200f quotes " \\ \t \x00\x1f \u2028 ✨'


def _views() -> dict[str, list[Message]]:
    big = "│ 行: def handler(request): return {'ok': True} ünïcødé\n" * 8_000
    call = ToolCall("call_01", "read_file", {"path": "src/ünï.py", "note": UNICODE[:20], "n": 3.5})
    reasoning = Native(
        API,
        {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "lab-reasoning:" + "ab" * 16},
    )
    return {
        "unicode": [
            user(UNICODE),
            Message.create("assistant", UNICODE[::-1]),
            user("و" * 5000 + "🙂" * 3000),
        ],
        "images": [Message.create("user", [Text("look"), _image(1, 60_000), _image(2, 30_000)])],
        "tools-large-result": [
            user("read it"),
            Message.create("assistant", [reasoning, Text("Reading."), call]),
            Message.create("tool", [ToolResult("call_01", big)]),
            Message.create("tool", [ToolResult("call_02", "boom", is_error=True)]),
            user("thanks"),
        ],
        "system-messages": [Message.create("system", "extra rule ✓"), user("hi")],
    }


@pytest.mark.parametrize("name", list(_views()))
async def test_exact_bytes_predicted_sent_and_received_agree(lab, name):
    provider = responses(lab)
    view = _views()[name]
    request = provider.build(view, SYSTEM, [READ_TOOL], max_tokens=512)
    async for _event in provider.stream(request):
        pass
    received = lab.requests()[-1]["bytes"]
    assert request.actual_bytes == received
    ratio = request.predicted_bytes / request.actual_bytes
    BYTE_RATIOS.setdefault("openai-responses", []).append(ratio)
    assert abs(ratio - 1) <= 0.01, (request.predicted_bytes, request.actual_bytes)


async def test_prediction_is_incremental(lab):
    provider = responses(lab)
    view = [user(f"message {i} " * 100) for i in range(200)]
    provider.build(view, SYSTEM, [READ_TOOL], max_tokens=512)
    before = provider.serialized_messages
    provider.build(view + [user("one more")], SYSTEM, [READ_TOOL], max_tokens=512)
    assert provider.serialized_messages == before + 1


async def test_probe_is_refused_after_the_gateway_and_costs_nothing(lab):
    provider = responses(lab)
    with pytest.raises(ProviderError) as refused:  # the API's own 400: past the gateway, no model ran
        await provider.probe(50_000)
    assert refused.value.status == 400 and abs(refused.value.request_bytes - 50_000) < 200
    assert "max_output_tokens" in refused.value.message
    record = lab.requests()[-1]
    assert record["verdict"] == "bad-request" and record["path"] == "/v1/responses"
    lab.configure(gateway="nginx", cap="32KB")
    with pytest.raises(ProviderError) as caught:
        await provider.probe(50_000)
    assert caught.value.status == 413
