"""The lab's pure parts: fault SPECs and plans, gateway pages, the prompt cache, settings, event-stream frames."""

from __future__ import annotations

import json

import pytest

from app.lab import eventstream, gateway, pages, wire_anthropic, wire_bedrock, wire_openai
from app.lab.cache import PromptCache
from app.lab.config import LabConfig
from app.lab.conversation import estimate_tokens, segment
from app.lab.eventstream import decode_frames
from app.lab.faults import FAULT_KINDS, FaultPlan, FaultSpecError, parse_faults

# --- faults -----------------------------------------------------------------------------------------


def test_fault_spec_grammar():
    rules = parse_faults("429:0.1, 529:0.05,cut@3+5 ,timeout@1")
    assert [str(r) for r in rules] == ["429:0.1", "529:0.05", "cut@3+5", "timeout@1"]
    assert parse_faults(None) == () and parse_faults("") == () and parse_faults("none") == ()


@pytest.mark.parametrize("spec", ["boom:0.1", "429", "429:1.5", "429:0.6,500:0.6", "cut@0", "cut@x"])
def test_bad_fault_specs_say_why(spec):
    with pytest.raises(FaultSpecError, match="fault"):
        parse_faults(spec)


def test_scheduled_faults_hit_exactly_the_nth_requests():
    plan = FaultPlan(parse_faults("429@2+4,drop@5"), seed=1)
    assert [plan.next() for _ in range(6)] == [None, "429", None, "429", "drop", None]


def test_rates_are_seeded_and_reproducible():
    def run(seed):
        plan = FaultPlan(parse_faults("429:0.3,500:0.2"), seed=seed)
        return [plan.next() for _ in range(200)]

    assert run(7) == run(7)
    assert run(7) != run(8)
    outcome = run(7)
    assert 40 <= outcome.count("429") <= 80 and 20 <= outcome.count("500") <= 60
    always = FaultPlan(parse_faults("slow:1"), seed=0)
    assert {always.next() for _ in range(20)} == {"slow"}


def test_every_documented_kind_parses():
    for kind in FAULT_KINDS:
        assert parse_faults(f"{kind}@1")[0].kind == kind


# --- pages ------------------------------------------------------------------------------------------


def test_nginx_page_is_byte_for_byte_nginx():
    page = pages.nginx_413()
    assert page.status == 413 and len(page.body) == 176
    assert page.body.startswith(b"<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n")
    assert page.body.endswith(b"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
    assert page.header("server") == "nginx" and page.header("content-type") == "text/html"


def test_gateway_pages_carry_their_signatures():
    ctx = gateway.GatewayContext(host="llm.corp.example", path="/v1/messages", serial=7, seed=3)
    cloudflare = gateway.block_page("cloudflare", ctx)
    assert cloudflare.status == 403 and cloudflare.header("server") == "cloudflare"
    assert cloudflare.header("cf-ray") == ctx.ray_id and ctx.ray_id.endswith("-SJC")
    assert (
        ctx.ray_id.split("-")[0].encode() in cloudflare.body
        and b"Sorry, you have been blocked" in cloudflare.body
    )
    akamai = gateway.block_page("akamai", ctx)
    assert akamai.header("server") == "AkamaiGHost" and b"Access Denied" in akamai.body
    assert b"Reference&#32;&#35;18&#46;" in akamai.body and b"llm&#46;corp&#46;example" in akamai.body
    modsec = gateway.block_page("modsecurity", ctx)
    assert (
        modsec.status == 413
        and modsec.header("server").startswith("Apache")
        and b"Mod_Security" not in modsec.body
    )
    waf = gateway.block_page("aws-waf", ctx)
    assert (
        waf.status == 403 and waf.header("server") == "awselb/2.0" and b"<h1>403 Forbidden</h1>" in waf.body
    )
    assert gateway.block_page("header-431", ctx).status == 431
    captive = gateway.block_page("html-200", ctx)
    assert captive.status == 200 and captive.header("content-type") == "text/html"
    apigw = gateway.block_page("apigw", ctx)
    assert (apigw.status, json.loads(apigw.body)) == (413, {"message": "Request Too Long"})
    assert apigw.header("x-amzn-ErrorType") == "RequestEntityTooLargeException"
    forbidden = gateway.block_page("apigw-waf", ctx)
    assert (forbidden.status, json.loads(forbidden.body)) == (403, {"message": "Forbidden"})
    # deterministic ids: same seed and serial, same page
    assert gateway.block_page("cloudflare", ctx).body == cloudflare.body


def test_profile_default_caps_and_cap_rules():
    assert gateway.effective_cap("nginx", None) == 1024 * 1024
    assert gateway.effective_cap("aws-waf", None) == 8 * 1024
    assert gateway.effective_cap("nginx", 5) == 5
    assert gateway.effective_cap("none", None) is None
    assert gateway.over_cap(0, 0) and gateway.over_cap(10, 11) and not gateway.over_cap(10, 10)
    assert not gateway.over_cap(None, 10**9)
    with pytest.raises(ValueError, match="profiles: none, nginx"):
        gateway.profile("squid")


# --- provider error bodies --------------------------------------------------------------------------


def test_provider_overflow_wording():
    body = json.loads(wire_anthropic.overflow(212731, 200000).body)
    assert body["error"] == {
        "type": "invalid_request_error",
        "message": "prompt is too long: 212731 tokens > 200000 maximum",
    }
    body = json.loads(wire_openai.overflow(5000, 4096).body)["error"]
    assert body["code"] == "context_length_exceeded" and body["type"] == "invalid_request_error"
    assert body["message"].startswith(
        "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens."
    )
    response = wire_bedrock.overflow(5000, 4096)
    assert response.status == 400 and response.header("x-amzn-ErrorType") == "ValidationException"
    assert json.loads(response.body) == {"message": "Input is too long for requested model."}


# --- prompt cache -----------------------------------------------------------------------------------


def test_breakpoint_cache_reads_the_longest_written_prefix():
    cache = PromptCache()
    system = segment("system", "s" * 4000, breakpoint=True)
    turn1 = segment("text", "a" * 400)
    turn2 = segment("text", "b" * 400, breakpoint=True)
    first = cache.breakpoints([system, turn1])
    assert (first.read_tokens, first.write_tokens) == (0, 1000)
    second = cache.breakpoints([system, turn1])
    assert (second.read_tokens, second.write_tokens) == (1000, 0)
    third = cache.breakpoints([system, turn1, turn2])
    assert (third.read_tokens, third.write_tokens) == (1000, 200)
    assert cache.breakpoints([segment("text", "x")]).read_tokens == 0  # no breakpoint, no caching


def test_automatic_cache_needs_1024_tokens_and_counts_in_128_steps():
    cache = PromptCache()
    small = [segment("user", "a" * 400, breakpoint=True), segment("user", "q", breakpoint=True)]
    cache.automatic(small)
    assert cache.automatic(small).read_tokens == 0
    big = [segment("user", "a" * 5000, breakpoint=True), segment("user", "q1", breakpoint=True)]
    assert cache.automatic(big).read_tokens == 0
    again = cache.automatic([big[0], segment("user", "q2", breakpoint=True)])
    assert again.read_tokens == 1152  # 1250 tokens, rounded down to 128s


def test_token_estimate_is_bytes_over_four():
    assert [estimate_tokens(n) for n in (0, 1, 4, 5, 400)] == [0, 1, 1, 2, 100]


# --- settings ---------------------------------------------------------------------------------------


def test_lab_config_validates_and_describes():
    config = LabConfig(gateway="nginx", cap="128KB", faults="429:0.1", seed=3)
    assert config.cap == 128 * 1024
    assert (
        config.describe() == "gateway nginx · cap 128.0 KB · window 200,000 tokens · faults 429:0.1 · seed 3"
    )
    assert "nginx's default" in LabConfig(gateway="nginx").describe()
    assert LabConfig(gateway="html-200").describe().startswith("gateway html-200 · every request")
    assert config.changed(cap=1000).cap == 1000
    for bad in (
        {"gateway": "squid"},
        {"cap": "lots"},
        {"window": 0},
        {"faults": "boom:1"},
        {"colour": "red"},
    ):
        with pytest.raises(ValueError):
            config.changed(**bad)


def test_event_stream_frames_round_trip_through_the_encoder():
    events = wire_bedrock.stream_error() + eventstream.event("messageStart", {"role": "assistant"})
    frames = list(decode_frames(events))
    assert frames[0][0][":message-type"] == "exception"
    assert frames[0][0][":exception-type"] == "serviceUnavailableException"
    assert json.loads(frames[1][1]) == {"role": "assistant"}


def test_the_lab_never_imports_textual():
    import subprocess
    import sys

    code = (
        "import sys, app.lab.embedded, app.lab.server, app.commands.lab_cmd; "
        "sys.exit(1 if any(m == 'textual' or m.startswith('textual.') for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
