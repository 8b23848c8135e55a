"""Issue 39: the classifier reads what an error means — the object, the limit, the unit — and the hop that
answered; the held-out vectors predict how it does on the next gateway."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from app.cli import main
from app.engine.failure_case import Target
from app.engine.failure_hops import HopKind, hop_of, proxy_status, via_nearest
from app.engine.failure_input import make_case
from app.engine.failure_meaning import Subject, read
from app.engine.failure_vendors import Role, find_vendor
from app.engine.failure_words import describe_action
from app.engine.failures import classify_fields
from app.network_env import proxy_for
from tests.fixtures.failure_vectors import HELDOUT, load

ROOT = Path(__file__).resolve().parents[2]


def _subjects(text: str, status: int = 400) -> list[Subject]:
    return [
        claim.subject for claim in read(make_case(status=status, body=json.dumps({"error": text}))).claims
    ]


@pytest.mark.parametrize(
    ("text", "subject"),
    [
        ("`inputs` must have less than 2048 tokens. Given: 2391", Subject.INPUT),
        ("Codex ran out of room in the model's context window.", Subject.INPUT),
        ("Range of input length should be [1, 30000]", Subject.INPUT),
        (
            "The number of tokens to keep is greater than the context length (n_keep: 13055>= n_ctx: 4096)",
            Subject.INPUT,
        ),
        (
            "Request body too large for gpt-4o model. Max size: 8000 tokens.",
            Subject.INPUT,
        ),  # the unit decides
        ("input length and max_tokens exceed context limit: 197000 + 8192 > 200000", Subject.INPUT),
        ("max_tokens is too large: 20480.", Subject.OUTPUT),
        ("The maximum tokens you requested exceeds the model limit of 32768", Subject.OUTPUT),
        (
            "The parameter `max_completion_tokens` is above maximum value, expected a value <= 12288",
            Subject.OUTPUT,
        ),
        ("maxOutputTokens must be at most 8192", Subject.OUTPUT),
        ("num_predict exceeds the maximum of 4096", Subject.OUTPUT),
        ("max_gen_len must be less than or equal to 2048", Subject.OUTPUT),
        ("Request is too large", Subject.BODY),
        ("HTTP content length exceeded 10485760 bytes.", Subject.BODY),
        ("Your request exceeded the maximum size of 10MB.", Subject.BODY),
        ("Your metadata headers exceed the maximum allowed metadata size.", Subject.HEADER),
        ("Request Entity Too Large: head", Subject.HEADER),
        ("Invalid 'tools': array too long. Expected an array with maximum length 128", Subject.OTHER),
        ("image exceeds 5 MB maximum: 8259148 bytes > 5242880 bytes", Subject.OTHER),
        ("The response received had a size exceeding the maximum allowed.", Subject.OTHER),
    ],
)
def test_each_sentence_says_what_is_over_which_limit(text, subject):
    subjects = _subjects(text)
    assert subjects[:1] == [subject] or (subject is Subject.INPUT and Subject.INPUT in subjects)


@pytest.mark.parametrize(
    "text",
    [
        "Your request exceeds the service quota for your account.",  # a quota, not a size
        "Rate limit exceeded: too many tokens per minute",
        "context deadline exceeded",  # Go's timeout, not the context window
        "This model is currently experiencing high demand.",
        "Invalid API key provided",
    ],
)
def test_limits_that_are_not_sizes_make_no_claim(text):
    assert _subjects(text) == []


def test_a_stated_byte_limit_the_request_is_under_is_not_about_this_body():
    body = json.dumps({"message": "HTTP content length exceeded 10485760 bytes."})
    assert classify_fields(413, "", body, None, 12_400_000).kind == "payload_too_large"
    small = classify_fields(400, "", body, None, 4_000)
    assert small.kind != "payload_too_large" and small.rule_id != "meaning.body-size"


def test_a_413_about_the_head_on_a_tiny_body_never_teaches_a_body_cap():
    failure = classify_fields(413, "Request Entity Too Large: head", "", {"server": "Jetty(9.4.z)"}, 1_228)
    assert failure.kind == "headers_too_large" and not failure.payload_related
    assert describe_action(failure).startswith("fail: no cap is learned")


def test_an_output_limit_says_lower_max_output_tokens_and_compacts_nothing():
    body = json.dumps({"message": "The maximum tokens you requested exceeds the model limit of 4096."})
    failure = classify_fields(400, "", body, None, 9_000)
    assert failure.kind == "other" and not failure.recoverable and not failure.transient
    assert failure.rule_id == "meaning.output-limit" and "lower `max_output_tokens`" in failure.reason
    assert "nothing is compacted" in describe_action(failure)


def test_the_loaded_context_length_is_an_overflow_not_a_model_loading():
    text = "However, the model is loaded with context length of only 4096 tokens, which is not enough."
    failure = classify_fields(400, "", json.dumps({"error": text}))
    assert failure.kind == "context_overflow" and failure.stated_window_tokens == 4096


def test_the_providers_own_network_rules_are_a_permission_refusal_not_a_waf():
    body = json.dumps(
        {"error": {"code": "403", "message": "Access denied due to Virtual Network/Firewall rules."}}
    )
    failure = classify_fields(403, "", body, {"content-type": "application/json"}, 2_300)
    assert failure.kind == "auth" and not failure.payload_related and failure.rule_id == "auth.network-policy"


# -- vendors, from headers, cookies, link hosts ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "body", "vendor"),
    [
        ({"set-cookie": "TS01a2b3c4=01f1; Path=/"}, "<html><body>error</body></html>", "f5"),
        ({"set-cookie": "FORTIWAFSID=abc; path=/"}, "<html><body>error</body></html>", "fortinet"),
        ({}, '<html><body><img src="https://errors.aliyun.com/x.png"></body></html>', "aliyun-waf"),
        ({"via": "NS-CACHE-10.0: 3"}, "<html><body>no</body></html>", "netscaler"),
        ({"x-data-origin": "naxsi/waf"}, "", "naxsi"),
    ],
)
def test_vendor_marks_outside_the_page_text(headers, body, vendor):
    mark = find_vendor(make_case(status=403, body=body, headers=headers))
    assert mark is not None and mark.vendor.name == vendor and mark.vendor.role is Role.WAF


def test_marks_that_ride_on_real_api_answers_are_ignored_on_the_apis_json():
    case = make_case(status=400, body='{"error": {"message": "bad"}}', headers={"set-cookie": "TS01a2b3c4=1"})
    assert find_vendor(case) is None
    failure = classify_fields(400, "", '{"error": {"message": "bad"}}', {"set-cookie": "TS01a2b3c4=1"})
    assert failure.kind == "other"


@pytest.mark.parametrize("status", [405, 418, 500, 222])
def test_a_waf_page_decides_at_unusual_statuses(status):
    page = "<html><head><title>Blocked</title></head><body>Request rejected.</body></html>"
    failure = classify_fields(
        status,
        "",
        page,
        {"set-cookie": "barra_counter_session=1; path=/"},
        77_000,
        transport="html-200" if status < 300 else "http",
    )
    assert failure.kind == "waf_block" and failure.gateway == "barracuda"


# -- hops: which hop answered ---------------------------------------------------------------------------------
def test_proxy_status_names_the_last_member_with_an_error():
    value = 'ExampleCDN, corp-proxy.example; error=dns_error; rcode="NXDOMAIN", edge; received-status=200'
    case = make_case(status=502, headers={"proxy-status": value})
    assert proxy_status(case) == ("corp-proxy.example", "dns_error", "")
    quoted = make_case(status=502, headers={"proxy-status": 'a; error=connection_refused; details="x, y; z"'})
    assert proxy_status(quoted) == ("a", "connection_refused", "x, y; z")


def test_via_gives_the_hop_nearest_bulkhead():
    case = make_case(status=403, headers={"via": "1.1 edge (Varnish), 1.1 vm (squid/5.7)"})
    assert via_nearest(case) == "vm (squid/5.7)"


def test_squids_refusal_names_squid_the_address_and_the_variable():
    proxy = proxy_for(
        "http://127.0.0.1:8787/v1/messages", "anthropic", {"HTTP_PROXY": "http://127.0.0.1:3128"}
    )
    target = Target("http://127.0.0.1:8787/v1/messages", "base_url of [routes.lab]", proxy)
    failure = classify_fields(
        403,
        "",
        "<html><body>Access Denied.</body></html>",
        {"x-squid-error": "ERR_ACCESS_DENIED 0", "server": "squid/5.7"},
        4_710,
        target=target,
    )
    assert failure.kind == "auth" and not failure.payload_related and failure.rule_id == "proxy.policy"
    hop = failure.hop
    assert hop is not None and hop.kind is HopKind.FORWARD_PROXY and hop.vendor == "squid"
    assert (hop.address, hop.setting, hop.error) == ("127.0.0.1:3128", "HTTP_PROXY", "ERR_ACCESS_DENIED")
    assert failure.to_dict()["hop"]["kind"] == "forward-proxy"


def test_a_policy_refusal_is_a_size_only_when_the_endpoint_showed_it():
    from app.engine.resets import SizeEvidence

    evidence = SizeEvidence(accepted_max=4_000, refused_min=200_000)
    headers = {"x-squid-error": "ERR_ACCESS_DENIED 0"}
    assert classify_fields(403, "", "<html></html>", headers, 4_710).kind == "auth"
    by_size = classify_fields(403, "", "<html></html>", headers, 250_000, size_evidence=evidence)
    assert by_size.kind == "payload_too_large" and by_size.rule_id == "proxy.policy-by-size"


def test_no_answer_names_the_endpoint_or_the_proxy():
    direct = make_case(
        message="[Errno 111] Connection refused",
        target=Target("http://127.0.0.1:9/v1", "base_url of [routes.x]"),
    )
    hop = hop_of(direct)
    assert hop is not None and hop.kind is HopKind.ENDPOINT and hop.address == "127.0.0.1:9"
    assert hop.setting == "base_url of [routes.x]"


@pytest.mark.parametrize(
    ("url", "provider", "env", "variable"),
    [
        (
            "http://lab:8787/v1",
            "anthropic",
            {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://q:2"},
            "HTTP_PROXY",
        ),
        (
            "https://api.example.com/v1",
            "openai",
            {"HTTP_PROXY": "http://p:1", "HTTPS_PROXY": "http://q:2"},
            "HTTPS_PROXY",
        ),
        (
            "https://api.example.com/v1",
            "openai",
            {"https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2"},
            "https_proxy",
        ),
        ("https://api.example.com/v1", "anthropic", {"ALL_PROXY": "socks5://s:1080"}, "ALL_PROXY"),
        (
            "https://api.example.com/v1",
            "bedrock",
            {"ALL_PROXY": "socks5://s:1080"},
            None,
        ),  # botocore has none
        (
            "https://api.example.com/v1",
            "openai",
            {"HTTPS_PROXY": "http://q:2", "NO_PROXY": "example.com"},
            None,
        ),
    ],
)
def test_the_proxy_in_effect_is_the_one_the_sdk_takes(url, provider, env, variable):
    proxy = proxy_for(url, provider, env)
    assert (proxy.variable if proxy else None) == variable


def test_the_407_advice_names_the_variable_in_effect():
    proxy = proxy_for("http://lab:8787/v1", "openai", {"HTTP_PROXY": "http://p:3128"})
    failure = classify_fields(407, "", "", {}, 100, target=Target("http://lab:8787/v1", "", proxy))
    assert "put them in HTTP_PROXY as user:password@host" in describe_action(failure)


# -- the held-out set and the command that scores it ----------------------------------------------------------
def test_every_family_is_held_out_from_at_least_two_sources():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from split_vectors import source_key
    finally:
        sys.path.pop(0)
    sources: dict[str, set[str]] = defaultdict(set)
    for case in load(HELDOUT):
        sources[case["family"]].add(source_key(case["source"]))
    families = {case["family"] for case in load(HELDOUT)}
    assert families >= {
        "overflow-wording",
        "byte-cap",
        "header-size",
        "waf-page",
        "transport-capacity",
        "false-payload",
        "hard-negative",
        "proxy-hop",
    }
    assert all(len(keys) >= 2 for keys in sources.values()), sources


def test_the_committed_split_is_the_seeded_split():
    done = subprocess.run(
        [sys.executable, "scripts/split_vectors.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_score_on_the_held_out_set_meets_the_goal(capsys):
    assert main(["classify", "--batch", str(HELDOUT), "--score", "--json"]) == 0
    score = json.loads(capsys.readouterr().out)
    assert score["total"] == len(load(HELDOUT)) and score["accuracy"] >= 0.95
    assert score["false_payload"] == []


def test_score_counts_false_payload_verdicts_apart(tmp_path, capsys):
    batch = tmp_path / "b.jsonl"
    batch.write_text(
        json.dumps(
            {"id": "a", "status": 413, "body": "", "request_bytes": 9, "expected": "other", "family": "x"}
        )
        + "\n"
        + json.dumps({"id": "b", "status": 401, "expected": "auth", "family": "x"})
        + "\n",
        encoding="utf-8",
    )
    assert main(["classify", "--batch", str(batch), "--score"]) == 0
    out = capsys.readouterr().out
    assert "accuracy        1/2 = 50.0%" in out and "false payload   1  (a)" in out
    assert "miss  a: expected other, got payload_too_large (payload.size)" in out


def test_score_needs_a_batch(capsys):
    assert main(["classify", "--status", "413", "--score"]) == 2
    assert "--score needs --batch" in capsys.readouterr().err


def test_explain_names_the_generalising_signal_and_what_lost(tmp_path, capsys):
    page = tmp_path / "tgi.json"
    page.write_text(
        json.dumps({"error": "Input validation error: `inputs` must have less than 4096 tokens."})
    )
    assert (
        main(["classify", "--status", "413", "--body-file", str(page), "--bytes", "30000", "--explain"]) == 0
    )
    out = capsys.readouterr().out
    assert "decided by  meaning.overflow — token/context noun × limit" in out
    assert "also matched  payload.size (550, payload_too_large) — lower priority" in out
    assert 'read        meaning: input noun "input" × limit "must have less", figures in tokens' in out
