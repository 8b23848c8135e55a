"""The Responses stream parser on damaged input: clean events or a ProviderError, nothing else
(the same contract `test_fuzz.py` holds the other parsers to)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from app.providers.responses import ResponsesEvents, ResponsesProvider
from app.providers.wire import Exchange
from tests.reliability.test_fuzz import (
    ARGUMENT_TEXT,
    COUNTS,
    IDENT,
    SHORT_TEXT,
    _malform,
    _pieces,
    _retype_a_leaf,
    assert_clean_or_provider_error,
    fed,
    fuzz,
    sse_text,
)


@st.composite
def responses_events(draw) -> list[dict[str, Any]]:
    """A Responses event sequence: well formed, then malformed (dropped, reordered, stray events)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_f", "status": "in_progress"}}
    ]
    index = 0
    if draw(st.booleans()):
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": {
                    "id": "rs_f",
                    "type": "reasoning",
                    "summary": [],
                    "encrypted_content": draw(SHORT_TEXT),
                },
            }
        )
        index += 1
    if draw(st.booleans()):
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": {"id": "cmp_f", "type": "compaction", "encrypted_content": draw(SHORT_TEXT)},
            }
        )
        index += 1
    events += [
        {"type": "response.output_text.delta", "output_index": index, "content_index": 0, "delta": t}
        for t in draw(st.lists(SHORT_TEXT, max_size=4))
    ]
    for _ in range(draw(st.integers(0, 2))):
        index += 1
        call = {
            "id": "fc_f",
            "type": "function_call",
            "call_id": draw(IDENT),
            "name": draw(IDENT),
            "arguments": "",
        }
        events.append({"type": "response.output_item.added", "output_index": index, "item": call})
        arguments = draw(ARGUMENT_TEXT)
        events += [
            {"type": "response.function_call_arguments.delta", "output_index": index, "delta": p}
            for p in _pieces(draw, arguments)
        ]
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": {**call, "arguments": arguments},
            }
        )
    final = draw(st.sampled_from(["response.completed", "response.incomplete"]))
    events.append(
        {
            "type": final,
            "response": {
                "id": "resp_f",
                "status": final.split(".")[1],
                "incomplete_details": {"reason": "max_output_tokens"}
                if final.endswith("incomplete")
                else None,
                "usage": {
                    "input_tokens": draw(COUNTS),
                    "output_tokens": draw(COUNTS),
                    "input_tokens_details": {"cached_tokens": draw(COUNTS)},
                },
            },
        }
    )
    strays = st.sampled_from(
        [
            {},
            {"type": "response.in_progress"},
            {"type": "response.output_text.delta"},
            {"type": "response.function_call_arguments.delta", "output_index": 99, "delta": "{"},
            {"type": "response.output_item.done", "output_index": 0, "item": None},
            {"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call"}},
            {"type": "error", "code": "server_error", "message": "boom"},
            {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}},
            {"type": "response.completed", "response": None},
            {"type": "response.compaction.compacting", "output_index": 0},
        ]
    )
    return _malform(draw, events, strays)


def _from_body(text: str) -> list[Any]:
    provider = ResponsesProvider.__new__(ResponsesProvider)
    provider.kind = "openai"
    exchange = Exchange(status=200)
    return provider._from_body(text, "text/plain", ResponsesEvents("openai", exchange), exchange)


@fuzz()
@given(st.data())
def test_responses_parser_gives_clean_events_or_provider_error(data):
    events = data.draw(responses_events())
    assert_clean_or_provider_error(fed(ResponsesEvents("openai", Exchange(status=200)), events))


@fuzz()
@given(st.data())
def test_responses_parser_on_wrongly_typed_fields(data):
    events = _retype_a_leaf(data.draw, data.draw(responses_events()))
    assert_clean_or_provider_error(fed(ResponsesEvents("openai", Exchange(status=200)), events))


@fuzz(examples=250)
@given(st.data())
def test_responses_stream_text_parses_to_clean_events_or_provider_error(data):
    text = data.draw(sse_text(data.draw(responses_events()), named=data.draw(st.booleans())))
    assert_clean_or_provider_error(lambda: _from_body(text))


@st.composite
def anthropic_native_events(draw) -> list[dict[str, Any]]:
    """Messages-API events with a compaction block and applied context edits, then malformed."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_f",
                "type": "message",
                "role": "assistant",
                "content": [],
                "usage": {"input_tokens": draw(COUNTS), "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": None}},
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "compaction_delta", "content": t, "encrypted_content": None},
        }
        for t in draw(st.lists(SHORT_TEXT, max_size=3))
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": draw(SHORT_TEXT)},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": draw(st.sampled_from(["end_turn", "compaction"]))},
            "usage": {"output_tokens": draw(COUNTS)},
            "context_management": {
                "applied_edits": [
                    {
                        "type": "clear_tool_uses_20250919",
                        "cleared_tool_uses": draw(COUNTS),
                        "cleared_input_tokens": draw(COUNTS),
                    }
                ]
            },
        },
        {"type": "message_stop"},
    ]
    strays = st.sampled_from(
        [
            {},
            {
                "type": "content_block_delta",
                "index": 7,
                "delta": {"type": "compaction_delta", "content": "x"},
            },
            {"type": "message_delta", "delta": {}, "context_management": {"applied_edits": None}},
            {"type": "message_delta", "delta": {}, "context_management": {"applied_edits": [{}]}},
            {"type": "content_block_start", "index": 3, "content_block": {"type": "compaction"}},
        ]
    )
    return _malform(draw, events, strays)


@fuzz()
@given(st.data())
def test_anthropic_compaction_and_edits_parse_clean_or_provider_error(data):
    from app.providers.anthropic import AnthropicEvents

    events = data.draw(anthropic_native_events())
    if data.draw(st.booleans()):
        events = _retype_a_leaf(data.draw, events)
    assert_clean_or_provider_error(fed(AnthropicEvents("anthropic", Exchange(status=200)), events))
