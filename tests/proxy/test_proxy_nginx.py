"""`bulkhead proxy` in front of a real nginx (client_max_body_size 64k) in front of the lab, with the
official `anthropic` and `openai` SDKs as its clients (issue 42, items 1–5).

    SDK → bulkhead proxy → nginx (64 KB) → lab
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest

from app.config import Route
from app.model.archive import MARKER_PREFIX
from app.proxy.native_errors import OverflowStyle
from app.proxy.records import Action, RequestStarted
from app.proxy.wire import Wire
from app.state import State

from .conftest import LIMIT, nginx_refusals, wait_for

pytestmark = pytest.mark.nginx
KEY = "sk-ant-api03-proxy-test-key-0123456789abcdef"
OPENAI_KEY = "sk-proj-proxy-test-key-0123456789abcdef"
MODEL = "lab-1"


class Sent:
    """What the SDK put on the wire: each request body, as the SDK's own httpx client sent it."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def hook(self, request: httpx.Request) -> None:
        self.bodies.append(request.content)

    @property
    def hashes(self) -> list[str]:
        return [hashlib.sha256(body).hexdigest() for body in self.bodies]


def anthropic_client(url: str, sent: Sent | None = None, **kw: Any) -> anthropic.Anthropic:
    hooks = {"request": [sent.hook]} if sent else {}
    return anthropic.Anthropic(
        base_url=url,
        api_key=KEY,
        max_retries=kw.pop("max_retries", 0),
        timeout=kw.pop("timeout", 30.0),
        http_client=anthropic.DefaultHttpxClient(event_hooks=hooks),
        **kw,
    )


def openai_client(url: str, sent: Sent | None = None, **kw: Any) -> openai.OpenAI:
    hooks = {"request": [sent.hook]} if sent else {}
    return openai.OpenAI(
        base_url=url + "/v1",
        api_key=OPENAI_KEY,
        max_retries=kw.pop("max_retries", 0),
        timeout=kw.pop("timeout", 30.0),
        http_client=openai.DefaultHttpxClient(event_hooks=hooks),
        **kw,
    )


def big(text: str, size: int) -> str:
    return (text + " ") * (size // (len(text) + 1))


# -- observe: change nothing ------------------------------------------------------------------------
def test_bodies_reach_the_upstream_byte_for_byte(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url)
    sent = Sent()
    client = anthropic_client(proxy.url, sent)
    client.messages.create(
        model=MODEL,
        max_tokens=64,
        system='Zé\'s rules: ünïcode, "quotes", tabs\tand newlines\n',
        messages=[{"role": "user", "content": big("héllo wörld 🌍", 30_000)}],
        metadata={"user_id": "tester"},
    )
    oa_sent = Sent()
    openai_client(proxy.url, oa_sent).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": big("ça va? 👍", 20_000)}]
    )
    openai_client(proxy.url, oa_sent).responses.create(
        model=MODEL, input="short one", instructions="be brief"
    )

    received = [r["sha256"] for r in lab.requests()]
    assert received == sent.hashes + oa_sent.hashes  # what each SDK hashed is what the lab hashed
    records = proxy.records(3)
    assert [r.body_sha256 for r in records] == received and [r.sent_sha256 for r in records] == received
    assert [r.action for r in records] == [Action.PASSED] * 3
    assert [r.client.split()[0] for r in records] == ["anthropic-python", "openai-python", "openai-python"]
    assert [r.wire for r in records] == [Wire.ANTHROPIC, Wire.OPENAI_CHAT, Wire.OPENAI_RESPONSES]


def test_a_chunked_upload_streams_through_unchanged(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url)
    body = json.dumps(
        {"model": MODEL, "max_tokens": 32, "messages": [{"role": "user", "content": big("chunk", 40_000)}]}
    ).encode()
    pieces = [body[i : i + 7000] for i in range(0, len(body), 7000)]
    answer = httpx.post(
        proxy.url + "/v1/messages",
        content=iter(pieces),  # no Content-Length: Transfer-Encoding: chunked
        headers={"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert lab.requests()[-1]["sha256"] == hashlib.sha256(body).hexdigest()
    assert proxy.records(1)[0].request_bytes == len(body)


def test_a_streamed_answer_reaches_the_client_while_the_lab_is_still_producing_it(lab, nginx, start_proxy):
    """The lab pauses 60 s after each event; the SDK's read timeout is 15 s. The first event can only
    arrive in time if nothing on the way (proxy, nginx) waits for the answer to end."""
    proxy = start_proxy(nginx.url)
    lab.configure(faults="slow@1", slow_pause=60.0)
    client = anthropic_client(proxy.url, timeout=15.0)
    with client.messages.stream(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "tell me a long story"}]
    ) as stream:
        first = next(iter(stream))
        assert first.type == "message_start"
    record = lab.requests()[-1]
    assert record["verdict"] == "fault:slow" and record["stream"] is True  # the lab's answer had not ended

    started = [e.record for e in proxy.events if isinstance(e, RequestStarted)]
    assert len(started) == 1 and started[0].status == 200 and started[0].stream
    assert proxy.records() == []  # the exchange is still running: the lab has not produced its last event


def test_observe_passes_the_gateway_page_through_unchanged(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url)
    with pytest.raises(anthropic.APIStatusError) as raised:
        anthropic_client(proxy.url).messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("x", LIMIT + 5000)}]
        )
    assert raised.value.status_code == 413 and "<center>nginx</center>" in raised.value.response.text
    record = proxy.records(1)[0]
    assert record.action is Action.PASSED and record.kind == "payload_too_large" and record.cause == "size"
    assert record.client_status == 413


# -- translate: the client's own error --------------------------------------------------------------
def test_nginx_413_reaches_the_anthropic_sdk_as_request_too_large(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url, translate=True, styles={Wire.ANTHROPIC: OverflowStyle.REQUEST_TOO_LARGE})
    client = anthropic_client(proxy.url, max_retries=2)  # x-should-retry: false — the SDK must not retry
    size = LIMIT + 20_000
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("y", size)}]
        )
    error = raised.value
    assert error.status_code == 413 and error.body["error"]["type"] == "request_too_large"
    assert f"nginx at 127.0.0.1:{nginx.port} refused the" in error.message
    records = proxy.records(1)
    assert len(records) == 1 and records[0].action is Action.TRANSLATED
    cap = math.floor(0.75 * records[0].sent_bytes)
    assert error.message.count(f"{cap / 1024:.1f} KB") == 1  # the learned cap, in words


def test_nginx_413_reaches_the_anthropic_sdk_as_prompt_is_too_long_by_default(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url, translate=True)
    with pytest.raises(anthropic.BadRequestError) as raised:
        anthropic_client(proxy.url).messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("z", LIMIT + 8000)}]
        )
    message = raised.value.body["error"]["message"]
    sent = proxy.records(1)[0].sent_bytes
    limit = math.ceil(math.floor(0.75 * sent) / 4)  # tokens (bytes / 4) of the cap learned from this refusal
    assert message.startswith(f"prompt is too long: {math.ceil(sent / 4)} tokens > {limit} maximum. ")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_nginx_413_reaches_the_openai_sdk_as_context_length_exceeded(lab, nginx, start_proxy, api):
    proxy = start_proxy(nginx.url, translate=True)
    client = openai_client(proxy.url, max_retries=2)
    text = big("w", LIMIT + 10_000)
    with pytest.raises(openai.BadRequestError) as raised:
        if api == "chat":
            client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": text}])
        else:
            client.responses.create(model=MODEL, input=text)
    assert raised.value.code == "context_length_exceeded"
    assert "maximum context length" in raised.value.message and "nginx at" in raised.value.message
    assert len(proxy.records(1)) == 1


def test_the_cap_is_learned_shared_and_early_reject_answers_without_sending(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url, translate=True, early_reject=True)
    client = anthropic_client(proxy.url)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("a", 80_000)}]
        )
    refused = proxy.records(1)[0].sent_bytes
    # bulkhead's own route to this gateway reads the same cap (one state.toml)
    route = Route(name="work", provider="anthropic", model=MODEL, base_url=nginx.url)
    learned = State().learned_cap(route.endpoint_id)
    assert learned is not None and learned.cap_bytes == math.floor(0.75 * refused)
    refusals, lab_seen = nginx_refusals(nginx), len(lab.requests())

    with pytest.raises(anthropic.BadRequestError) as raised:  # over the learned cap, under nginx's own
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("b", 62_000)}]
        )
    assert "was not sent" in raised.value.message
    record = proxy.records(2)[1]
    assert record.action is Action.REJECTED_EARLY and record.sent_bytes is None
    assert nginx_refusals(nginx) == refusals and len(lab.requests()) == lab_seen  # nothing went out

    client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "small"}])
    assert proxy.records(3)[2].action is Action.PASSED


# -- shrink ------------------------------------------------------------------------------------------
def _conversation(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look at the files"}]
    for n in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{n:03d}", "name": "read", "input": {"path": f"f{n}"}}
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{n:03d}",
                        "content": big(f"file {n} line", 12_000),
                    }
                ],
            }
        )
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return messages


def test_shrink_makes_an_oversized_request_fit_and_keeps_the_prefix_stable(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url, shrink=True, translate=True)
    client = anthropic_client(proxy.url)
    tools = [{"name": "read", "description": "read a file", "input_schema": {"type": "object"}}]

    first = client.messages.create(model=MODEL, max_tokens=64, tools=tools, messages=_conversation(7))
    assert first.content  # answered: refused once, learned, shrunk, sent again
    records = proxy.records(2)
    assert [r.action for r in records] == [Action.RESENT, Action.SHRUNK]
    assert records[0].status == 413 and records[1].status == 200

    second = client.messages.create(model=MODEL, max_tokens=64, tools=tools, messages=_conversation(8))
    assert second.content
    third = proxy.records(3)[2]
    assert third.action is Action.SHRUNK and third.status == 200  # the cap was known: shrunk before sending

    one, two = records[1].body, third.body
    assert one is not None and two is not None
    received = [r["sha256"] for r in lab.requests()]
    assert hashlib.sha256(one).hexdigest() in received and hashlib.sha256(two).hexdigest() in received
    learned = State().learned_cap(proxy.options.upstream.endpoint_id(Wire.ANTHROPIC))
    assert len(one) <= learned.cap_bytes and len(two) <= learned.cap_bytes

    stub = b"[bulkhead proxy: this tool result"
    old_stubs = [i for i in range(len(one)) if one.startswith(stub, i)]
    new_stubs = [i for i in range(len(two)) if two.startswith(stub, i)]
    assert len(new_stubs) > len(old_stubs) >= 1
    end_of_old = one.index(b"]]", one.index(MARKER_PREFIX.encode(), old_stubs[-1])) + 2
    assert one[:end_of_old] == two[:end_of_old]  # byte for byte up to and with the older request's stubs
    assert new_stubs[: len(old_stubs)] == old_stubs
    archived = proxy.store.archive_list(proxy.session.id)
    assert {e.content for e in archived} >= {big(f"file {n} line", 12_000) for n in range(len(old_stubs))}


# -- a content block ---------------------------------------------------------------------------------
def test_a_content_block_is_never_translated_into_an_overflow(lab, nginx, start_proxy):
    proxy = start_proxy(nginx.url, translate=True)
    client = anthropic_client(proxy.url)
    client.messages.create(
        model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("ok", 30_000)}]
    )
    lab.configure(gateway="cloudflare", cap="8KB")  # now the gateway refuses smaller bodies than one it took

    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("no", 12_000)}]
        )
    message = raised.value.body["error"]["message"]
    record = proxy.records(2)[1]
    assert (
        record.action is Action.CONTENT_BLOCKED and record.kind == "waf_block" and record.cause == "content"
    )
    assert "refused the content of this request" in message and "prompt is too long" not in message
    assert record.incident.startswith("Cloudflare Ray ID ") and f"({record.incident})" in message
    assert State().learned_cap(proxy.options.upstream.endpoint_id(Wire.ANTHROPIC)) is None


# -- records ------------------------------------------------------------------------------------------
def test_records_are_kept_in_the_store_and_export_as_har_without_the_key(lab, nginx, start_proxy, tmp_path):
    import jsonschema

    from app.cli import main

    proxy = start_proxy(nginx.url, translate=True)
    client = anthropic_client(proxy.url)
    client.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model=MODEL, max_tokens=16, messages=[{"role": "user", "content": big("q", 80_000)}]
        )
    wait_for(lambda: len(proxy.store.list_requests(proxy.session.id)) == 2, "two stored records")
    stored = proxy.store.list_requests(proxy.session.id)
    assert [r["outcome"] for r in stored] == ["ok", "translated"]
    assert stored[1]["kind"] == "payload_too_large" and stored[1]["status"] == 413
    assert stored[0]["purpose"].startswith("anthropic-python")
    assert stored[0]["request_headers"]["authorization"] == "[redacted]"  # the SDK's key, by name

    out = tmp_path / "proxy.har"
    assert main(["sessions", "export", proxy.session.id, "--format", "har", "-o", str(out)]) == 0
    har = json.loads(out.read_text())
    schema = json.loads((Path(__file__).parents[1] / "fixtures" / "har-1.2.schema.json").read_text())
    jsonschema.validate(har, schema)
    assert len(har["log"]["entries"]) == 2 and "payload_too_large" in har["log"]["entries"][1]["comment"]
    database = b"".join(p.read_bytes() for p in proxy.store.path.parent.glob("bulkhead.db*"))
    for text in (out.read_bytes(), database):
        assert KEY.encode() not in text
