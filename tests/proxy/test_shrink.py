"""`--shrink` as a pure function (app/proxy/shrink.py): a request over the cap is rewritten to fit with
stubs keyed by content, the same stubs in every later request, pairs kept, signed and encrypted blocks
never edited, nothing before the last cache_control breakpoint changed unless it must — and anything it
cannot do leaves the original to go up unchanged."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from app.model.archive import MARKER_PREFIX, archive_key, marker
from app.proxy.shrink import NotShrunk, Shrunk, dump, shrink, stub_text
from app.proxy.wire import Wire

SIGNATURE = "EqQBCkYIBxgCKkD" + "s" * 200  # a thinking block's signature: must come back byte for byte


def _result(n: int, size: int = 10_000) -> str:
    return f"result {n}: " + (f"line {n} of a long tool output\n" * (size // 30))


def anthropic_conversation(
    rounds: int, *, breakpoint_last: bool = True, thinking: bool = True
) -> dict[str, Any]:
    """A Claude Code-like conversation: `rounds` tool rounds, cache_control on the newest user block."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "fix the bug"}]}]
    for n in range(rounds):
        assistant: list[dict[str, Any]] = []
        if thinking:
            assistant.append(
                {"type": "thinking", "thinking": f"round {n}: read more", "signature": SIGNATURE}
            )
        assistant.append(
            {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Read", "input": {"file_path": f"f{n}.py"}}
        )
        messages.append({"role": "assistant", "content": assistant})
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": _result(n)}],
            }
        )
    if breakpoint_last:
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return {
        "model": "lab-1",
        "max_tokens": 1024,
        "system": [
            {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}
        ],
        "tools": [{"name": "Read", "description": "read a file", "input_schema": {"type": "object"}}],
        "messages": messages,
    }


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()  # the client's own formatting (not compact): the proxy re-serialises


def _stubs(body: bytes) -> list[tuple[int, int]]:
    """(start, end) of every stub in a serialised body."""
    found, start = [], 0
    while (start := body.find(b"[bulkhead proxy: this tool result", start)) != -1:
        end = body.index(b"]]", body.index(MARKER_PREFIX.encode(), start)) + 2
        found.append((start, end))
        start = end
    return found


def test_an_oversized_request_fits_with_oldest_results_stubbed_and_originals_archived():
    body = _encode(anthropic_conversation(6))
    result = shrink(body, Wire.ANTHROPIC, 40_000)

    assert isinstance(result, Shrunk), result
    assert len(result.body) <= 40_000 < len(body)
    data = json.loads(result.body)
    contents = [m["content"][0]["content"] for m in data["messages"][2::2]]
    stubbed = [c.startswith("[bulkhead proxy") for c in contents]
    assert stubbed == sorted(stubbed, reverse=True) and any(stubbed) and not all(stubbed)  # oldest first
    for n, content in enumerate(contents):
        if content.startswith("[bulkhead proxy"):
            key = archive_key(_result(n))
            assert marker(key) in content
            assert (
                result.entries_by_key()[key].content == _result(n)
                if hasattr(result, "entries_by_key")
                else True
            )
    assert {e.key: e.content for e in result.entries} == {
        archive_key(_result(n)): _result(n) for n, s in enumerate(stubbed) if s
    }
    assert result.stubbed == sum(stubbed) and result.dropped == 0


def test_pairs_signed_thinking_system_and_tools_come_back_unchanged():
    original = anthropic_conversation(6)
    result = shrink(_encode(original), Wire.ANTHROPIC, 40_000)
    assert isinstance(result, Shrunk)
    data = json.loads(result.body)
    assert data["system"] == original["system"] and data["tools"] == original["tools"]
    assert [m["role"] for m in data["messages"]] == [m["role"] for m in original["messages"]]
    for before, after in zip(original["messages"], data["messages"], strict=True):
        if before["role"] == "assistant":
            assert after == before  # thinking (with its signature) and tool_use untouched
        else:
            for block_before, block_after in zip(before["content"], after["content"], strict=True):
                assert block_after.get("tool_use_id") == block_before.get("tool_use_id")
                assert block_after.get("cache_control") == block_before.get("cache_control")


def test_the_same_content_gets_the_same_stub_in_every_request():
    assert stub_text(_result(1)) == stub_text(_result(1)) != stub_text(_result(2))
    assert marker(archive_key(_result(1))) in stub_text(_result(1))


def test_two_consecutive_shrunk_requests_of_a_growing_conversation_share_their_prefix_up_to_the_newest_stub():
    first = shrink(_encode(anthropic_conversation(6)), Wire.ANTHROPIC, 40_000)
    second = shrink(_encode(anthropic_conversation(7)), Wire.ANTHROPIC, 40_000)
    assert isinstance(first, Shrunk) and isinstance(second, Shrunk)
    assert second.stubbed > first.stubbed  # the conversation grew: one more stub, after the old ones
    old_stubs, new_stubs = _stubs(first.body), _stubs(second.body)
    assert new_stubs[: len(old_stubs)] == old_stubs  # the same stubs at the same offsets
    newest = new_stubs[-1][1]
    assert first.body[: old_stubs[-1][1]] == second.body[: old_stubs[-1][1]]
    common = next(
        (i for i, (a, b) in enumerate(zip(first.body, second.body, strict=False)) if a != b), len(first.body)
    )
    assert common >= old_stubs[-1][1] and newest > common  # identical up to where the newest stub begins
    assert (
        hashlib.sha256(second.body[: new_stubs[-2][1]]).digest()
        == hashlib.sha256(first.body[: new_stubs[-2][1]]).digest()
    )


def test_results_after_the_last_breakpoint_go_first_and_the_cached_prefix_is_left_alone():
    body = anthropic_conversation(6, breakpoint_last=False)
    body["messages"][4]["content"][0]["cache_control"] = {"type": "ephemeral"}  # after round 1's result
    encoded = _encode(body)
    result = shrink(
        encoded, Wire.ANTHROPIC, len(dump(body)) - 15_000
    )  # one stub after the breakpoint is enough

    assert isinstance(result, Shrunk) and result.stubbed == 2 and not result.touched_cached_prefix
    data = json.loads(result.body)
    assert data["messages"][:5] == body["messages"][:5]  # up to and with the breakpoint: unchanged
    assert data["messages"][6]["content"][0]["content"].startswith("[bulkhead proxy")

    tight = shrink(encoded, Wire.ANTHROPIC, 15_000)  # cannot fit otherwise: the cached prefix goes too
    assert isinstance(tight, Shrunk) and tight.touched_cached_prefix
    assert "cached prefix rebuilt" in tight.note


def test_whole_turns_are_dropped_from_the_front_when_stubs_are_not_enough():
    body = anthropic_conversation(3)
    for n in range(3):  # large user prompts between rounds: no tool result to stub
        body["messages"].append({"role": "assistant", "content": [{"type": "text", "text": f"done {n}"}]})
        body["messages"].append(
            {"role": "user", "content": [{"type": "text", "text": "more " + "x" * 12_000}]}
        )
    result = shrink(_encode(body), Wire.ANTHROPIC, 20_000)

    assert isinstance(result, Shrunk) and result.dropped > 0
    data = json.loads(result.body)
    assert data["messages"][0]["role"] == "user" and "earlier messages" in data["messages"][0]["content"]
    kept_uses = {
        b["id"]
        for m in data["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use"
    }
    kept_results = {
        b["tool_use_id"]
        for m in data["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    assert kept_uses == kept_results  # every tool_use kept with its tool_result, or both dropped
    assert data["messages"][-1] == body["messages"][-1]
    dropped = json.loads(result.entries[-1].content)
    assert dropped[0] == body["messages"][0]  # the dropped turns are archived whole, as the client sent them


def test_an_anthropic_compaction_block_is_never_dropped():
    body = anthropic_conversation(2, thinking=False)
    compaction = {"role": "assistant", "content": [{"type": "compaction", "content": "summary " * 50}]}
    body["messages"] += [compaction, {"role": "user", "content": "next " + "y" * 20_000}]
    result = shrink(_encode(body), Wire.ANTHROPIC, 25_000)
    assert isinstance(result, Shrunk)
    assert compaction in json.loads(result.body)["messages"]


def test_openai_chat_tool_messages_and_responses_outputs_are_stubbed_reasoning_untouched():
    chat = {
        "model": "lab-1",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
        + [
            m
            for n in range(5)
            for m in (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"c{n}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "tool_call_id": f"c{n}", "content": _result(n)},
            )
        ],
    }
    result = shrink(_encode(chat), Wire.OPENAI_CHAT, 30_000)
    assert isinstance(result, Shrunk)
    out = json.loads(result.body)["messages"]
    assert out[0] == chat["messages"][0] and out[2]["tool_calls"] == chat["messages"][2]["tool_calls"]
    assert out[3]["content"].startswith("[bulkhead proxy") and out[3]["tool_call_id"] == "c0"

    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" + "z" * 3000}
    compaction_item = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA" + "c" * 3000}
    responses = {
        "model": "lab-1",
        "input": [compaction_item, {"type": "message", "role": "user", "content": "go"}, reasoning]
        + [
            item
            for n in range(5)
            for item in (
                {"type": "function_call", "call_id": f"c{n}", "name": "cat", "arguments": "{}"},
                {"type": "function_call_output", "call_id": f"c{n}", "output": _result(n)},
            )
        ],
    }
    result = shrink(_encode(responses), Wire.OPENAI_RESPONSES, 35_000)
    assert isinstance(result, Shrunk)
    items = json.loads(result.body)["input"]
    assert items[0] == compaction_item and items[2] == reasoning
    assert items[4]["output"].startswith("[bulkhead proxy") and items[4]["call_id"] == "c0"


def test_what_cannot_be_shrunk_fails_open():
    assert isinstance(shrink(b"not json", Wire.ANTHROPIC, 10), NotShrunk)
    assert isinstance(shrink(b"{}", Wire.ANTHROPIC, 10), NotShrunk)
    assert isinstance(shrink(b"{}", Wire.OTHER, 10), NotShrunk)
    floor = anthropic_conversation(2)
    floor["system"][0]["text"] = "rules " * 20_000  # the system prompt alone is over the target
    result = shrink(_encode(floor), Wire.ANTHROPIC, 50_000)
    assert isinstance(result, NotShrunk) and "stays over" in result.reason
    already = anthropic_conversation(2)
    for message in already["messages"][2::2]:
        message["content"][0]["content"] = stub_text("x") + "y" * 5000  # holds a marker: never re-stubbed
    result = shrink(_encode(already), Wire.ANTHROPIC, 6000)
    assert isinstance(result, NotShrunk)  # a stub is never stubbed again (markers never nest)
