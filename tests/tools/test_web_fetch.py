"""web_fetch against local HTTP servers started here: HTML as text, redirects meeting the WebFetch rules, the
size cap, refused content types, the environment's proxy, approvals (turns: tests/engine/test_web_fetch_turns.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from app.engine.always_allow import always_offer
from app.engine.fetch_context import fetch_settings
from app.engine.permissions import Permissions, Rule
from app.tools.approval import needs_approval
from app.tools.base import ToolContext
from app.tools.html_text import html_to_text
from app.tools.registry import run_tool

PAGE = b"""<!doctype html><html><head><title>Guide</title><style>body{color:red}</style>
<script>alert('hidden script')</script></head><body>
<nav><a href="/home">Home</a> | <a href="/about">About nav link</a></nav>
<h1>Install   the tool</h1>
<p>Run the <a href="/dl/setup">installer</a>
   and wait.</p>
<ul><li>first item</li><li>second <b>item</b></li></ul>
<pre>line one
  line two</pre>
</body></html>"""
BIG = 64 * 1024 * 1024  # far more than any socket buffer holds: a reader that stops early leaves most unsent


class Site:
    """A local HTTP server: `routes` maps a path to (status, headers, body or a body generator)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []  # (request line target, Host header)
        self.vias: list[str] = []  # each request's Via header ("" when none): a proxy names itself there
        self.sent: dict[str, int] = {}  # bytes a streamed body got onto the socket before the client left
        self.routes: dict[str, tuple[int, dict[str, str], bytes | Callable[[], Iterator[bytes]]]] = {}
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requests.append((self.path, self.headers.get("Host", "")))
                site.vias.append(self.headers.get("Via", ""))
                key = self.path if self.path in site.routes else self.path.split("/", 3)[-1]
                status, headers, body = site.routes.get(
                    self.path, site.routes.get("/" + key, (404, {"Content-Type": "text/plain"}, b"nope"))
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                if callable(body):
                    self.end_headers()
                    sent = 0
                    try:
                        for chunk in body():
                            self.wfile.write(chunk)
                            sent += len(chunk)
                    except OSError:
                        pass
                    site.sent[self.path] = sent
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def perms(workspace: Path, **lists: tuple[str, ...]) -> Permissions:
    rules = [Rule(text, kind, "config.toml", workspace) for kind, texts in lists.items() for text in texts]
    return Permissions(workspace, rules)


class _Settings:
    ca_bundle = None
    web_fetch_max_bytes = 200 * 1024
    web_fetch_timeout = 10.0
    web_fetch_max_redirects = 5


def context(tmp_path: Path, permissions: Permissions | None = None, **overrides: object) -> ToolContext:
    settings = _Settings()
    for key, value in overrides.items():
        setattr(settings, key, value)
    fields = fetch_settings(settings, permissions or perms(tmp_path))
    return ToolContext(workspace=tmp_path, session_folder=tmp_path / "session", **fields)


async def test_an_html_page_comes_back_as_readable_text(site, tmp_path):
    site.routes["/guide"] = (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE)
    outcome = await run_tool("web_fetch", {"url": f"{site.url}/guide"}, context(tmp_path))
    assert not outcome.is_error, outcome.content
    text = outcome.content
    assert text.startswith(f"URL: {site.url}/guide\nStatus: 200\nContent-Type: text/html\nCut: no\n")
    assert "# Guide" in text and "# Install the tool" in text
    assert f"Run the installer ({site.url}/dl/setup) and wait." in text
    assert "- first item\n\n- second item" in text
    assert "line one\n  line two" in text
    for dropped in ("hidden script", "color:red", "About nav link"):
        assert dropped not in text


def test_html_to_text_keeps_structure_and_drops_control_characters():
    text = html_to_text("<p>a\x1b[31m b</p><div><h3>T</h3><a href='#x'>here</a></div>", "https://x.test/")
    assert text == "a[31m b\n\n### T\n\nhere"


async def test_json_and_plain_text_pass_through_and_other_types_are_refused(site, tmp_path):
    site.routes["/data.json"] = (200, {"Content-Type": "application/json"}, b'{"a": [1, 2]}')
    site.routes["/logo.png"] = (200, {"Content-Type": "image/png"}, b"\x89PNG" + b"\x00" * 100)
    site.routes["/blob"] = (200, {}, b"\x89PNG" + b"\x00" * 100)
    site.routes["/notes"] = (200, {}, b"plain words")
    ctx = context(tmp_path)
    data = await run_tool("web_fetch", {"url": f"{site.url}/data.json"}, ctx)
    assert not data.is_error and data.content.endswith('\n\n{"a": [1, 2]}')
    image = await run_tool("web_fetch", {"url": f"{site.url}/logo.png"}, ctx)
    assert image.is_error
    assert "content type image/png" in image.content and "only HTML, plain text and JSON" in image.content
    blob = await run_tool("web_fetch", {"url": f"{site.url}/blob"}, ctx)
    assert blob.is_error and "no content type and binary content" in blob.content
    notes = await run_tool("web_fetch", {"url": f"{site.url}/notes"}, ctx)
    assert not notes.is_error and notes.content.endswith("Content-Type: (none)\nCut: no\n\nplain words")


async def test_a_huge_body_is_cut_at_the_cap_and_not_read_further(site, tmp_path):
    def endless() -> Iterator[bytes]:
        chunk = b"x" * 65536
        for _ in range(BIG // len(chunk)):
            yield chunk

    site.routes["/huge"] = (200, {"Content-Type": "text/plain"}, endless)
    outcome = await run_tool(
        "web_fetch", {"url": f"{site.url}/huge"}, context(tmp_path, web_fetch_max_bytes=4096)
    )
    assert not outcome.is_error
    assert "Cut: yes, at 4,096 bytes (web_fetch_max_bytes)" in outcome.content
    assert outcome.content.split("\n\n", 1)[1] == "x" * 4096
    for _ in range(200):  # the server thread notices the closed connection on its next writes
        if "/huge" in site.sent:
            break
        threading.Event().wait(0.05)
    assert site.sent.get("/huge", BIG) < BIG // 2  # the client stopped reading: most of it was never sent


async def test_a_redirect_is_followed_but_not_to_a_denied_domain(site, tmp_path):
    site.routes["/moved"] = (301, {"Location": "/guide"}, b"")
    site.routes["/guide"] = (200, {"Content-Type": "text/plain"}, b"arrived")
    site.routes["/away"] = (302, {"Location": "http://evil.example.com/steal"}, b"")
    rules = perms(tmp_path, deny=("WebFetch(domain:*.example.com)",))
    ctx = context(tmp_path, rules)

    followed = await run_tool("web_fetch", {"url": f"{site.url}/moved"}, ctx)
    assert not followed.is_error and followed.content.startswith(f"URL: {site.url}/guide\n")
    assert f"Redirected from: {site.url}/moved" in followed.content and followed.content.endswith("arrived")

    refused = await run_tool("web_fetch", {"url": f"{site.url}/away"}, ctx)
    assert refused.is_error
    assert "evil.example.com" in refused.content and "WebFetch(domain:*.example.com)" in refused.content


async def test_redirects_stop_at_the_limit(site, tmp_path):
    site.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    outcome = await run_tool(
        "web_fetch", {"url": f"{site.url}/loop"}, context(tmp_path, web_fetch_max_redirects=2)
    )
    assert outcome.is_error and "more than 2 times (web_fetch_max_redirects" in outcome.content
    assert len(site.requests) == 3


async def test_a_public_page_cannot_redirect_into_a_private_address(tmp_path, monkeypatch):
    """The first hop is public (through a proxy that answers for it); its redirect to 127.0.0.1 is refused."""
    proxy = Site()
    try:
        proxy.routes["http://docs.example.org/start"] = (302, {"Location": "http://127.0.0.1:1/admin"}, b"")
        for name in ("HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        outcome = await run_tool("web_fetch", {"url": "http://docs.example.org/start"}, context(tmp_path))
    finally:
        proxy.close()
    assert outcome.is_error and "127.0.0.1, a loopback or private address" in outcome.content


async def test_the_request_goes_through_the_environments_proxy(tmp_path, monkeypatch):
    proxy = Site()  # a forward proxy answers absolute-form requests itself: the name never resolves here
    try:
        proxy.routes["http://docs.corp.invalid/page"] = (200, {"Content-Type": "text/plain"}, b"via proxy")
        for name in ("HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        outcome = await run_tool("web_fetch", {"url": "http://docs.corp.invalid/page"}, context(tmp_path))
    finally:
        proxy.close()
    assert not outcome.is_error, outcome.content
    assert outcome.content.endswith("via proxy")
    assert proxy.requests == [("http://docs.corp.invalid/page", "docs.corp.invalid")]


async def test_a_missing_ca_bundle_is_said_before_anything_is_sent(site, tmp_path):
    outcome = await run_tool(
        "web_fetch", {"url": f"{site.url}/x"}, context(tmp_path, ca_bundle=str(tmp_path / "nope.pem"))
    )
    assert outcome.is_error and "nope.pem does not exist" in outcome.content and site.requests == []


def test_approvals_a_fetch_is_a_network_action_and_private_addresses_always_ask(tmp_path):
    public = {"url": "https://docs.example.com/x"}
    assert needs_approval("web_fetch", public, "auto-read", tmp_path)[0]
    assert needs_approval("web_fetch", public, "auto-edit", tmp_path)[0]
    assert not needs_approval("web_fetch", public, "never-ask", tmp_path)[0]
    for url in (
        "http://localhost:8080/",
        "http://127.0.0.1/",
        "http://10.1.2.3/",
        "http://[::1]/",
        "http://169.254.169.254/",
    ):
        ask, why = needs_approval("web_fetch", {"url": url}, "never-ask", tmp_path)
        assert ask and "this machine or a private network" in why, url


def test_always_offers_the_domain(tmp_path):
    offer = always_offer(
        perms(tmp_path), "web_fetch", {"url": "https://Docs.Example.com/a?b"}, tmp_path, asked_by="mode"
    )
    assert offer.rule == "WebFetch(domain:docs.example.com)"


async def test_through_a_real_squid_a_page_arrives_and_a_refusal_is_squids_page(site, tmp_path, monkeypatch):
    from tests.engine.real_proxies import start_squid

    site.routes["/guide"] = (200, {"Content-Type": "text/html"}, PAGE)
    for rules in ("http_access allow all", "http_access deny all"):
        proxy = start_squid(rules)
        try:
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            outcome = await run_tool("web_fetch", {"url": f"{site.url}/guide"}, context(tmp_path))
        finally:
            proxy.stop()
        if rules.endswith("allow all"):
            assert not outcome.is_error and "# Install the tool" in outcome.content
            assert len(site.vias) == 1 and "squid" in site.vias[0].lower()
        else:  # Squid's own refusal page, as text: the site never saw a second request
            assert "Status: 403" in outcome.content and "(the server answered 403)" in outcome.content
            assert len(site.requests) == 1


@pytest.fixture
def tls_site(site, tmp_path):
    """`site` behind TLS with a certificate for 127.0.0.1 signed by nothing the system trusts."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is missing (install openssl): it makes the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    site.server.socket = tls.wrap_socket(site.server.socket, server_side=True)
    site.url = site.url.replace("http://", "https://")
    return site, cert


async def test_https_trusts_the_configured_ca_bundle_and_goes_through_squid_by_connect(
    tls_site, tmp_path, monkeypatch
):
    from tests.engine.real_proxies import start_squid

    site, cert = tls_site
    site.routes["/guide"] = (200, {"Content-Type": "text/plain"}, b"secret docs")
    untrusted = await run_tool("web_fetch", {"url": f"{site.url}/guide"}, context(tmp_path))
    assert untrusted.is_error and "is the proxy's CA in ca_bundle?" in untrusted.content

    import socket

    with (
        socket.socket() as closed
    ):  # a proxy that is not there: the fetch fails at it, never reaching the site
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed.getsockname()[1]}")
    nowhere = await run_tool(
        "web_fetch", {"url": f"{site.url}/guide"}, context(tmp_path, ca_bundle=str(cert))
    )
    assert nowhere.is_error and site.requests == []

    proxy = start_squid("http_access allow all")
    try:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        outcome = await run_tool(
            "web_fetch", {"url": f"{site.url}/guide"}, context(tmp_path, ca_bundle=str(cert))
        )
    finally:
        proxy.stop()
    assert not outcome.is_error, outcome.content
    assert outcome.content.endswith("secret docs") and site.requests == [("/guide", f"127.0.0.1:{site.port}")]


def test_its_settings_are_validated_with_file_and_line_and_tools_can_leave_it_out(tmp_path):
    from app.config import ConfigError, load_settings
    from app.engine.tool_choice import offered_tools

    path = tmp_path / "config.toml"
    path.write_text(
        'web_fetch_max_bytes = "64KB"\ntools = ["read_file", "grep"]\n[routes.a]\nprovider = "lab"\n'
    )
    settings = load_settings(path, env={})
    assert settings.web_fetch_max_bytes == 64 * 1024
    assert "web_fetch" not in [spec.name for spec in offered_tools(settings, settings.routes["a"])]
    path.write_text('approval = "ask"\nweb_fetch_max_bytes = "100B"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    assert f"{path}:2" in str(caught.value) and "web_fetch_max_bytes" in str(caught.value)
