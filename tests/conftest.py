"""Shared fixtures: every test gets its own BULKHEAD_HOME and config, and no real credentials."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.redact import forget_secrets

_SCRUB = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    # the machine's proxy and CA settings: local servers are reached directly; tests that need
    # a proxy or a bundle set their own
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "AWS_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private data folder and config path per test; no BULKHEAD_*, provider, AWS or proxy variables leak in."""
    for name in list(os.environ):
        if name.startswith("BULKHEAD_") or name in _SCRUB:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("BULKHEAD_HOME", str(home))
    config = tmp_path / "config.toml"
    config.touch()  # BULKHEAD_CONFIG must name a file that exists (an empty one: every default)
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield home
    forget_secrets()  # the redaction registry is process-wide: no test inherits another's keys


@pytest.fixture(scope="module")
def lab_server():
    """The lab (app.lab), in-process, one per test module; each folder's `lab` fixture resets it per test."""
    from app.lab.embedded import start_embedded_lab

    with start_embedded_lab() as handle:
        yield handle


@pytest.fixture(scope="module")
def crs(lab_server, tmp_path_factory):
    """`crs(paranoia)`: Debian's Apache + ModSecurity + OWASP CRS in front of the module's lab at that
    paranoia level, one per level for the module (tests/engine/real_gateways.py; skips, naming the package,
    when one is missing)."""
    from tests.engine.real_gateways import start_apache_modsecurity

    started = {}

    def gateway(paranoia: int):
        if paranoia not in started:
            folder = tmp_path_factory.mktemp(f"apache-pl{paranoia}")
            started[paranoia] = start_apache_modsecurity(folder, lab_server.port, paranoia)
        return started[paranoia]

    yield gateway
    for running in started.values():
        running.stop()


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch):
    """A local web site for web_fetch (tests/tools/test_web_fetch.py: `Site`), reached without any proxy."""
    from tests.tools.test_web_fetch import Site

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    server = Site()
    yield server
    server.close()
