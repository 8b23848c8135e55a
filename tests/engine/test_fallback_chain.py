"""Issue 41, part 1: the provider fallback chain, from the real entry point (`python3 -m app -p --json`).

Three labs stand behind one real nginx (Debian's package, started in a temp folder): `/a/` → lab A (the first
route's, where the faults are injected), `/b/` → lab B, `/c/` → lab C (clean), and `/drop/` where nginx itself
closes the connection (`return 444`). The routes speak all three wire formats: anthropic → openai (Chat
Completions and Responses) → bedrock. Each test runs bulkhead as a user does and reads its `--json` events:
the moves name each route, the requests carry the route that sent them, the answer says who answered.

One test per kind that moves on (overloaded, server_error, rate_limit, timeout, connection_drop, auth,
content_block, model_not_found) and one per kind that stays (payload_too_large, context_overflow, a WAF's size
block, headers_too_large): a size problem is recovered on the route that had it, never by switching.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.lab.embedded import LabHandle, start_embedded_lab
from app.lab.model import filler
from tests.engine.real_gateways import Gateway, start_nginx

SQL = "SELECT * FROM users WHERE name = '' OR '1'='1'"


@pytest.fixture(scope="module")
def labs() -> Iterator[dict[str, LabHandle]]:
    with start_embedded_lab() as a, start_embedded_lab() as b, start_embedded_lab() as c:
        yield {"a": a, "b": b, "c": c}


@pytest.fixture(scope="module")
def nginx(labs, tmp_path_factory) -> Iterator[Gateway]:
    """One nginx in front of the three labs; `/a/` also caps bodies at 40 KB (its own 413 page)."""
    locations = "".join(
        f"""
        location /{name}/ {{
            {"client_max_body_size 40k;" if name == "a" else ""}
            proxy_pass http://127.0.0.1:{lab.port}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 30s;
        }}"""
        for name, lab in labs.items()
    )
    server = f"""    server {{
        listen 127.0.0.1:{{port}};
        client_max_body_size 64m;
        location /drop/ {{ return 444; }}
{locations}
    }}"""
    gateway = start_nginx(tmp_path_factory.mktemp("nginx"), labs["a"].port, server)
    yield gateway
    gateway.stop()


@pytest.fixture
def clean(labs):
    for lab in labs.values():
        lab.configure(gateway="none", cap=None, window=None, faults=None, seed=0)
        lab.clear_requests()
        lab.clear_cache()
    return labs


def _routes(nginx: Gateway, first: str = "/a", chain: str = '["bedrock"]', extra: str = "") -> str:
    url = nginx.url
    return f"""
default_route = "anthropic"
retry_max_attempts = 1
retry_base_delay = 0.01
retry_max_delay = 0.05
request_timeout = 2
memory = "off"
{extra}
[routes.anthropic]
provider = "anthropic"
model = "claude-sonnet-5-5"
base_url = "{url}{first}"
fallback = {chain}
[routes.chat]
provider = "openai"
api = "chat"
model = "gpt-5.5"
base_url = "{url}/b/v1"
[routes.responses]
provider = "openai"
api = "responses"
model = "gpt-5.5"
base_url = "{url}/drop/v1"
[routes.bedrock]
provider = "bedrock"
model = "anthropic.claude-sonnet-5-5-v1:0"
endpoint_url = "{url}/c"
region = "us-east-1"
"""


@dataclass
class Run:
    code: int
    events: list[dict]
    stderr: str

    def of(self, type_: str) -> list[dict]:
        return [e for e in self.events if e["type"] == type_]

    @property
    def result(self) -> dict:
        return self.events[-1]

    def request_routes(self) -> list[tuple[str, str | None]]:
        return [(e["route"], e["kind"]) for e in self.of("request") if e["purpose"] == "chat"]


@pytest.fixture
def bulkhead(tmp_path: Path):
    home = tmp_path / "home"
    config = tmp_path / "config.toml"
    workspace = tmp_path / "work"
    workspace.mkdir()

    def run(toml: str, prompt: str, *flags: str, stdin: str | None = None) -> Run:
        config.write_text(toml)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC", "OPENAI", "AWS_", "BULKHEAD_"))
        }
        env.update(
            BULKHEAD_HOME=str(home),
            BULKHEAD_CONFIG=str(config),
            AWS_ACCESS_KEY_ID="AKIAFAKEFAKEFAKEFAKE",
            AWS_SECRET_ACCESS_KEY="fake-secret-for-tests",
            AWS_DEFAULT_REGION="us-east-1",
            PYTHONPATH=os.getcwd(),
        )
        done = subprocess.run(
            [sys.executable, "-m", "app", "-p", prompt, *flags, "--json"],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=workspace,
            timeout=180,
        )
        events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        assert events and events[-1]["type"] == "result", done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        return Run(done.returncode, events, done.stderr)

    return run


# -- the kinds that move on -----------------------------------------------------------------------------------

MOVING = {
    # kind: (lab A's faults or gateway, the first route's path, the prompt, the status the move names)
    "overloaded": ({"faults": "529:1"}, "/a", "hello", "529 overloaded after 1 retry"),
    "server_error": ({"faults": "500:1"}, "/a", "hello", "500 server error after 1 retry"),
    "rate_limit": ({"faults": "429:1"}, "/a", "hello", "429 rate limited after 1 retry"),
    "timeout": ({"faults": "timeout:1"}, "/a", "hello", "timed out after 1 retry"),
    "connection_drop": ({}, "/drop", "hello", "connection dropped after 1 retry"),
    "auth": ({"faults": "401:1"}, "/a", "hello", "401 auth refused"),
    "content_block": ({"gateway": "modsecurity"}, "/a", f"why is this unsafe? {SQL}", "403 content blocked"),
    "model_not_found": ({"faults": "404:1"}, "/a", "hello", "404 model not found"),
}


@pytest.mark.parametrize("kind", sorted(MOVING))
def test_a_kind_the_route_cannot_get_past_moves_the_turn_to_the_next_route(kind, clean, nginx, bulkhead):
    settings, path, prompt, said = MOVING[kind]
    clean["a"].configure(**settings)

    run = bulkhead(_routes(nginx, first=path), prompt)

    assert run.code == 0, run.stderr
    assert run.result["outcome"] == "answered" and run.result["text"].startswith("Lab model")
    [moved] = run.of("fallback")
    assert (moved["from_route"], moved["to_route"], moved["kind"]) == ("anthropic", "bedrock", kind)
    assert moved["reason"] == f"anthropic: {said}"
    [answered] = run.of("fallback_answered")
    assert answered["text"] == f"anthropic: {said} → answered by bedrock"
    routes = run.request_routes()
    assert routes[-1] == ("bedrock", None)  # the answer came from bedrock…
    assert {route for route, failed in routes[:-1]} == {
        "anthropic"
    }  # …after every attempt on anthropic failed
    assert all(failed is not None for _route, failed in routes[:-1])
    assert clean["c"].requests()[-1]["verdict"] == "passed"  # bedrock's lab got the same turn


def test_without_a_fallback_the_same_failure_ends_the_turn_on_its_route(clean, nginx, bulkhead):
    clean["a"].configure(faults="529:1")

    run = bulkhead(_routes(nginx, chain="[]"), "hello")

    assert run.code == 1 and run.result["outcome"] == "failed"
    assert run.of("fallback") == [] and {r for r, _ in run.request_routes()} == {"anthropic"}


def test_when_every_route_fails_the_error_names_each_one(clean, nginx, bulkhead):
    clean["a"].configure(faults="529:1")
    clean["b"].configure(faults="500:1")

    run = bulkhead(_routes(nginx, chain='["chat"]'), "hello")

    assert run.code == 1 and run.result["outcome"] == "failed"
    assert [m["to_route"] for m in run.of("fallback")] == ["chat"]
    assert run.result["error"].endswith(
        "(no route left in the fallback chain: anthropic: 529 overloaded after 1 retry → "
        "chat: 500 server error after 1 retry)"
    )


def test_a_kind_left_out_of_fallback_on_stays(clean, nginx, bulkhead):
    clean["a"].configure(faults="401:1")

    run = bulkhead(_routes(nginx, extra='fallback_on = ["overloaded", "server_error"]'), "hello")

    assert run.result["outcome"] == "failed" and run.of("fallback") == []
    assert "fallback chain" not in run.result["error"]


# -- the kinds that stay: size is recovered on the route that has it ------------------------------------------


def _grow(bulkhead, nginx, toml: str) -> None:
    """A first turn whose 30 KB answer makes the next request ~38 KB (an answer is never refused for its size)."""
    first = bulkhead(toml, "!big 30KB")
    assert first.result["outcome"] == "answered", first.stderr


STAYING = {
    # kind: (lab A's settings for the second turn, whether the turn is answered on anthropic after recovery)
    "payload_too_large": ({}, True),  # nginx's own client_max_body_size 40k on /a/: its 413 page
    "context_overflow": ({"window": 6000}, True),
    "waf_block": ({"gateway": "cloudflare", "cap": 30_000}, True),  # a 403 block page on a body over 30 KB
    "headers_too_large": (
        {"gateway": "header-431", "cap": 256},
        False,
    ),  # headers over 256 B: not fixable here
}


@pytest.mark.parametrize("kind", sorted(STAYING))
def test_a_size_problem_is_recovered_on_its_own_route_never_by_switching(kind, clean, nginx, bulkhead):
    settings, answered = STAYING[kind]
    toml = _routes(nginx)
    if kind != "headers_too_large":
        _grow(bulkhead, nginx, toml)
    clean["a"].configure(**settings)
    if kind == "payload_too_large":  # over nginx's 40 KB on /a/ with a prompt of its own
        stdin = "x" * 12_000
    else:
        stdin = None

    run = (
        bulkhead(toml, "what now?", "-c", stdin=stdin)
        if kind != "headers_too_large"
        else bulkhead(toml, "hi")
    )

    assert run.of("fallback") == [] and run.of("fallback_answered") == []
    routes = run.request_routes()
    assert {route for route, _ in routes} == {"anthropic"}, routes
    refused = [failed for _route, failed in routes if failed]
    assert refused and refused[0] == kind, routes
    if answered:
        assert run.result["outcome"] == "answered", run.result["error"]
        assert any(e["outcome"] == "succeeded" for e in run.of("recovery"))
    else:
        assert run.result["outcome"] == "failed"
        assert "fallback chain" not in run.result["error"]


# -- one chain, all three wire formats ------------------------------------------------------------------------


def test_one_chain_through_anthropic_openai_chat_openai_responses_to_bedrock(clean, nginx, bulkhead):
    clean["a"].configure(faults="529:1")
    clean["b"].configure(faults="500:1")

    run = bulkhead(_routes(nginx, chain='["chat", "responses", "bedrock"]'), "hello")

    assert run.code == 0 and run.result["outcome"] == "answered", run.stderr
    moves = [(m["from_route"], m["to_route"], m["kind"]) for m in run.of("fallback")]
    assert moves == [
        ("anthropic", "chat", "overloaded"),
        ("chat", "responses", "server_error"),
        ("responses", "bedrock", "connection_drop"),
    ]
    [answered] = run.of("fallback_answered")
    assert answered["text"] == (
        "anthropic: 529 overloaded after 1 retry → chat: 500 server error after 1 retry → "
        "responses: connection dropped after 1 retry → answered by bedrock"
    )
    assert [route for route, _ in run.request_routes()] == [
        "anthropic",
        "anthropic",
        "chat",
        "chat",
        "responses",
        "responses",
        "bedrock",
    ]
    wires = {r["path"].split("/")[1] for r in clean["b"].requests()}
    assert "v1" in wires  # lab B heard OpenAI's wire; lab C Bedrock's
    assert clean["c"].requests()[-1]["path"].startswith("/model/")


def test_the_cost_counts_each_route_apart(clean, nginx, bulkhead, tmp_path):
    clean["a"].configure(faults="529:1")
    run = bulkhead(_routes(nginx), "hello")
    assert run.result["outcome"] == "answered"

    from app.store import Store

    store = Store(tmp_path / "home" / "bulkhead.db")
    try:
        counters = json.loads(store.query("SELECT counters FROM sessions")[0]["counters"])
    finally:
        store.close()
    by_route = counters["by_route"]
    assert by_route["anthropic"]["requests"] == 2 and by_route["anthropic"]["failed"] == 2
    assert by_route["bedrock"]["requests"] == 1 and by_route["bedrock"]["output_tokens"] > 0
    assert counters["fallbacks"] == 1


# -- a partial answer is never asked for twice -----------------------------------------------------------------


def test_after_a_partial_answer_p_keeps_it_and_stops_unless_told(clean, nginx, bulkhead):
    clean["a"].configure(faults="stream-error:1")

    run = bulkhead(_routes(nginx), "!big 3KB")

    assert run.code == 1 and run.result["outcome"] == "partial"
    assert run.of("fallback") == []
    assert "--fallback-after-partial" in run.result["error"] and "bedrock" in run.result["error"]
    assert clean["c"].requests() == []  # nothing was sent to the next route


def test_with_the_flag_the_next_route_continues_the_partial_answer(clean, nginx, bulkhead):
    clean["a"].configure(faults="stream-error:1")

    run = bulkhead(_routes(nginx), "!big 3KB", "--fallback-after-partial")

    assert run.code == 0 and run.result["outcome"] == "answered", run.stderr
    [moved] = run.of("fallback")
    assert moved["after_partial"] and moved["reason"] == "anthropic: overloaded mid-answer"
    streamed = "".join(e["text"] for e in run.of("text"))
    assert streamed == filler(3 * 1024)  # the partial, then exactly the rest: nothing repeated
    assert run.result["text"] == filler(3 * 1024)


# -- each turn starts on the first route, unless fallback_sticky ---------------------------------------------


@pytest.mark.parametrize("sticky", [False, True])
def test_the_next_turn_starts_on_the_first_route_unless_sticky(sticky, clean, nginx, bulkhead):
    toml = _routes(nginx, extra=f"fallback_sticky = {'true' if sticky else 'false'}")
    clean["a"].configure(faults="529@1+2")  # the first turn's two attempts fail, then anthropic answers
    assert bulkhead(toml, "hello").of("fallback")

    second = bulkhead(toml, "again", "-c")

    assert second.result["outcome"] == "answered"
    assert second.request_routes()[0][0] == ("bedrock" if sticky else "anthropic")
    assert second.of("fallback") == []
