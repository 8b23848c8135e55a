"""Issue 38 item 11: `bulkhead doctor` against the lab, behind real nginx, behind the TLS-inspecting mitmproxy
(without and with its CA), and with nothing listening — each ends with the right step red (or none) and the
sentence that says what to do; `--report` writes a redacted file."""

from __future__ import annotations

from app.cli import main
from tests.engine.real_gateways import free_port, start_nginx
from tests.engine.tls_gateways import make_ca, start_caddy_tls, start_mitmproxy

KEY = "sk-ant-doctor-SECRET-0123456789"


def _config(tmp_path, monkeypatch, base_url: str, extra: str = "") -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        f'default_route = "gw"\n{extra}[routes.gw]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n'
        f'base_url = "{base_url}"\n'
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.chdir(tmp_path)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def _lines(capsys) -> dict[str, str]:
    out = capsys.readouterr().out
    return {line[2:10].strip(): line[11:] for line in out.splitlines() if line[:1] in "✓✖·!"}


def test_against_the_lab_every_step_passes(lab, tmp_path, monkeypatch, capsys):
    _config(tmp_path, monkeypatch, lab.url)

    assert main(["doctor"]) == 0

    steps = _lines(capsys)
    assert list(steps) == ["route", "proxy", "dns", "tcp", "tls", "probe", "floor", "profile"]
    assert steps["proxy"].startswith("no proxy: none of HTTP_PROXY, ALL_PROXY is set")
    assert steps["tcp"].startswith(f"connected to 127.0.0.1:{lab.port}")
    assert "count_tokens endpoint" in steps["probe"] and "HTTP 200" in steps["probe"]
    assert "passes on its own; no cap known" in steps["floor"]


def test_with_nothing_listening_tcp_is_red_and_names_the_setting(tmp_path, monkeypatch, capsys):
    port = free_port()
    _config(tmp_path, monkeypatch, f"http://127.0.0.1:{port}")

    assert main(["doctor"]) == 1

    steps = _lines(capsys)
    assert steps["tcp"] == (
        f"nothing listens at 127.0.0.1:{port} (connection refused) — the address comes from routes.gw.base_url: "
        f"start the server there, or fix routes.gw.base_url"
    )
    assert steps["probe"] == "not tried: the path breaks above"


NGINX_2K = """    server {
        listen 127.0.0.1:{port};
        client_max_body_size 2k;
        location / { proxy_pass http://127.0.0.1:{upstream}; proxy_http_version 1.1; }
    }"""


def test_behind_nginx_whose_cap_is_under_the_floor_the_floor_is_red(
    lab, tmp_path, monkeypatch, capsys, servers
):
    """nginx takes 2 KB: the free probe passes, the route's floor (≈5 KB) does not — every chat request
    would be refused, and the doctor says so with nginx's own answer."""
    gateway = servers(start_nginx, lab.port, NGINX_2K)
    _config(tmp_path, monkeypatch, gateway.url)
    report = tmp_path / "doctor.txt"

    assert main(["doctor", "--report", str(report)]) == 1

    steps = _lines(capsys)
    assert "HTTP 200" in steps["probe"]
    assert steps["floor"].startswith("the floor alone (") and "tools (built-in)" in steps["floor"]
    assert "is refused: payload_too_large" in steps["floor"] and "nginx" in steps["floor"]
    assert "every chat request carries it, so every one would be refused" in steps["floor"]
    text = report.read_text()
    assert "[FAIL] floor: the floor alone" in text and "result: the path breaks at floor" in text
    assert KEY not in text


def _proxy(monkeypatch, url: str) -> None:
    monkeypatch.setenv("HTTPS_PROXY", url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)


def test_behind_mitmproxy_without_its_ca_tls_is_red_and_names_the_inspecting_proxy(
    lab, tmp_path, monkeypatch, capsys, servers
):
    ca = make_ca(tmp_path / "ca")
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca)
    _config(
        tmp_path, monkeypatch, caddy.url, extra=f'ca_bundle = "{ca.ca}"\n'
    )  # the server's CA, not the proxy's
    _proxy(monkeypatch, mitm.url.replace("http://", "http://alice:s3cret-pw@"))
    report = tmp_path / "doctor.txt"

    assert main(["doctor", "--report", str(report)]) == 1

    steps = _lines(capsys)
    assert steps["proxy"] == f"proxy {mitm.url.replace('http://', 'http://alice:***@')} from HTTPS_PROXY"
    assert steps["tunnel"].endswith(f"(HTTPS_PROXY) opened a tunnel to 127.0.0.1:{caddy.gateway.port}")
    assert steps["tls"].startswith("the certificate for 127.0.0.1 is issued by mitmproxy (")
    assert "a TLS-inspecting proxy re-signs your traffic" in steps["tls"]
    assert f"ca_bundle in config.toml ({ca.ca}) does not trust its root" in steps["tls"]
    assert (
        "set ca_bundle in config.toml to it (every route trusts it; this SDK alone reads SSL_CERT_FILE"
        in (steps["tls"])
    )
    assert steps["probe"] == "not tried: the path breaks above"
    text = report.read_text()
    assert "s3cret-pw" not in text and "[FAIL] tls:" in text and "verification:" in text


def test_behind_mitmproxy_with_its_ca_every_step_passes_and_the_proxy_is_named(
    lab, tmp_path, monkeypatch, capsys, servers
):
    ca = make_ca(tmp_path / "ca")
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca)
    _config(tmp_path, monkeypatch, caddy.url, extra=f'ca_bundle = "{mitm.ca}"\n')
    _proxy(monkeypatch, mitm.url)

    assert main(["doctor"]) == 0

    out = capsys.readouterr().out
    assert f"✓ tunnel   {mitm.url} (HTTPS_PROXY) opened a tunnel to 127.0.0.1:{caddy.gateway.port}" in out
    tls = next(line for line in out.splitlines() if line.startswith("✓ tls"))
    assert "certificate issued by" in tls and "mitmproxy, a TLS-inspecting proxy, re-signs it" in tls
    assert f"trusted through ca_bundle in config.toml ({mitm.ca})" in tls
    assert "✓ probe" in out and "✓ floor" in out


def test_a_proxy_wanting_credentials_is_red_at_the_tunnel_and_names_the_variable_in_effect(
    lab, tmp_path, monkeypatch, capsys, servers
):
    ca = make_ca(tmp_path / "ca")
    caddy = servers(start_caddy_tls, lab.port, ca)
    mitm = servers(start_mitmproxy, ca.ca, proxyauth="alice:s3cret-pw")
    _config(tmp_path, monkeypatch, caddy.url, extra=f'ca_bundle = "{mitm.ca}"\n')
    monkeypatch.setenv("https_proxy", mitm.url)  # lower case: what the SDKs read first
    monkeypatch.delenv("HTTPS_PROXY", raising=False)

    assert main(["doctor"]) == 1

    steps = _lines(capsys)
    assert steps["proxy"] == f"proxy {mitm.url} from https_proxy"
    assert steps["tunnel"] == (
        f"the proxy {mitm.url} wants credentials: https_proxy (407) — put them in https_proxy as "
        f"http://user:password@127.0.0.1:{mitm.gateway.port} (the variable in effect)"
    )
