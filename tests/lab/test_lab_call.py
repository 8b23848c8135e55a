"""The lab model's `!call TOOL {json}`: any tool the request offers (MCP tools included), testable offline."""

from __future__ import annotations

from app.lab import wire_anthropic
from app.lab.conversation import TOOL_USE
from app.lab.model import GRAMMAR, respond


def conv(text: str, tools=("mcp__demo__echo", "read_file"), deferred=()):
    body = {
        "model": "lab-1",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": text}],
        "tools": [{"name": name, "input_schema": {"type": "object"}} for name in tools]
        + [{"name": name, "input_schema": {"type": "object"}, "defer_loading": True} for name in deferred],
    }
    return wire_anthropic.parse(body, body_bytes=len(str(body)))


def calls(reply):
    return [(b.name, dict(b.input)) for b in reply.blocks if b.kind == TOOL_USE]


def test_call_any_offered_tool_with_a_json_input():
    reply = respond(conv('!call mcp__demo__echo {"text": "okapi", "n": [1, 2]}'))
    assert calls(reply) == [("mcp__demo__echo", {"text": "okapi", "n": [1, 2]})]
    assert calls(respond(conv("!call read_file"))) == [("read_file", {})]


def test_bad_json_and_tools_not_offered_are_explained_not_called():
    bad = respond(conv('!call mcp__demo__echo {"text": okapi}'))
    assert not calls(bad) and "does not parse as JSON" in bad.text
    listed = respond(conv("!call mcp__demo__echo [1]"))
    assert "must be a JSON object" in listed.text
    missing = respond(conv("!call mcp__other__x {}"))
    assert not calls(missing) and "does not offer the tool" in missing.text
    assert "!call TOOL {JSON}" in GRAMMAR


def test_a_deferred_tool_is_not_offered_until_a_tool_reference_loads_it():
    hidden = respond(conv("!call mcp__big__t1 {}", deferred=("mcp__big__t1",)))
    assert "does not offer the tool" in hidden.text
    body = {
        "model": "lab-1",
        "max_tokens": 4096,
        "tools": [
            {"name": "tool_search", "input_schema": {"type": "object"}},
            {"name": "mcp__big__t1", "input_schema": {"type": "object"}, "defer_loading": True},
        ],
        "messages": [
            {"role": "user", "content": "find it"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": "t1"}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "tool_reference", "tool_name": "mcp__big__t1"}],
                    },
                    {"type": "text", "text": "!call mcp__big__t1 {}"},
                ],
            },
        ],
    }
    loaded = wire_anthropic.parse(body, body_bytes=1000)
    assert "mcp__big__t1" in loaded.tools


def test_a_reference_to_a_tool_that_is_not_deferred_is_a_400():
    import pytest

    from app.lab.conversation import WireError

    body = {
        "model": "lab-1",
        "max_tokens": 10,
        "tools": [{"name": "x", "input_schema": {}}],
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "tool_reference", "tool_name": "nope"}],
                    }
                ],
            },
        ],
    }
    with pytest.raises(WireError, match="tool_reference"):
        wire_anthropic.parse(body, body_bytes=100)
