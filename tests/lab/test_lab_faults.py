"""Every fault kind, through the three real SDKs, in each provider's own error shape."""

from __future__ import annotations

import anthropic
import openai
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EventStreamError, ReadTimeoutError


def raised(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the test is about what is raised
        return exc
    raise AssertionError(f"{fn.__name__} did not raise")


def causes(exc):
    chain = []
    while exc is not None:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def test_429_rate_limit_with_retry_after(sdk, lab):
    lab.configure(faults="429@1+2+3")
    a = raised(sdk.ask_anthropic, "hi")
    assert isinstance(a, anthropic.RateLimitError) and a.type == "rate_limit_error"
    assert a.response.headers["retry-after"] == "2" and a.response.headers["request-id"] == a.request_id
    o = raised(sdk.ask_openai, "hi")
    assert isinstance(o, openai.RateLimitError) and o.code == "rate_limit_exceeded"
    assert o.response.headers["retry-after"] == "2" and "Rate limit reached for lab-1" in str(o)
    b = raised(sdk.ask_bedrock, "hi")
    assert isinstance(b, ClientError) and b.response["Error"]["Code"] == "ThrottlingException"
    assert b.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert b.response["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "2"
    assert [r["verdict"] for r in lab.requests()] == ["fault:429"] * 3
    assert sdk.ask_anthropic("fourth").stop_reason == "end_turn"  # only the scheduled ones


def test_529_overloaded(sdk, lab):
    lab.configure(faults="529@1+2+3")
    a = raised(sdk.ask_anthropic, "hi")
    assert isinstance(a, anthropic.OverloadedError) and a.status_code == 529 and a.type == "overloaded_error"
    o = raised(sdk.ask_openai, "hi")
    assert isinstance(o, openai.InternalServerError) and o.status_code == 503
    assert o.body["message"] == "The server is overloaded or not ready yet."
    b = raised(sdk.ask_bedrock, "hi")
    assert b.response["Error"]["Code"] == "ServiceUnavailableException"
    assert b.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_500_internal_error(sdk, lab):
    lab.configure(faults="500@1+2+3")
    a = raised(sdk.ask_anthropic, "hi")
    assert isinstance(a, anthropic.InternalServerError) and a.status_code == 500 and a.type == "api_error"
    o = raised(sdk.ask_openai, "hi")
    assert isinstance(o, openai.InternalServerError) and o.status_code == 500 and o.type == "server_error"
    b = raised(sdk.ask_bedrock, "hi")
    assert b.response["Error"]["Code"] == "InternalServerException"
    assert [r["status"] for r in lab.requests()] == [500, 500, 500]


def test_503_service_unavailable(sdk, lab):
    lab.configure(faults="503@1+2+3")
    a = raised(sdk.ask_anthropic, "hi")
    assert isinstance(a, anthropic.ServiceUnavailableError) and a.status_code == 503
    o = raised(sdk.ask_openai, "hi")
    assert isinstance(o, openai.InternalServerError) and o.status_code == 503
    b = raised(sdk.ask_bedrock, "hi")
    assert b.response["Error"]["Code"] == "ServiceUnavailableException"


def test_drop_closes_without_a_response(sdk, lab):
    lab.configure(faults="drop@1+2+3")
    for exc in (raised(sdk.ask_anthropic, "hi"), raised(sdk.ask_openai, "hi")):
        assert type(exc).__name__ == "APIConnectionError"
        assert "Server disconnected without sending a response" in str(exc.__cause__)
    b = raised(sdk.ask_bedrock, "hi")
    assert isinstance(b, ConnectionClosedError) and "RemoteDisconnected" in repr(b.kwargs["error"])
    assert [(r["verdict"], r["status"]) for r in lab.requests()] == [("fault:drop", None)] * 3


def test_slow_streams_with_pauses_and_completes(sdk, lab):
    lab.configure(faults="slow@1+2+3+4", slow_pause=0.005)
    pieces, final = sdk.stream_anthropic("take your time")
    assert final.stop_reason == "end_turn" and "You said: “take your time”" in "".join(pieces)
    pieces, chunks = sdk.stream_openai("take your time")
    assert chunks[-1].usage is not None and "take your time" in "".join(pieces)
    pieces, events = sdk.stream_bedrock("take your time")
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    assert sdk.ask_anthropic("json too").stop_reason == "end_turn"
    assert [r["verdict"] for r in lab.requests()] == ["fault:slow"] * 4


def test_timeout_never_answers_until_the_client_gives_up(lab, make_sdk):
    impatient = make_sdk(timeout=0.3)
    lab.configure(faults="timeout@1+2+3")
    a = raised(impatient.ask_anthropic, "hello?")
    assert isinstance(a, anthropic.APITimeoutError)
    o = raised(impatient.ask_openai, "hello?")
    assert isinstance(o, openai.APITimeoutError)
    b = raised(impatient.stream_bedrock, "hello?")
    assert isinstance(b, ReadTimeoutError)
    assert [(r["verdict"], r["status"]) for r in lab.requests()] == [("fault:timeout", None)] * 3
    assert impatient.ask_anthropic("and now?").stop_reason == "end_turn"


def test_cut_shows_output_then_resets_mid_stream(sdk, lab):
    lab.configure(faults="cut@1+2+3+4")
    seen: list[str] = []

    def anthropic_stream():
        with sdk.anthropic.messages.stream(
            model="lab-1", max_tokens=1024, messages=[{"role": "user", "content": "tell me everything"}]
        ) as stream:
            for piece in stream.text_stream:
                seen.append(piece)

    a = raised(anthropic_stream)
    assert seen and "".join(seen).startswith("Lab model · turn 1")  # output became visible …
    assert any(isinstance(c, ConnectionResetError) for c in causes(a))  # … then the connection was reset
    seen_openai: list[str] = []

    def openai_stream():
        for chunk in sdk.openai.chat.completions.create(
            model="lab-1", stream=True, messages=[{"role": "user", "content": "tell me"}]
        ):
            if chunk.choices and chunk.choices[0].delta.content:
                seen_openai.append(chunk.choices[0].delta.content)

    o = raised(openai_stream)
    assert seen_openai and isinstance(o, openai.APIConnectionError)
    assert any(isinstance(c, ConnectionResetError) for c in causes(o))
    seen_bedrock: list[str] = []
    b = raised(sdk.stream_bedrock, "tell me", seen_bedrock)
    assert seen_bedrock and any(isinstance(c, ConnectionResetError) for c in causes(b))
    j = raised(sdk.ask_anthropic, "not streamed")
    assert isinstance(j, anthropic.APIConnectionError)
    assert [(r["verdict"], r["status"]) for r in lab.requests()] == [("fault:cut", 200)] * 4


def test_stream_error_event_mid_answer(sdk, lab):
    lab.configure(faults="stream-error@1+2+3")
    a = raised(sdk.stream_anthropic, "go on")
    assert isinstance(a, anthropic.APIStatusError) and a.status_code == 200
    assert a.body["error"]["type"] == "overloaded_error"
    o = raised(sdk.stream_openai, "go on")
    assert isinstance(o, openai.APIError) and str(o) == "The server is overloaded or not ready yet."
    b = raised(sdk.stream_bedrock, "go on")
    assert isinstance(b, EventStreamError) and b.response["Error"]["Code"] == "serviceUnavailableException"


def test_faults_at_a_rate_follow_the_seed(sdk, lab):
    def run():
        lab.configure(faults="429:0.5", seed=11)
        outcomes = []
        for _ in range(12):
            try:
                sdk.ask_anthropic("roll")
                outcomes.append("ok")
            except anthropic.RateLimitError:
                outcomes.append("429")
        return outcomes

    first = run()
    assert first == run() and {"ok", "429"} == set(first)


def test_overflow_counts_the_window_in_tokens(sdk, lab):
    lab.configure(window=1000)
    assert sdk.ask_anthropic("a" * 3996).stop_reason == "end_turn"  # 999 tokens: fits
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long: 1001 tokens > 1000 maximum"):
        sdk.ask_anthropic("a" * 4004)
