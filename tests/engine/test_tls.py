"""Issue 22, corporate TLS, through real software: Caddy and nginx serving HTTPS with a CA the test makes
(trustme) in front of the lab, and mitmproxy as a TLS-inspecting HTTPS_PROXY — for all three SDKs.

- the CA is trusted through bulkhead's `ca_bundle` and through each SDK's own variable;
- without it the failure is the certificate hint naming what that SDK reads (not retried);
- a bundle that does not exist is reported at route setup, before any request (TUI and -p share it);
- a 413 over TLS is followed by a smaller retry on a new connection;
- nginx closing TLS mid-upload on Bedrock is recovered like the plain-HTTP case;
- a proxy that wants credentials is `auth` with the advice, never retried; credentials in the URL work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.config import ConfigError, Settings
from app.engine.bootstrap import choose_route
from tests.engine.conftest import route_for
from tests.engine.tls_gateways import make_ca, start_caddy_tls, start_mitmproxy, start_nginx_tls

PROVIDERS = ("anthropic", "openai", "bedrock")
SDK_VARIABLE = {"anthropic": "SSL_CERT_FILE", "openai": "SSL_CERT_FILE", "bedrock": "AWS_CA_BUNDLE"}


@pytest.fixture
def ca(tmp_path: Path):
    return make_ca(tmp_path / "ca")


def _requests(h):
    return h.session.store.list_requests(h.session.id)


# -- trusting the CA ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["ca_bundle", "sdk-variable", "REQUESTS_CA_BUNDLE"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_ca_is_trusted_through_ca_bundle_and_each_sdks_own_variable(
    make_harness, lab, ca, servers, monkeypatch, provider, how
):
    caddy = servers(start_caddy_tls, lab.port, ca)
    settings = {}
    if how == "ca_bundle":
        settings["ca_bundle"] = str(ca.ca)
    else:
        monkeypatch.setenv(SDK_VARIABLE[provider] if how == "sdk-variable" else how, str(ca.ca))
    h = make_harness(provider, base_url=caddy.url, **settings)

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert "hello" in result.text and len(caddy.log()) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_without_the_ca_the_hint_names_what_that_sdk_reads_and_it_is_not_retried(
    make_harness, lab, ca, servers, provider
):
    caddy = servers(start_caddy_tls, lab.port, ca)
    h = make_harness(provider, base_url=caddy.url)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert "ca_bundle" in result.error and SDK_VARIABLE[provider] in result.error, result.error
    assert "REQUESTS_CA_BUNDLE" not in result.error
    other = "AWS_CA_BUNDLE" if provider != "bedrock" else "SSL_CERT_FILE"
    assert other not in result.error
    assert h.sleeps == [] and caddy.log() == []  # not retried; nothing reached the server
    assert _requests(h)[-1]["kind"] == "other"


@pytest.mark.parametrize("where", ["ca_bundle", "sdk-variable"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bundle_that_does_not_exist_is_reported_at_route_setup(tmp_path, monkeypatch, provider, where):
    missing = tmp_path / "corp-ca.pem"
    route = route_for(provider, "https://127.0.0.1:9")
    settings = Settings(
        routes={"t": route}, default_route="t", ca_bundle=str(missing) if where == "ca_bundle" else None
    )
    if where == "sdk-variable":
        monkeypatch.setenv(SDK_VARIABLE[provider], str(missing))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-FAKE")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-FAKE")

    with pytest.raises(ConfigError) as raised:
        choose_route(settings, "t")

    said = str(raised.value)
    assert str(missing) in said and "does not exist" in said
    assert ("ca_bundle" if where == "ca_bundle" else SDK_VARIABLE[provider]) in said


def _run_p(tmp_path: Path, config: str, env_extra: dict) -> subprocess.CompletedProcess:
    path = tmp_path / "p-config.toml"
    path.write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env.update(
        {
            "BULKHEAD_CONFIG": str(path),
            "BULKHEAD_RETRY_MAX_ATTEMPTS": "1",
            "BULKHEAD_RETRY_BASE_DELAY": "0.01",
            **env_extra,
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "app", "-p", "hello"], capture_output=True, text=True, env=env, timeout=120
    )


def test_dash_p_reports_a_missing_bundle_before_any_request(tmp_path, lab, ca, servers):
    caddy = servers(start_caddy_tls, lab.port, ca)
    missing = tmp_path / "nope" / "corp.pem"
    done = _run_p(
        tmp_path,
        f'default_route = "gw"\n[routes.gw]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n'
        f'base_url = "{caddy.url}"\n',
        {"SSL_CERT_FILE": str(missing), "ANTHROPIC_API_KEY": "sk-ant-FAKE"},
    )

    assert done.returncode != 0 and done.stdout == ""
    assert f"SSL_CERT_FILE = {missing} does not exist" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "no known signal" not in done.stderr
    assert caddy.log() == [] and lab.requests() == []


# -- a rejection over TLS: the retry goes on a new connection ----------------------------------------------
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_413_over_tls_is_followed_by_a_smaller_retry_on_a_new_connection(
    make_harness, lab, ca, servers, provider
):
    caddy = servers(start_caddy_tls, lab.port, ca, "    request_body {\n        max_size 200KB\n    }")
    h = make_harness(provider, base_url=caddy.url, ca_bundle=str(ca.ca))
    assert (await h.engine.submit("small enough")).outcome == "answered"
    h.grow(10, 14_000)  # ≈ 290 KB

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    statuses = [row["status"] for row in _requests(h)]
    assert 413 in statuses and 431 not in statuses, statuses
    rejected_at = statuses.index(413)
    assert statuses[rejected_at + 1] == 200
    cap = h.engine.state.learned_cap(h.engine.route.endpoint_id)
    assert cap is not None and cap.cap_bytes >= 100_000  # learned from the 413, never from a stray reply
    log = caddy.log()
    ports = [entry["request"]["remote_port"] for entry in log]
    codes = [entry["status"] for entry in log]
    at = codes.index(413)
    assert ports[at + 1] != ports[at], (codes, ports)  # the retry did not reuse the rejected connection


# -- TLS closed mid-upload on Bedrock: a drop, recovered like plain HTTP -----------------------------------
async def test_nginx_closing_tls_mid_upload_on_bedrock_is_a_drop_and_recovered(
    make_harness, lab, ca, servers, monkeypatch
):
    nginx = servers(start_nginx_tls, lab.port, ca, "if ($too_big) { return 444; }")
    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca.ca))
    h = make_harness("bedrock", base_url=nginx.url)
    assert (await h.engine.submit("hello")).outcome == "answered"
    h.grow(12, 50_000)  # ≈ 1.2 MB: over nginx's 200 KB trigger and over drop_payload_min_bytes

    result = await h.engine.submit("continue")

    assert result.outcome == "answered", result.error
    dropped = [row for row in _requests(h) if row["kind"] == "connection_drop"]
    assert dropped, [(r["status"], r["kind"]) for r in _requests(h)]
    assert all("certificate" not in (row.get("reason") or "").lower() for row in _requests(h))
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is not None


async def test_an_h2_only_server_is_not_blamed_on_certificates(make_harness, lab, ca, servers, monkeypatch):
    caddy = servers(start_caddy_tls, lab.port, ca, protocols="h2")
    monkeypatch.setenv("AWS_CA_BUNDLE", str(ca.ca))
    h = make_harness("bedrock", base_url=caddy.url)

    result = await h.engine.submit("hello")

    assert result.outcome == "failed"
    assert "certificate" not in result.error.lower() and "ca_bundle" not in result.error, result.error


# -- mitmproxy as a TLS-inspecting HTTPS_PROXY --------------------------------------------------------------
def _use_proxy(monkeypatch, url: str) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(name, url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_through_mitmproxy_with_its_ca_and_without(
    make_harness, lab, ca, servers, monkeypatch, provider
):
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca)
    _use_proxy(monkeypatch, mitm.url)

    trusted = make_harness(provider, base_url=caddy.url, ca_bundle=str(mitm.ca))
    assert (await trusted.engine.submit("hello")).outcome == "answered"
    assert len(caddy.log()) == 1

    untrusted = make_harness(
        provider, base_url=caddy.url, ca_bundle=str(ca.ca)
    )  # the server's CA, not the proxy's
    result = await untrusted.engine.submit("hello")
    assert (
        result.outcome == "failed" and "ca_bundle" in result.error and SDK_VARIABLE[provider] in result.error
    )
    assert untrusted.sleeps == [] and len(caddy.log()) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_mitmproxy_wanting_credentials(make_harness, lab, ca, servers, monkeypatch, provider):
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca, proxyauth="alice:s3cret-pw")

    _use_proxy(monkeypatch, mitm.url)
    h = make_harness(provider, base_url=caddy.url, ca_bundle=str(mitm.ca))
    result = await h.engine.submit("hello")
    assert result.outcome == "failed"
    assert "407" in result.error and "user:password@" in result.error and "HTTPS_PROXY" in result.error, (
        result.error
    )
    assert h.sleeps == [] and caddy.log() == []  # auth: not retried, nothing got through
    assert _requests(h)[-1]["kind"] == "auth"

    _use_proxy(monkeypatch, mitm.url.replace("http://", "http://alice:wrong@"))
    h = make_harness(provider, base_url=caddy.url, ca_bundle=str(mitm.ca))
    result = await h.engine.submit("hello")
    assert result.outcome == "failed" and "407" in result.error and h.sleeps == []

    _use_proxy(monkeypatch, mitm.url.replace("http://", "http://alice:s3cret-pw@"))
    h = make_harness(provider, base_url=caddy.url, ca_bundle=str(mitm.ca))
    result = await h.engine.submit("hello")
    assert result.outcome == "answered", result.error
    assert len(caddy.log()) == 1


def test_the_proxy_password_is_nowhere_on_disk_or_stderr(tmp_path, lab, ca, servers):
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca, proxyauth="alice:s3cret-pw")
    home = tmp_path / "p-home"
    config = (
        f'default_route = "gw"\nca_bundle = "{mitm.ca}"\n[routes.gw]\nprovider = "openai"\n'
        f'model = "gpt-5.5"\nbase_url = "{caddy.url}/v1"\n'
    )
    proxy = mitm.url.replace("http://", "http://alice:s3cret-pw@")

    done = _run_p(
        tmp_path,
        config,
        {"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "OPENAI_API_KEY": "sk-FAKE", "BULKHEAD_HOME": str(home)},
    )

    assert done.returncode == 0, done.stderr
    assert "hello" in done.stdout
    assert "s3cret-pw" not in done.stderr and "s3cret-pw" not in done.stdout
    for path in home.rglob("*"):
        if path.is_file():
            assert b"s3cret-pw" not in path.read_bytes(), path
