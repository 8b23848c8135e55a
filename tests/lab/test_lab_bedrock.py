"""Real boto3 against the lab: Converse and ConverseStream (event-stream frames), tools, usage, count-tokens."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from botocore.exceptions import ClientError

TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "list_dir",
                "description": "List a folder",
                "inputSchema": {"json": {"type": "object"}},
            }
        },
        {"toolSpec": {"name": "write_file", "inputSchema": {"json": {"type": "object"}}}},
    ]
}


def test_converse_stream_text_and_metadata(sdk, lab, bedrock_model):
    pieces, events = sdk.stream_bedrock("hello bedrock")
    assert list(events[0]) == ["messageStart"] and events[0]["messageStart"]["role"] == "assistant"
    assert "You said: “hello bedrock”" in "".join(pieces) and len(pieces) > 1
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    metadata = events[-1]["metadata"]
    assert metadata["usage"]["inputTokens"] == 4 and metadata["usage"]["outputTokens"] == -(
        -len("".join(pieces)) // 4
    )
    assert (
        metadata["usage"]["totalTokens"]
        == metadata["usage"]["inputTokens"] + metadata["usage"]["outputTokens"]
    )
    assert "latencyMs" in metadata["metrics"]
    record = lab.requests()[-1]
    assert record["wire"] == "bedrock" and record["stream"] and record["model"] == bedrock_model
    assert record["path"].endswith("/converse-stream")


def test_tool_use_round_trip(sdk, bedrock_model):
    client = sdk.bedrock
    messages = [{"role": "user", "content": [{"text": "!ls src\n!write out.txt done"}]}]
    response = client.converse_stream(modelId=bedrock_model, messages=messages, toolConfig=TOOL_CONFIG)
    starts, inputs, stop = {}, {}, None
    for event in response["stream"]:
        if "contentBlockStart" in event:
            starts[event["contentBlockStart"]["contentBlockIndex"]] = event["contentBlockStart"]["start"][
                "toolUse"
            ]
        if "contentBlockDelta" in event and "toolUse" in event["contentBlockDelta"]["delta"]:
            index = event["contentBlockDelta"]["contentBlockIndex"]
            inputs[index] = inputs.get(index, "") + event["contentBlockDelta"]["delta"]["toolUse"]["input"]
        if "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    assert stop == "tool_use"
    assert [s["name"] for s in starts.values()] == ["list_dir", "write_file"]
    assert list(inputs.values()) == ['{"path":"src"}', '{"path":"out.txt","content":"done"}']
    answer = client.converse(
        modelId=bedrock_model,
        toolConfig=TOOL_CONFIG,
        messages=messages
        + [
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": s["toolUseId"], "name": s["name"], "input": {}}}
                    for s in starts.values()
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": starts[1]["toolUseId"],
                            "content": [{"text": "a.py\nb.py"}],
                        }
                    },
                    {
                        "toolResult": {
                            "toolUseId": starts[2]["toolUseId"],
                            "content": [{"text": "permission denied"}],
                            "status": "error",
                        }
                    },
                ],
            },
        ],
    )
    text = answer["output"]["message"]["content"][0]["text"]
    assert answer["stopReason"] == "end_turn"
    assert "- list_dir (" in text and "- write_file (17 B, error): “permission denied”" in text


def test_max_tokens_and_cache_points(sdk, bedrock_model):
    answer = sdk.ask_bedrock("!big 4KB", inferenceConfig={"maxTokens": 64})
    assert answer["stopReason"] == "max_tokens" and answer["usage"]["outputTokens"] == 64
    assert len(answer["output"]["message"]["content"][0]["text"]) == 256
    system = [{"text": "Rules of the project. " * 100}, {"cachePoint": {"type": "default"}}]
    cold = sdk.ask_bedrock("q1", system=system)["usage"]
    warm = sdk.ask_bedrock("q2", system=system)["usage"]
    prefix = len(system[0]["text"]) // 4
    assert (cold["cacheWriteInputTokens"], cold["cacheReadInputTokens"]) == (prefix, 0)
    assert (warm["cacheWriteInputTokens"], warm["cacheReadInputTokens"]) == (0, prefix)
    assert warm["inputTokens"] == 1  # the cached prefix is not in inputTokens
    assert warm["totalTokens"] == warm["inputTokens"] + warm["outputTokens"] + prefix


def test_count_tokens(sdk, bedrock_model):
    result = sdk.bedrock.count_tokens(
        modelId=bedrock_model,
        input={"converse": {"messages": [{"role": "user", "content": [{"text": "w" * 800}]}]}},
    )
    assert result["inputTokens"] == 200


def test_overflow_and_validation_errors(sdk, lab, bedrock_model):
    lab.configure(window=10)
    with pytest.raises(ClientError) as caught:
        sdk.ask_bedrock("v" * 400)
    error = caught.value.response
    assert error["Error"] == {
        "Code": "ValidationException",
        "Message": "Input is too long for requested model.",
    }
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert error["ResponseMetadata"]["RequestId"]
    assert type(caught.value).__name__ == "ValidationException"
    # botocore validates parameters itself; a broken body needs a plain HTTP request
    request = urllib.request.Request(lab.url + "/model/m/converse", data=b"{oops", method="POST")
    with pytest.raises(urllib.error.HTTPError) as http_error:
        urllib.request.urlopen(request, timeout=10)
    assert (
        http_error.value.code == 400 and http_error.value.headers["x-amzn-ErrorType"] == "ValidationException"
    )
    assert http_error.value.headers["x-amzn-RequestId"]
    assert "message" in json.loads(http_error.value.read())
