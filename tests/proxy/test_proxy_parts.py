"""The proxy's parts: the client's key passes through untouched (and only there), headers are not
invented, upstream URLs and cap endpoints match bulkhead's own routes, client names, the size/content
judgement, incident IDs, and what the client gets when the upstream is unreachable or drops it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import openai
import pytest

from app.config import ConfigError, Route
from app.engine.block_cause import hop_label, incident_id, judge
from app.engine.failures import classify_fields
from app.lab import pages
from app.proxy.native_errors import OverflowStyle, Refusal, content_block, overflow
from app.proxy.records import Action
from app.proxy.upstream import from_route, from_url, parse_header
from app.proxy.wire import Wire, client_name, wire_for

from .conftest import free_port_number

KEY = "sk-ant-api03-passes-through-0123456789"


class Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:  # http.server's naming
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        Recorder.seen.append({"path": self.path, "headers": list(self.headers.items()), "body": body})
        answer = json.dumps(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "ok"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[str]:
    Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_clients_key_passes_through_untouched_and_nothing_is_invented(recorder, start_proxy):
    proxy = start_proxy(recorder)
    client = anthropic.Anthropic(
        base_url=proxy.url, api_key=KEY, max_retries=0, default_headers={"X-Custom": "1"}
    )
    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    seen = Recorder.seen[0]
    names = [name.lower() for name, _ in seen["headers"]]
    assert dict((k.lower(), v) for k, v in seen["headers"])["authorization"] == f"Bearer {KEY}"
    assert "x-custom" in names and seen["path"] == "/v1/messages"
    assert not any(name in names for name in ("via", "x-forwarded-for", "forwarded"))  # nothing added
    assert dict((k.lower(), v) for k, v in seen["headers"])["user-agent"].startswith("Anthropic/Python")
    record = proxy.records(1)[0]
    assert (
        KEY not in json.dumps(record.to_store()) and record.request_headers["authorization"] == "[redacted]"
    )


def test_extra_upstream_headers_are_added(recorder, start_proxy):
    proxy = start_proxy(recorder, headers=(parse_header("X-Gateway-Token: gw-secret-42"),))
    anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0).messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
    )
    assert ("X-Gateway-Token", "gw-secret-42") in Recorder.seen[0]["headers"]
    with pytest.raises(ConfigError):
        parse_header("no colon here")


def test_upstream_urls_and_cap_endpoints_match_bulkheads_own_routes():
    upstream = from_url("https://gw.corp.example/")
    assert (
        upstream.url_for(Wire.ANTHROPIC, "/v1/messages?beta=true")
        == "https://gw.corp.example/v1/messages?beta=true"
    )
    assert upstream.url_for(Wire.OPENAI_RESPONSES, "/v1/responses") == "https://gw.corp.example/v1/responses"
    anthropic_route = Route(name="a", provider="anthropic", model="m", base_url="https://gw.corp.example")
    openai_route = Route(name="o", provider="openai", model="m", base_url="https://gw.corp.example/v1")
    assert upstream.endpoint_id(Wire.ANTHROPIC) == anthropic_route.endpoint_id
    assert upstream.endpoint_id(Wire.OPENAI_CHAT) == openai_route.endpoint_id

    routed = from_route(
        Route(name="work", provider="openai", model="m", base_url="https://llm.corp/openai/v1")
    )
    assert routed.url_for(Wire.OPENAI_RESPONSES, "/v1/responses") == "https://llm.corp/openai/v1/responses"
    assert routed.url_for(Wire.ANTHROPIC, "/v1/messages") is None
    assert routed.endpoint_id(Wire.OPENAI_CHAT) == "openai https://llm.corp/openai/v1"
    default = from_route(Route(name="d", provider="anthropic", model="m"))
    assert default.url_for(Wire.ANTHROPIC, "/v1/messages") == "https://api.anthropic.com/v1/messages"
    assert default.endpoint_id(Wire.ANTHROPIC) == Route(name="d", provider="anthropic", model="m").endpoint_id
    with pytest.raises(ConfigError, match="bulkhead lab"):
        from_route(Route(name="lab", provider="lab", model="lab-1"))
    with pytest.raises(ConfigError, match="not an http"):
        from_url("gw.corp.example")


def test_clients_are_named_from_their_user_agent():
    assert client_name("claude-cli/2.1.197 (external, sdk-cli)") == "Claude Code 2.1.197"
    assert client_name("codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm") == "Codex 0.171.0 (exec)"
    assert client_name("codex_cli_rs/0.171.0 (Mac OS 15.1.0; arm64)") == "Codex 0.171.0"
    assert client_name("OpenAI/Python 3.57.0") == "openai-python 3.57.0"
    assert client_name("") == "unknown client"
    assert client_name("evil\x1b[2J/1.0 more") == "evil\\x1b[2J/1.0"  # shown safely
    assert wire_for("POST", "/v1/messages/count_tokens?beta=true", False) is Wire.ANTHROPIC
    assert wire_for("GET", "/v1/models", True) is Wire.ANTHROPIC
    assert wire_for("POST", "/openai/v1/responses/compact", False) is Wire.OPENAI_RESPONSES
    assert wire_for("POST", "/v1/embeddings", False) is Wire.OTHER


def test_a_waf_block_is_content_when_a_larger_body_passed_and_treated_as_size_otherwise():
    """The proxy judges as the engine does (app.engine.block_cause): content is never an overflow; an
    undecided block is treated as size (translated, a cap learned); a rate limit is no gateway refusal."""
    page = pages.cloudflare_block("api.example.com", "8f3a1c2b9d7e4a61-SJC")
    body, headers = page.body.decode(), dict(page.headers)
    failure = classify_fields(status=page.status, body=body, headers=headers, request_bytes=20_000)
    assert failure.kind == "waf_block"

    def judged(accepted_max):
        return judge(
            failure,
            request_bytes=20_000,
            accepted_max=accepted_max,
            floor_bytes=None,
            body=body,
            headers=headers,
        )

    content = judged(30_000)
    assert content.cause == "content" and not content.payload_related
    assert content.incident_id == "Cloudflare Ray ID 8f3a1c2b9d7e4a61"
    for accepted in (10_000, None):
        assert judged(accepted).cause == "unknown" and judged(accepted).payload_related
    assert hop_label(failure, headers, body, where="gw:443") == "Cloudflare at gw:443"
    akamai = pages.akamai_denied("api.example.com", "/v1/messages", "18.2d351ab8.1700000000.3f2a1b")
    assert incident_id(akamai.body.decode(), {}) == "reference 18.2d351ab8.1700000000.3f2a1b"
    rate = classify_fields(status=429, body='{"error": {"type": "rate_limit_error"}}')
    rate_judged = judge(rate, request_bytes=1000, accepted_max=None, floor_bytes=None)
    assert rate_judged.cause == "" and not rate_judged.payload_related


def test_errors_are_shaped_as_each_provider_sends_them():
    refusal = Refusal("nginx at gw:443", 100_000, 75_000, ("status 413",))
    anthropic_error = json.loads(overflow(Wire.ANTHROPIC, OverflowStyle.PROMPT_TOO_LONG, refusal).body)
    assert anthropic_error["type"] == "error" and anthropic_error["error"]["type"] == "invalid_request_error"
    assert anthropic_error["error"]["message"].startswith("prompt is too long: 25000 tokens > 18750 maximum.")
    large = overflow(Wire.ANTHROPIC, OverflowStyle.REQUEST_TOO_LARGE, refusal)
    assert large.status == 413 and json.loads(large.body)["error"]["type"] == "request_too_large"
    oa = overflow(Wire.OPENAI_RESPONSES, OverflowStyle.CONTEXT_LENGTH_EXCEEDED, refusal)
    assert json.loads(oa.body)["error"]["code"] == "context_length_exceeded" and oa.status == 400
    assert ("x-should-retry", "false") in oa.headers
    block = json.loads(
        content_block(
            Wire.OPENAI_CHAT, hop="Cloudflare at gw", incident="Cloudflare Ray ID 8f3a", evidence=()
        ).body
    )
    assert (
        block["error"]["code"] == "gateway_content_blocked"
        and "(Cloudflare Ray ID 8f3a)" in block["error"]["message"]
    )


def test_an_unreachable_upstream_is_a_502_in_the_clients_shape(start_proxy):
    proxy = start_proxy(f"http://127.0.0.1:{free_port_number()}")  # nothing listens there
    with pytest.raises(openai.InternalServerError) as raised:
        openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-x", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    assert raised.value.status_code == 502 and "nothing answered at 127.0.0.1:" in raised.value.message
    assert proxy.records(1)[0].action is Action.UNREACHABLE


def test_a_dropped_connection_is_dropped_in_observe_and_never_learned_as_a_cap(lab, start_proxy):
    lab.configure(gateway="reset", cap="4KB")
    proxy = start_proxy(lab.url)
    with pytest.raises(anthropic.APIConnectionError):
        anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0).messages.create(
            model="lab-1", max_tokens=5, messages=[{"role": "user", "content": "x" * 20_000}]
        )
    record = proxy.records(1)[0]
    assert record.action is Action.DROPPED and record.kind == "other" and record.cause == ""
    assert record.request_bytes and record.request_bytes > 20_000


def test_a_second_identical_reset_is_judged_size_and_translated(lab, start_proxy):
    """The engine's reset rules (app/engine/resets.py): one reset proves nothing, the same body reset
    twice at an endpoint that answers smaller ones is its cap."""
    lab.configure(gateway="reset", cap="8KB")
    proxy = start_proxy(lab.url, translate=True)
    client = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0)
    client.messages.create(model="lab-1", max_tokens=5, messages=[{"role": "user", "content": "small"}])
    body = [{"role": "user", "content": "x" * 20_000}]
    with pytest.raises(anthropic.APIConnectionError):  # the first reset: dropped, as the gateway dropped it
        client.messages.create(model="lab-1", max_tokens=5, messages=body)
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(model="lab-1", max_tokens=5, messages=body)
    assert raised.value.body["error"]["message"].startswith("prompt is too long")
    records = proxy.records(3)
    assert [r.action for r in records] == [Action.PASSED, Action.DROPPED, Action.TRANSLATED]
    assert records[2].kind == "connection_drop" and records[2].cause == "size"


def test_continue_never_opens_a_proxy_session_as_a_chat(tmp_path):
    from app.engine.bootstrap import open_session
    from app.proxy.proxy_session import ProxySession
    from app.state import State
    from app.store import Store

    store = Store()
    chat, _ = open_session(
        store,
        Route(name="lab", provider="lab", model="lab-1"),
        resume=None,
        continue_=False,
        workspace=tmp_path,
    )
    from app.model.messages import Message

    chat.append(
        Message.create("user", "a chat of this folder", turn=1)
    )  # -c continues one that has a message
    chat.flush()
    chat.release_lease()
    proxy_session = ProxySession(store, State(), label="http://gw")
    proxy_session.close()  # not held: only its provider keeps -c away
    again, resumed = open_session(
        store,
        Route(name="lab", provider="lab", model="lab-1"),
        resume=None,
        continue_=True,
        workspace=tmp_path,
    )
    assert resumed and again.id == chat.id != proxy_session.id
    assert store.get_session(proxy_session.id).provider == "proxy"
    store.close()
