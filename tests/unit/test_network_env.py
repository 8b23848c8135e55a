"""Proxy and CA settings as `bulkhead config check` reports them: passwords never shown."""

from __future__ import annotations

import pytest

from app.network_env import hide_password, network_lines


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://alice:s3cret@proxy.corp:8080", "http://alice:***@proxy.corp:8080"),
        ("http://:s3cret@proxy.corp:8080", "http://:***@proxy.corp:8080"),
        ("http://al%40ice:p%40ss@proxy:3128/", "http://al%40ice:***@proxy:3128/"),
        ("http://proxy.corp:8080", "http://proxy.corp:8080"),
        ("proxy.corp:8080", "proxy.corp:8080"),
    ],
)
def test_hide_password(url, shown):
    assert hide_password(url) == shown


def test_lower_case_proxy_variables_count_and_nothing_set_says_nothing(tmp_path):
    assert network_lines({}) == []
    lines = network_lines({"https_proxy": "http://bob:hunter2@p:1", "SSL_CERT_DIR": str(tmp_path)})
    assert [line.text for line in lines] == [
        "HTTPS_PROXY=http://bob:***@p:1",
        f"SSL_CERT_DIR={tmp_path} (trusted by Anthropic, OpenAI)",
    ]
    assert all(line.ok for line in lines)


# -- which CA bundle each route trusts (issue 22) ---------------------------------------------------------
def test_ca_bundle_precedence_setting_then_the_sdks_own_variable_then_the_shared_ones(tmp_path):
    from app.ca_bundle import resolve

    env = {
        "REQUESTS_CA_BUNDLE": "/r.pem",
        "SSL_CERT_FILE": "/s.pem",
        "AWS_CA_BUNDLE": "/a.pem",
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
    }
    assert resolve("anthropic", setting="/c.pem", env=env).source == "ca_bundle in config.toml"
    assert resolve("anthropic", env=env).path == "/s.pem"
    assert resolve("bedrock", env=env).path == "/a.pem"
    assert resolve("openai", env={"REQUESTS_CA_BUNDLE": "/r.pem"}).source == "REQUESTS_CA_BUNDLE"
    only_httpx = {"SSL_CERT_FILE": "/s.pem", "AWS_CONFIG_FILE": str(tmp_path / "none")}
    assert resolve("bedrock", env=only_httpx).path == "/s.pem"  # one corporate bundle for all three
    assert (
        resolve("bedrock", env={"SSL_CERT_DIR": "/etc/ssl/certs", "AWS_CONFIG_FILE": str(tmp_path / "none")})
        is None
    )  # botocore takes files
    assert resolve("anthropic", env={}) is None and resolve("lab", setting="/c.pem", env={}) is None


def test_ca_bundle_from_the_aws_profile(tmp_path):
    from app.ca_bundle import resolve

    config = tmp_path / "aws-config"
    config.write_text("[default]\nregion = us-east-1\n[profile work]\nca_bundle = /corp/ca.pem\n")
    env = {"AWS_CONFIG_FILE": str(config)}
    found = resolve("bedrock", profile="work", env=env)
    assert found.path == "/corp/ca.pem" and "AWS profile work" in found.source
    assert resolve("bedrock", env=env) is None  # the default profile has none
    assert resolve("bedrock", env={**env, "AWS_CA_BUNDLE": "/a.pem"}, profile="work").path == "/a.pem"


def test_config_check_says_which_bundle_each_route_uses_and_flags_a_missing_one(
    tmp_path, monkeypatch, capsys
):
    from app.commands.config_cmd import check

    bundle = tmp_path / "corp.pem"
    bundle.write_text("x")
    config = tmp_path / "config.toml"
    config.write_text(
        f'ca_bundle = "{bundle}"\n[routes.a]\nprovider = "anthropic"\nmodel = "m"\n'
        '[routes.b]\nprovider = "bedrock"\nmodel = "m"\nregion = "us-east-1"\n'
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-FAKE")

    assert check() == 0
    out = capsys.readouterr().out
    assert (
        f"routes.a: CA bundle {bundle} (file, from ca_bundle in config.toml), handed to the Anthropic SDK"
        in out
    )
    assert (
        f"routes.b: CA bundle {bundle} (file, from ca_bundle in config.toml), handed to boto3 (botocore)"
        in out
    )

    bundle.unlink()
    assert check() == 1
    out = capsys.readouterr().out
    assert f"✖ routes.b: ca_bundle in config.toml = {bundle} does not exist" in out
