"""A real nginx (client_max_body_size 128k) as a reverse proxy in front of the lab.

`.ci/run` installs nginx-light when it is missing; without an nginx binary this test is skipped and says why.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest

from app.lab import pages

pytestmark = pytest.mark.nginx


def _nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def _config(tmp: Path, port: int, upstream_port: int) -> str:
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers must read the temp paths under tmp
    temp = tmp / "temp"
    return f"""{user}daemon off;
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
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 128k;
        location / {{
            proxy_pass http://127.0.0.1:{upstream_port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def _wait_listening(port: int, proc: subprocess.Popen, deadline_s: float = 15.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            try:
                proc.wait(timeout=0.05)  # wakes at once if nginx dies; otherwise paces the poll
            except subprocess.TimeoutExpired:
                pass
    raise AssertionError("nginx did not start listening in time")


@pytest.fixture
def nginx_url(lab, tmp_path: Path, free_port: int) -> Iterator[str]:
    binary = _nginx_binary()
    if binary is None:
        reason = "nginx is not installed (run .ci/run, or apt-get install -y nginx-light)"
        print(f"SKIPPED: {reason}")
        pytest.skip(reason)
    (tmp_path / "temp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(_config(tmp_path, free_port, lab.port))
    proc = subprocess.Popen(
        [binary, "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_listening(free_port, proc)
        yield f"http://127.0.0.1:{free_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_real_nginx_413_over_the_cap_and_pass_through_under_it(lab, nginx_url):
    client = anthropic.Anthropic(base_url=nginx_url, api_key="lab", max_retries=0, timeout=20)
    with pytest.raises(anthropic.ContentTooLargeError) as caught:
        client.messages.create(
            model="lab-1", max_tokens=50, messages=[{"role": "user", "content": "n" * (200 * 1024)}]
        )
    exc = caught.value
    assert exc.status_code == 413 and exc.response.headers["server"] == "nginx"
    assert "<center><h1>413 Request Entity Too Large</h1></center>" in str(exc)
    # the lab's nginx profile writes exactly what the real nginx wrote
    assert exc.response.content == pages.nginx_413().body
    assert lab.requests() == []  # nginx answered; the lab never saw the request

    answer = client.messages.create(
        model="lab-1",
        max_tokens=200,
        messages=[{"role": "user", "content": "small enough " + "s" * (60 * 1024)}],
    )
    assert answer.content[0].text.startswith("Lab model · turn 1 · received 60.")
    with client.messages.stream(
        model="lab-1", max_tokens=200, messages=[{"role": "user", "content": "streamed through nginx"}]
    ) as stream:
        assert "streamed through nginx" in "".join(stream.text_stream)
    assert [(r["verdict"], r["stream"]) for r in lab.requests()] == [("passed", False), ("passed", True)]
