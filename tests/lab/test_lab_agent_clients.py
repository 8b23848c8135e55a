"""Issue 42, item 7: the lab speaks what real coding agents send, so they can be rehearsed offline —
Claude Code's mid-conversation `system` messages, Codex's Responses tools of type `namespace`,
`web_search` and `custom`, a `HEAD /` reachability check — and `bulkhead lab` takes `none` for
`--cap` and `--window` as its help says."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import pytest

from app.commands.lab_cmd import _config_from
from app.lab.gateway import PROFILES

MODEL = "lab-1"


def _post(url: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url + path,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "lab", "anthropic-version": "2023-06-01"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_mid_conversation_system_message_joins_the_system_prompt(lab, sdk):
    """Claude Code (2.1.x) sends `{"role": "system"}` between user turns (the mid-conversation system beta)."""
    answer = sdk.anthropic.messages.create(
        model=MODEL,
        max_tokens=200,
        system="You are the lab.",
        messages=[
            {"role": "user", "content": "hello"},
            {"role": "system", "content": "Available agent types: claude, Explore"},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        ],
    )
    assert answer.content[0].text.startswith("Lab model")
    record = lab.requests()[-1]
    assert record["verdict"] == "passed"
    assert record["system_tail"].endswith("You are the lab.\nAvailable agent types: claude, Explore")


def test_a_system_message_with_something_else_than_text_is_refused_by_name(lab):
    status, body = _post(
        lab.url,
        "/v1/messages",
        {
            "model": MODEL,
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "image", "source": {}}]},
            ],
        },
    )
    assert status == 400
    assert body["error"]["message"].startswith("messages.1.content.0: a system message holds text blocks")


CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {}}},
    {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Tools for spawning and managing sub-agents.",
        "tools": [{"type": "function", "name": "close_agent", "parameters": {"type": "object"}}],
    },
    {"type": "web_search", "external_web_access": False},
    {"type": "custom", "name": "apply_patch", "description": "Patch files", "format": {"type": "grammar"}},
]


def test_codex_tool_types_are_accepted_and_a_namespaced_tool_can_be_called(lab, sdk):
    answer = sdk.openai.responses.create(
        model=MODEL, input='!call close_agent {"id": "a1"}', tools=CODEX_TOOLS
    )
    calls = [item for item in answer.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["close_agent"]
    assert lab.requests()[-1]["verdict"] == "passed"


def test_custom_tool_calls_in_the_input_are_read_as_tool_rounds(lab, sdk):
    answer = sdk.openai.responses.create(
        model=MODEL,
        tools=CODEX_TOOLS,
        input=[
            {"type": "message", "role": "user", "content": "patch it"},
            {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"},
        ],
    )
    assert "apply_patch" in answer.output_text  # the lab answers from the tool result it was given


@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ({"type": "hologram", "name": "x"}, "tools[1].type"),
        ({"type": "function", "parameters": {}}, "tools[1].name"),
        ({"type": "namespace", "name": "ns"}, "tools[1].tools"),
        ({"type": "namespace", "name": "ns", "tools": [{"type": "web_search"}]}, "tools[1].tools[0].type"),
    ],
)
def test_a_refused_tool_names_the_field_that_is_wrong(lab, tool, field):
    status, body = _post(
        lab.url, "/v1/responses", {"model": MODEL, "input": "hi", "tools": [CODEX_TOOLS[0], tool]}
    )
    assert status == 400
    assert body["error"]["param"] == field and f"'{field}'" in body["error"]["message"]


def test_head_and_get_of_the_root_answer(lab):
    where = urlsplit(lab.url)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=10)
    try:
        connection.request("HEAD", "/")
        head = connection.getresponse()
        assert head.status == 200 and head.read() == b""
        assert int(head.getheader("content-length")) > 0  # what a GET would carry
        connection.request("GET", "/")  # the same connection: the HEAD left it usable
        got = connection.getresponse()
        assert got.status == 200 and json.loads(got.read())["lab"] == "bulkhead"
    finally:
        connection.close()
    assert lab.requests() == []  # reachability checks are not model requests


class _Args:
    gateway = "nginx"
    faults = None
    seed = 0

    def __init__(self, cap: str | None, window: str | None) -> None:
        self.cap, self.window = cap, window


def test_cap_none_and_window_none_work_as_the_help_says(lab, sdk):
    config = _config_from(_Args("none", "none"))
    assert config.effective_cap is None and PROFILES["nginx"].default_cap is not None
    assert config.describe().startswith("gateway nginx · no cap · no window ·")
    assert config.to_dict()["cap"] == "none" and config.to_dict()["window"] == "none"
    assert _config_from(_Args("128KB", "5000")).effective_window == 5000
    with pytest.raises(ValueError, match="none: no overflow"):
        _config_from(_Args(None, "lots"))

    lab.configure(gateway="nginx", cap="none", window="none")  # the control plane takes them too
    answer = sdk.ask_anthropic("x" * 2_000_000)  # over nginx's default 1 MiB, and ≈500k tokens
    assert answer.content[0].text.startswith("Lab model")
