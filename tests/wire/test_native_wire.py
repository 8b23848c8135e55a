"""Both providers' native compaction mechanisms and Anthropic's applied-edit reports, on the wire:
the adapters against the lab through the real `anthropic` and `openai` SDKs."""

from __future__ import annotations

import pytest

from app.config import Route, Settings
from app.model.messages import Message, Native, Text, ToolCall, ToolResult, part_from_dict, part_to_dict
from app.providers.anthropic import COMPACT_ON_DEMAND_BETA, COMPACT_THRESHOLD_BETA, CONTEXT_MANAGEMENT_BETA
from app.providers.base import EditsChunk, NativeChunk, TextChunk, make_provider
from app.providers.bedrock import translate as bedrock_translate
from app.providers.openai import translate as chat_translate
from app.providers.responses import translate as responses_translate

from .common import READ_TOOL, SYSTEM, user


@pytest.fixture
def lab(lab_server):
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0, slow_pause=0.01)
    lab_server.clear_requests()
    return lab_server


def _anthropic(lab, **settings):
    route = Route(name="a", provider="anthropic", model="claude-sonnet-5-5", base_url=lab.url)
    return make_provider(route, Settings(context_engine="provider", **settings), "sk-ant-FAKE")


def _tool_history(results: int, chars: int) -> list[Message]:
    view = [user("read them")]
    for i in range(results):
        view.append(Message.create("assistant", [ToolCall(f"toolu_{i:02d}", "read_file", {"path": f"f{i}"})]))
        view.append(Message.create("tool", [ToolResult(f"toolu_{i:02d}", f"{i} " + "z" * chars)]))
    return view + [user("and?")]


async def test_threshold_compaction_block_streams_back_as_a_native_item(lab):
    provider = _anthropic(lab)
    provider.compact_threshold = 1_000
    request = provider.build(_tool_history(3, 4_000), SYSTEM, [READ_TOOL], max_tokens=512)
    assert request.body["context_management"]["edits"][-1] == {
        "type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": 1_000},
    }
    events = [e async for e in provider.stream(request)]
    natives = [e for e in events if isinstance(e, NativeChunk)]
    assert len(natives) == 1 and natives[0].api == "anthropic" and natives[0].item["type"] == "compaction"
    assert natives[0].item["content"].startswith("Summary of the earlier conversation")
    assert any(isinstance(e, TextChunk) for e in events)  # the model answered after compacting
    beta = request.request_headers.get("anthropic-beta", "")
    assert CONTEXT_MANAGEMENT_BETA in beta and COMPACT_THRESHOLD_BETA in beta
    assert abs(request.predicted_bytes / request.actual_bytes - 1) <= 0.01

    # Replayed: the API (and the lab) reads from the compaction block on.
    anchor = Message.create("assistant", [Native(n.api, n.item) for n in natives] + [Text("ok")])
    follow = provider.build([anchor, user("next")], SYSTEM, [READ_TOOL], max_tokens=512)
    assert follow.body["messages"][0]["content"][0] == natives[0].item
    _ = [e async for e in provider.stream(follow)]
    assert lab.requests()[-1]["verdict"] == "passed"


async def test_applied_edits_are_reported_with_counts(lab):
    provider = _anthropic(lab)
    request = provider.build(_tool_history(8, 60_000), SYSTEM, [READ_TOOL], max_tokens=512)
    assert request.body["context_management"]["edits"][0]["keep"] == {"type": "tool_uses", "value": 5}
    events = [e async for e in provider.stream(request)]
    (edits,) = [e for e in events if isinstance(e, EditsChunk)]
    assert edits.kinds == ("clear_tool_uses_20250919",) and edits.edits == 1
    assert edits.cleared_tool_uses == 3 and edits.cleared_input_tokens >= 20_000
    assert lab.requests()[-1]["applied_edits"][0]["cleared_tool_uses"] == 3


async def test_on_demand_compaction_is_one_request_with_the_compaction_parameter(lab):
    provider = _anthropic(lab)
    request = provider.build_compaction(
        _tool_history(2, 2_000), SYSTEM, [READ_TOOL], instructions="keep file names"
    )
    found, usage = await provider.send_compaction(request)
    assert "context_management" not in request.body and request.body["compaction"] == {
        "type": "summarize",
        "instructions": "keep file names",
    }
    assert request.request_headers.get("anthropic-beta") == COMPACT_ON_DEMAND_BETA
    assert [n.item["type"] for n in found] == ["compaction"]
    assert found[0].item["content"].startswith("Instructions: keep file names")
    assert usage is not None and usage.output_tokens > 0
    assert abs(request.predicted_bytes / request.actual_bytes - 1) <= 0.01
    record = lab.requests()[-1]
    assert record["path"] == "/v1/messages" and record["stream"] is False and record["compaction"] is True


async def test_openai_server_side_and_standalone_compaction(lab):
    route = Route(name="o", provider="openai", model="gpt-5.5", base_url=lab.url + "/v1", api="responses")
    provider = make_provider(route, Settings(context_engine="provider"), "sk-FAKE")
    provider.compact_threshold = 500
    request = provider.build(_tool_history(2, 4_000), SYSTEM, [READ_TOOL], max_tokens=512)
    assert request.body["context_management"] == [{"type": "compaction", "compact_threshold": 500}]
    events = [e async for e in provider.stream(request)]
    kinds = [e.item["type"] for e in events if isinstance(e, NativeChunk)]
    assert kinds[0] == "compaction" and "reasoning" in kinds
    compaction = next(e for e in events if isinstance(e, NativeChunk) and e.item["type"] == "compaction")
    assert set(compaction.item) >= {"id", "type", "encrypted_content"}

    request = provider.build_compaction(_tool_history(2, 1_000), SYSTEM, [READ_TOOL])
    found, usage = await provider.send_compaction(request)
    assert abs(request.predicted_bytes / request.actual_bytes - 1) <= 0.01
    assert request.url.endswith("/responses/compact") and [n.item["type"] for n in found] == ["compaction"]
    assert lab.requests()[-1]["path"] == "/v1/responses/compact" and usage is not None


def test_a_native_item_goes_only_to_its_own_api_or_as_readable_text():
    anthropic_block = Native("anthropic", {"type": "compaction", "content": "we fixed the parser"})
    opaque = Native("openai-responses", {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA"})
    message = Message.create("assistant", [anthropic_block, opaque, Text("done")])
    assert part_from_dict(part_to_dict(anthropic_block)) == anthropic_block  # stored and loaded as is
    items = responses_translate(message).items
    assert items[0] == dict(opaque.item)  # replayed verbatim to its own API …
    assert items[1] == {
        "role": "assistant",
        "content": "[summary of the earlier conversation]\nwe fixed the parser" + "done",
    }  # … others as text
    chat = chat_translate(message).messages
    assert chat[0]["content"].startswith("[summary of the earlier conversation]\nwe fixed the parser")
    assert "gAAA" not in str(chat)
    bedrock = bedrock_translate(message, tools=True).blocks
    assert bedrock[0] == {"text": "[summary of the earlier conversation]\nwe fixed the parser"}
