"""The classifier's rule table (issue 15): rules as data, every ordering that matters pinned, the
boundary decisions, 300+ public vectors with their sources, and user rules from config.toml."""

from __future__ import annotations

import dataclasses

import pytest

from app.engine.failure_input import make_case
from app.engine.failure_rules import BUILT_IN_RULES, KINDS, PAYLOAD_KINDS, evaluate
from app.engine.failures import classify_fields
from app.engine.resets import SizeEvidence
from tests.fixtures.failure_vectors import all_vectors

VECTORS = all_vectors()
BY_ID = {vector["id"]: vector for vector in VECTORS}
KIND_OF = {rule.id: rule.kind for rule in BUILT_IN_RULES}

# Every pair of rules of different kinds that both match some real error, the winner first, with the
# vector that shows it. A new rule (or phrase) that makes two rules meet must be decided here.
PINNED = {
    ("headers.phrase", "payload.size"): "gw-iis-header-too-long",  # "Request Too Long" page about headers
    ("net.tls-verify", "net.reset-by-size"): "x-bedrock-tls-unknown-ca",  # a certificate refused: not a size
    ("overflow.tpm", "payload.size"): "x-groq-413-request-too-large",  # TPM words win over a 413
    (
        "overflow.tpm",
        "rate.429",
    ): "ll-openai-request-too-large-tpm",  # one request over TPM: waiting won't help
    ("overflow.tpm", "rate.code"): "doc-groq-413-tpm",
    ("overloaded.model-not-ready", "rate.429"): "doc-bedrock-model-not-ready",  # a 429 that says "not ready"
    ("overloaded.model-not-ready", "server.5xx"): "doc-llamacpp-loading",
    ("overloaded.status", "server.5xx"): "neg-bedrock-service-unavailable",
    ("quota.exhausted", "rate.429"): "doc-openai-quota",  # billing, not a rate
    ("rate.429", "overflow.phrase"): "ll-token-quota-reached",  # "too many tokens … in the last minute"
    ("rate.429", "payload.size"): "x-openai-429-request-too-large-please-reduce",
    ("rate.code", "overflow.pairing"): "x-bedrock-stream-throttling",
    (
        "server.upstream-trouble",
        "overloaded.status",
    ): "gw-envoy-upstream-reset-503",  # proxy trouble, not overload
    ("timeout", "server.5xx"): "x-gateway-504",
    ("waf.403", "auth.403"): "obs-old-openai-create-alb_waf_403-300KiB",
    ("waf.block-words", "overloaded.status"): "waf-paloalto-blocked",  # a block page served with 503
    ("waf.block-words", "server.5xx"): "waf-paloalto-blocked",
    # issue 38: the hop that answered
    ("net.refused", "net.reset-by-size"): "x-connection-refused-big",  # nothing listens: not a size
    ("proxy.policy", "waf.403"): "squid-acl-403",  # a proxy's policy, never a cap
    ("proxy.policy", "waf.page-words"): "squid-acl-403",
    ("proxy.policy", "waf.block-words"): "squid-acl-403",
    ("proxy.unreachable", "server.5xx"): "proxy-status-connection-refused-502",  # the proxy, not the provider
    ("proxy.unreachable", "overloaded.status"): "squid-connect-fail-503",
    # issue 39: decided by meaning
    ("auth.network-policy", "waf.403"): "azure-openai-vnet-firewall-403",  # the provider's own network rules
    ("meaning.body-size", "gateway.html-400"): "ngrok-812-exceeded-maximum-size",  # it says the size
    ("meaning.body-size", "server.5xx"): "aspnet-maximum-request-length-500",  # a byte cap reported as 500
    ("meaning.headers", "payload.size"): "jetty-413-head-tiny-body",  # a 413 about the head, 1.2 KB body
    ("meaning.output-limit", "overflow.pairing"): "bedrock-maximum-tokens-exceeds-model-limit",  # max_tokens
    ("meaning.overflow", "payload.size"): "github-models-413-tokens",  # a 413 whose limit is in tokens
    ("waf.vendor-mark", "gateway.html-400"): "f5-asm-ts-cookie-only-403",  # F5's cookie says who refused
    ("waf.vendor-mark", "server.5xx"): "fortiweb-blocked-cookie",  # a block page served with 500
}


def _case(vector: dict, **changes):
    return make_case(
        status=vector["status"],
        message=vector["message"] or "",
        body=vector["body"],
        headers=vector["headers"],
        request_bytes=vector["request_bytes"],
        transport=vector.get("transport"),
        error_type=vector.get("error_type"),
        provider=vector.get("provider"),
        request_header_bytes=vector.get("request_header_bytes"),
        **changes,
    )


def _decisive_pairs(rules=BUILT_IN_RULES) -> dict[tuple[str, str], list[str]]:
    pairs: dict[tuple[str, str], list[str]] = {}
    for vector in VECTORS:
        verdict = evaluate(_case(vector), rules)
        if verdict is None:
            continue
        winner = verdict.matched[0]
        for loser in verdict.matched[1:]:
            if KIND_OF[loser] != KIND_OF[winner]:
                pairs.setdefault((winner, loser), []).append(vector["id"])
    return pairs


def test_rules_are_data_with_unique_ids_and_priorities():
    ids = [rule.id for rule in BUILT_IN_RULES]
    priorities = [rule.priority for rule in BUILT_IN_RULES]
    assert len(ids) == len(set(ids)) and len(priorities) == len(
        set(priorities)
    )  # no tie is ever decided by order
    assert all(rule.kind in KINDS and rule.signals for rule in BUILT_IN_RULES)
    assert all(0 <= p < 1000 for p in priorities)  # user rules default to 1000


def test_every_ordering_between_rules_that_meet_is_pinned():
    pairs = _decisive_pairs()
    unpinned = {pair: ids[:3] for pair, ids in pairs.items() if pair not in PINNED}
    assert not unpinned, f"rules of different kinds meet without a pinned decision: {unpinned}"
    stale = {pair for pair in PINNED if pair not in pairs}
    assert not stale, f"pinned orderings no vector exercises any more: {stale}"
    for pair, vector_id in PINNED.items():
        assert vector_id in pairs[pair]


@pytest.mark.parametrize("pair", sorted(PINNED), ids=lambda p: f"{p[0]}>{p[1]}")
def test_swapping_a_pinned_pair_changes_its_verdict(pair):
    """The pinned vector really depends on the order: with the two priorities swapped, its kind changes."""
    winner, loser = pair
    by_id = {rule.id: rule for rule in BUILT_IN_RULES}
    swapped = [
        dataclasses.replace(rule, priority=by_id[loser].priority)
        if rule.id == winner
        else dataclasses.replace(rule, priority=by_id[winner].priority)
        if rule.id == loser
        else rule
        for rule in BUILT_IN_RULES
    ]
    vector = BY_ID[PINNED[pair]]
    assert evaluate(_case(vector), BUILT_IN_RULES).rule.kind == vector["expected"]
    assert evaluate(_case(vector), swapped).rule.kind != vector["expected"]


def test_three_hundred_public_cases_each_with_its_source():
    assert len(VECTORS) >= 300
    assert len({v["id"] for v in VECTORS}) == len(VECTORS)
    assert all(isinstance(v.get("source"), str) and len(v["source"]) > 10 for v in VECTORS)
    public = [v for v in VECTORS if v["id"].startswith(("ll-", "pi-", "oc-", "doc-", "waf-", "gw-"))]
    assert len(public) >= 200
    assert all("http" in v["source"] or "/" in v["source"] for v in public)  # a URL or a repository path


def test_the_winning_rule_is_named_in_the_evidence():
    failure = classify_fields(
        403, "", "<html><title>Attention Required! | Cloudflare</title></html>", {"cf-ray": "x"}
    )
    assert failure.rule_id == "waf.403" and failure.evidence[-1] == "rule waf.403"
    assert classify_fields(418, "I'm a teapot").rule_id == "fallback"


# -- boundary decisions (each pinned by a vector; the notes in the fixture say why) -------------------------
BOUNDARIES = {
    "quota exhausted is not a rate limit": ("doc-openai-quota", "other"),
    "a quota that refills per minute is a rate limit": ("doc-gemini-free-tier-per-minute", "rate_limit"),
    "credit balance too low is billing": ("doc-anthropic-credit-balance", "other"),
    "one request over the TPM limit (429)": ("ll-openai-request-too-large-tpm", "context_overflow"),
    "one request over the TPM limit (413)": ("doc-groq-413-tpm", "context_overflow"),
    "TPM spent this minute": ("x-openai-429-request-too-large-please-reduce", "rate_limit"),
    "a byte limit stated on the request": ("ll-vertex-payload-size", "payload_too_large"),
    "a character limit on a message's text": ("ll-string-too-long-messages", "context_overflow"),
    "a character limit on a parameter": ("ll-string-too-long-user-param", "other"),
    "a block page with status 200": ("waf-zscaler-blocked-200", "waf_block"),
    "an unflagged 200 HTML body": ("neg-200-html-unflagged", "other"),
    "a CAPTCHA with status 405": ("waf-aws-captcha-405", "waf_block"),
    "a proxy's upstream reset (503)": ("gw-envoy-upstream-reset-503", "server_error"),
    "a block page with status 503": ("waf-paloalto-blocked", "waf_block"),
    "model not ready (429)": ("doc-bedrock-model-not-ready", "overloaded"),
    "model loading (503)": ("doc-hf-model-loading", "overloaded"),
    "a gateway's JSON policy refusal": ("gw-kong-acl-json-403", "auth"),
    "header-size rejections": ("gw-nginx-header-400", "headers_too_large"),
    "a URL too long is not a body": ("gw-nginx-414", "other"),
    "unknown but harmless": ("neg-teapot", "other"),
}


@pytest.mark.parametrize("decision", sorted(BOUNDARIES))
def test_boundary_decisions(decision):
    vector_id, kind = BOUNDARIES[decision]
    vector = BY_ID[vector_id]
    assert vector["expected"] == kind
    assert (
        classify_fields(
            vector["status"],
            vector["message"] or "",
            vector["body"],
            vector["headers"],
            vector["request_bytes"],
            transport=vector.get("transport"),
        ).kind
        == kind
    )


def test_nothing_that_is_not_about_size_becomes_payload_related():
    """Every vector whose kind is not a size kind stays so even when its request was huge (a false payload
    verdict compacts a healthy conversation)."""
    for vector in VECTORS:
        if vector["expected"] in PAYLOAD_KINDS or vector.get("transport") == "connection":
            continue
        failure = classify_fields(
            vector["status"],
            vector["message"] or "",
            vector["body"],
            vector["headers"],
            32 * 1024 * 1024,
            transport=vector.get("transport"),
            error_type=vector.get("error_type"),
        )
        if failure.kind in ("connection_drop",):  # only a dropped connection is judged by size alone
            assert vector["status"] is None
            continue
        assert not failure.payload_related, (vector["id"], failure.reason)


def test_headers_too_large_is_not_payload_related_and_names_the_culprits():
    failure = classify_fields(
        431, "Request Header Fields Too Large", request_bytes=300_000, request_header_bytes=20_480
    )
    assert failure.kind == "headers_too_large" and not failure.payload_related and not failure.recoverable
    assert not failure.transient
    assert "a long API key or token, cookies, or custom headers" in failure.reason
    assert "bulkhead sent 20.0 KB of headers" in failure.reason
    assert "request headers 20.0 KB (20,480 bytes)" in failure.evidence


@pytest.mark.parametrize(
    ("header_bytes", "body", "kind"),
    [
        (20_480, 4_600, "headers_too_large"),  # Node's 431 arriving as a reset: a header problem
        (8_000, 4_600, "other"),  # ordinary headers: a transient reset, retried
        (20_480, 900_000, "connection_drop"),  # a body past the drop threshold: the size rule wins
    ],
)
def test_a_reset_after_an_oversized_header_block_is_a_header_problem(header_bytes, body, kind):
    failure = classify_fields(
        None,
        "Connection reset by peer",
        request_bytes=body,
        transport="connection",
        request_header_bytes=header_bytes,
    )
    assert failure.kind == kind, failure.evidence
    if kind == "headers_too_large":
        assert not failure.payload_related and not failure.transient
        assert "rule headers.reset-big-headers" in failure.evidence
        assert "a long API key or token, cookies, or custom headers" in failure.reason


def test_an_html_error_page_is_quoted_by_its_title():
    page = "<html><head><title>400 Bad Request</title></head><body><h1>Bad Request</h1></body></html>"
    assert "“400 Bad Request”" in classify_fields(400, "", page, {"server": "nginx"}).reason
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    assert classify_fields(502, "", page).reason.endswith("502 from the gateway (“502 Bad Gateway”)")


# -- resets judged by evidence (item 3) ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("evidence", "payload", "said"),
    [
        (None, False, "request 304.7 KB < 488.3 KB drop threshold"),
        (
            SizeEvidence(accepted_max=120_000, refused_min=300_000),
            True,
            "the smallest body this endpoint refused",
        ),
        (SizeEvidence(accepted_max=120_000, last_reset=312_000), True, "reset twice in a row"),
        (
            SizeEvidence(accepted_max=None, last_reset=312_000),
            False,
            "drop threshold",
        ),  # nothing small passed yet
        (
            SizeEvidence(accepted_max=400_000, refused_min=300_000),
            False,
            "drop threshold",
        ),  # a bigger body passed
    ],
)
def test_a_reset_under_the_threshold_is_a_size_problem_only_on_evidence(evidence, payload, said):
    failure = classify_fields(None, "Connection error.", request_bytes=312_000, size_evidence=evidence)
    assert failure.payload_related == payload and failure.kind == ("connection_drop" if payload else "other")
    assert any(said in line for line in failure.evidence), failure.evidence
    assert "small" not in failure.reason  # 312 KB is not "small"
    assert "bulkhead probe" in failure.reason
    if not payload:
        assert "drop_payload_min_bytes" in failure.reason and failure.transient


# -- signals over the exception's cause chain (what issue 22 builds on) ---------------------------------------
def test_a_407_down_the_cause_chain_is_auth_not_a_network_failure():
    from app.engine.failures import classify
    from app.providers.base import ProviderError

    class ProxyError(Exception):  # what httpx raises when the CONNECT tunnel is refused
        pass

    ProxyError.__module__ = "httpx"
    try:
        try:
            raise ProxyError("407 Proxy Authentication Required")
        except ProxyError as inner:
            raise ConnectionError("Connection error.") from inner
    except ConnectionError as outer:
        error = ProviderError(
            "Connection error.",
            provider="openai",
            original=outer,
            request_bytes=900_000,
            transport="connection",
        )
    failure = classify(error)
    assert (
        failure.kind == "auth"
        and failure.rule_id == "auth.proxy-407-in-chain"
        and not failure.payload_related
    )
    assert 'cause chain says "407"' in failure.evidence
    from app.engine.failure_words import describe_action

    assert "HTTPS_PROXY" in describe_action(failure)


# -- TLS (issue 22): only a verification failure is a certificate problem ----------------------------------
_BEDROCK_URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream"


@pytest.mark.parametrize(
    ("provider", "names", "not_named"),
    [
        ("anthropic", ("SSL_CERT_FILE", "ca_bundle", "Anthropic"), ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE")),
        ("openai", ("SSL_CERT_FILE", "ca_bundle", "OpenAI"), ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE")),
        ("bedrock", ("AWS_CA_BUNDLE", "ca_bundle", "botocore"), ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")),
    ],
)
def test_the_certificate_hint_names_what_the_failing_routes_sdk_reads(provider, names, not_named):
    message = (
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate "
        "(_ssl.c:1006)"
    )
    if provider == "bedrock":
        message = f"SSL validation failed for {_BEDROCK_URL} {message}"
    failure = classify_fields(None, message, request_bytes=9000, transport="connection", provider=provider)
    assert failure.rule_id == "net.tls-verify" and not failure.transient
    assert all(name in failure.reason for name in names), failure.reason
    assert not any(name in failure.reason for name in not_named), failure.reason


@pytest.mark.parametrize(
    "said",
    [
        "EOF occurred in violation of protocol (_ssl.c:2427)",
        "[SSL: TLSV1_ALERT_NO_APPLICATION_PROTOCOL] tlsv1 alert no application protocol",
    ],
)
def test_a_tls_close_on_bedrock_is_a_drop_judged_by_size_not_a_certificate_problem(said):
    message = f"SSL validation failed for {_BEDROCK_URL} {said}"
    big = classify_fields(
        None,
        message,
        request_bytes=700_000,
        transport="connection",
        error_type="SSLError",
        provider="bedrock",
    )
    assert big.kind == "connection_drop" and big.rule_id == "net.reset-by-size", big.evidence
    assert "certificate" not in big.reason.lower() and "CA" not in big.reason
    small = classify_fields(
        None, message, request_bytes=9000, transport="connection", error_type="SSLError", provider="bedrock"
    )
    assert small.rule_id == "net.reset-unproven" and small.transient


def test_a_wrong_proxy_password_is_auth_too():
    from app.engine.failures import classify
    from app.providers.base import ProviderError

    class ProxyError(Exception):
        pass

    try:
        try:
            raise ProxyError("407 Proxy Authentication Required")
        except ProxyError as inner:
            raise OSError("Tunnel connection failed") from inner
    except OSError as outer:
        error = ProviderError(
            "Could not connect to the endpoint URL",
            provider="bedrock",
            original=outer,
            transport="connection",
        )
    failure = classify(error)
    assert failure.kind == "auth" and not failure.transient


def test_a_missing_bundle_met_after_route_setup_says_variable_path_and_does_not_exist(tmp_path, monkeypatch):
    """`bulkhead probe` or a summarizer route builds its client without `choose_route`: same words, not retried."""
    import asyncio

    from app.config import Route, Settings
    from app.engine.failures import classify
    from app.providers.base import make_provider

    missing = tmp_path / "corp.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    provider = make_provider(
        Route(name="t", provider="openai", model="m", base_url="https://127.0.0.1:9/v1"),
        Settings(),
        "sk-FAKE",
    )
    with pytest.raises(Exception) as raised:
        asyncio.run(provider.probe(10))
    failure = classify(raised.value)
    assert failure.rule_id == "net.ca-bundle-missing" and not failure.transient and "\n" not in failure.reason
    assert f"SSL_CERT_FILE = {missing} does not exist" in failure.reason
