"""MCP tools as bulkhead tools: names, results (text, image, resources, structured content, errors)
and approvals from the server's read-only hint."""

from __future__ import annotations

import base64

from app.mcp.adapter import convert_result, needs_approval, server_of, tool_name, tool_spec
from app.mcp.connection import McpTool

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()


def tool(name: str = "echo", read_only: bool = True, server: str = "demo") -> McpTool:
    return McpTool(
        server=server,
        name=name,
        description="Echo it.\nMore detail.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        read_only=read_only,
    )


def test_names_follow_claude_code_and_stay_valid_for_every_provider():
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("everything", "get-tiny-image") == "mcp__everything__get-tiny-image"
    assert tool_name("my.server", "do it!") == "mcp__my_server__do_it_"
    long = tool_name("s", "x" * 100)
    assert len(long) <= 64 and long.startswith("mcp__s__x")
    assert tool_name("s", "a.b", taken={"mcp__s__a_b"}) != "mcp__s__a_b"
    assert server_of("mcp__github__create_issue") == "github" and server_of("read_file") == ""


def test_spec_keeps_the_servers_description_and_schema():
    spec = tool_spec(tool(), "mcp__demo__echo")
    assert (
        spec.description.startswith("Echo it.")
        and spec.input_schema["properties"]["text"]["type"] == "string"
    )
    assert tool_spec(McpTool("s", "t", "", {}), "mcp__s__t").input_schema["type"] == "object"


def test_text_and_structured_content_are_kept(tmp_path):
    result = {"content": [{"type": "text", "text": "3 results"}], "structuredContent": {"items": [1, 2, 3]}}
    outcome = convert_result(result, name="mcp__s__find", spill_folder=tmp_path, image_max_bytes=1 << 20)
    assert "3 results" in outcome.content and '"items"' in outcome.content and not outcome.is_error
    same = {"content": [{"type": "text", "text": '{"sum": 3}'}], "structuredContent": {"sum": 3}}
    assert (
        "[structured content]"
        not in convert_result(same, name="t", spill_folder=tmp_path, image_max_bytes=1).content
    )
    wrapped = {"content": [{"type": "text", "text": "okapi"}], "structuredContent": {"result": "okapi"}}
    assert convert_result(wrapped, name="t", spill_folder=tmp_path, image_max_bytes=1).content == "okapi"


def test_images_are_attached_and_a_large_one_is_saved_instead(tmp_path):
    result = {
        "content": [{"type": "text", "text": "here"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]
    }
    outcome = convert_result(result, name="mcp__s__img", spill_folder=tmp_path, image_max_bytes=1 << 20)
    assert outcome.images and outcome.images[0].media_type == "image/png" and "attached" in outcome.content
    small_limit = convert_result(result, name="mcp__s__img", spill_folder=tmp_path, image_max_bytes=10)
    assert not small_limit.images and "mcp_image_max_bytes" in small_limit.content
    saved = [p for p in tmp_path.iterdir() if p.suffix == ".png"]
    assert (
        saved and saved[0].read_bytes() == base64.b64decode(PNG) and saved[0].stat().st_mode & 0o777 == 0o600
    )


def test_resources_links_and_audio(tmp_path):
    result = {
        "content": [
            {
                "type": "resource",
                "resource": {"uri": "demo://n/1", "mimeType": "text/plain", "text": "the note"},
            },
            {
                "type": "resource",
                "resource": {
                    "uri": "demo://bin",
                    "mimeType": "application/zip",
                    "blob": base64.b64encode(b"PK..").decode(),
                },
            },
            {"type": "resource_link", "name": "Readme", "uri": "demo://readme", "description": "docs"},
            {"type": "audio", "data": base64.b64encode(b"RIFF").decode(), "mimeType": "audio/wav"},
        ]
    }
    text = convert_result(result, name="t", spill_folder=tmp_path, image_max_bytes=1 << 20).content
    assert "[resource demo://n/1 (text/plain)]\nthe note" in text
    assert "resource demo://bin (application/zip" in text and "saved to" in text
    assert "[resource link: Readme — demo://readme — docs]" in text
    assert "audio (audio/wav" in text


def test_error_results_and_empty_results(tmp_path):
    error = convert_result(
        {"content": [{"type": "text", "text": "boom"}], "isError": True},
        name="t",
        spill_folder=tmp_path,
        image_max_bytes=1,
    )
    assert error.is_error and error.content == "boom"
    empty = convert_result({"content": []}, name="t", spill_folder=tmp_path, image_max_bytes=1)
    assert empty.content == "(the tool returned no content)"


def test_read_only_hint_auto_approves_under_auto_read_only():
    assert needs_approval("mcp__demo__echo", tool(), "auto-read")[0] is False
    assert needs_approval("mcp__demo__echo", tool(), "auto-edit")[0] is False
    assert needs_approval("mcp__demo__echo", tool(), "ask")[0] is True
    ask, why = needs_approval("mcp__demo__write", tool("write", read_only=False), "auto-read")
    assert ask and "not marked read-only" in why
    assert needs_approval("mcp__demo__write", tool("write", read_only=False), "never-ask")[0] is False
    assert needs_approval("mcp__gone__x", None, "auto-read")[0] is True
