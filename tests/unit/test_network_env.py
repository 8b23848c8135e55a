"""Proxy and CA settings as `bulkhead config check` reports them: passwords never shown."""

from __future__ import annotations

import pytest

from app.network_env import hide_password, network_lines


@pytest.mark.parametrize(("url", "shown"), [
    ("http://alice:s3cret@proxy.corp:8080", "http://alice:***@proxy.corp:8080"),
    ("http://:s3cret@proxy.corp:8080", "http://:***@proxy.corp:8080"),
    ("http://al%40ice:p%40ss@proxy:3128/", "http://al%40ice:***@proxy:3128/"),
    ("http://proxy.corp:8080", "http://proxy.corp:8080"),
    ("proxy.corp:8080", "proxy.corp:8080"),
])
def test_hide_password(url, shown):
    assert hide_password(url) == shown


def test_lower_case_proxy_variables_count_and_nothing_set_says_nothing(tmp_path):
    assert network_lines({}) == []
    lines = network_lines({"https_proxy": "http://bob:hunter2@p:1", "SSL_CERT_DIR": str(tmp_path)})
    assert [line.text for line in lines] == [
        "HTTPS_PROXY=http://bob:***@p:1", f"SSL_CERT_DIR={tmp_path} (trusted by Anthropic, OpenAI)"]
    assert all(line.ok for line in lines)
