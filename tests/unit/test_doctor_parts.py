"""`bulkhead doctor`'s pure parts: which proxy the SDKs use for a URL and why, and naming the issuer of a
certificate that a TLS-inspecting proxy signed (read from its DER bytes, no library)."""

from __future__ import annotations

import ssl

import pytest

from app.doctor.certs import inspecting_proxy, parse_certificate
from app.doctor.network import proxy_for, target_of


@pytest.mark.parametrize(
    ("url", "env", "expected"),
    [
        ("https://api.anthropic.com", {"HTTPS_PROXY": "http://p:3128"}, ("http://p:3128", "HTTPS_PROXY")),
        (
            "https://api.anthropic.com",
            {"https_proxy": "http://a:1", "HTTPS_PROXY": "http://b:2"},
            ("http://a:1", "https_proxy"),
        ),
        (
            "http://gw.corp:8080/v1",
            {"HTTPS_PROXY": "http://p:3128", "HTTP_PROXY": "http://q:80"},
            ("http://q:80", "HTTP_PROXY"),
        ),
        ("https://api.openai.com", {"ALL_PROXY": "http://all:1"}, ("http://all:1", "ALL_PROXY")),
        ("https://llm.corp.example", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": ".corp.example"}, None),
        ("https://10.1.2.3", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, None),
        ("https://api.anthropic.com", {}, None),
    ],
)
def test_the_proxy_in_effect_and_the_variable_that_set_it(url, env, expected):
    proxy, why = proxy_for(target_of(url, "routes.x.base_url"), env)
    if expected is None:
        assert proxy is None and why.startswith("no proxy")
    else:
        assert (proxy.url, proxy.variable) == expected and why.endswith(f"from {expected[1]}")


def test_a_proxy_password_never_shows():
    proxy, why = proxy_for(target_of("https://x", "s"), {"HTTPS_PROXY": "http://alice:s3cret@p:3128"})
    assert proxy.password == "s3cret" and "s3cret" not in why and "alice:***@p:3128" in why


def test_the_issuer_is_read_from_der_and_inspecting_roots_are_named():
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA(organization_name="Zscaler Inc.", organization_unit_name="Zscaler Root CA")
    leaf = ca.issue_cert("api.anthropic.com")
    cert = parse_certificate(ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode()))
    assert cert.issuer["O"] == "Zscaler Inc." and not cert.self_signed and not cert.expired()
    assert inspecting_proxy(cert) == "Zscaler"
    plain = trustme.CA().issue_cert("x")
    assert (
        inspecting_proxy(
            parse_certificate(ssl.PEM_cert_to_DER_cert(plain.cert_chain_pems[0].bytes().decode()))
        )
        is None
    )
