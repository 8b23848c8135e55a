"""The server itself: control plane, request log, HTTP robustness (sizes, concurrency, disconnects, chunking)."""

from __future__ import annotations

import http.client
import json
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.lab.embedded import LabConfig, LabHandle, start_embedded_lab


def post(lab: LabHandle, path: str, body: bytes, headers: dict | None = None, *, chunked: bool = False):
    connection = http.client.HTTPConnection(lab.host, lab.port, timeout=30)
    try:
        connection.request(
            "POST",
            path,
            body=iter([body]) if chunked else body,
            headers={"content-type": "application/json", **(headers or {})},
            encode_chunked=chunked,
        )
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def anthropic_body(text: str, **extra) -> bytes:
    return json.dumps(
        {"model": "lab-1", "max_tokens": 200, "messages": [{"role": "user", "content": text}], **extra}
    ).encode()


def test_health_config_and_requests_endpoints(lab, control):
    assert control(lab.url + "/_lab/health")[0] == 200
    status, config = control(
        lab.url + "/_lab/config",
        "POST",
        {"gateway": "nginx", "cap": "1KB", "window": 5000, "faults": "500@9", "seed": 4},
    )
    assert status == 200
    assert (config["gateway"], config["cap"], config["window"], config["faults"], config["seed"]) == (
        "nginx",
        1024,
        5000,
        "500@9",
        4,
    )
    assert lab.config.gateway == "nginx"  # the handle sees the same lab
    status, error = control(lab.url + "/_lab/config", "POST", {"gateway": "squid"})
    assert status == 400 and "unknown gateway profile 'squid'" in error["error"]
    assert control(lab.url + "/_lab/config", "POST", {"faults": "boom@1"})[0] == 400
    assert control(lab.url + "/_lab/config", "POST", b"[1, 2]")[0] == 400
    post(lab, "/v1/messages", anthropic_body("hello"))
    post(lab, "/v1/messages", anthropic_body("x" * 2000))
    status, records = control(lab.url + "/_lab/requests")
    assert status == 200 and len(records) == 2  # control-plane calls are not logged
    first, second = records
    assert set(first) >= {"time", "method", "path", "bytes", "wire", "verdict", "status"}
    assert (first["method"], first["path"], first["wire"], first["verdict"], first["status"]) == (
        "POST",
        "/v1/messages",
        "anthropic",
        "passed",
        200,
    )
    assert first["bytes"] == len(anthropic_body("hello")) and first["time"].endswith("+00:00")
    assert (second["verdict"], second["status"]) == ("blocked:nginx-413", 413)
    assert control(lab.url + "/_lab/requests", "DELETE") == (200, {"cleared": 2})
    assert control(lab.url + "/_lab/requests")[1] == []
    assert control(lab.url + "/_lab/nope")[0] == 404


def test_unknown_path_gets_a_404_json(lab):
    status, headers, body = post(lab, "/v2/whatever", b"{}")
    assert status == 404 and headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["type"] == "not_found_error"
    assert lab.requests()[-1]["verdict"] == "not-found"


def test_malformed_json_in_each_providers_shape(lab):
    status, headers, body = post(lab, "/v1/messages", b"{broken")
    assert (
        status == 400
        and json.loads(body)["error"]["type"] == "invalid_request_error"
        and headers["request-id"]
    )
    status, _, body = post(lab, "/v1/chat/completions", b"\xff\xfe")
    assert status == 400 and json.loads(body)["error"]["type"] == "invalid_request_error"
    status, headers, body = post(lab, "/model/m/converse-stream", b"")
    assert status == 400 and headers["x-amzn-ErrorType"] == "ValidationException"
    assert [r["verdict"] for r in lab.requests()] == ["bad-request"] * 3


def test_a_64_mib_body_is_read_and_answered(lab):
    lab.configure(window=100_000_000)
    body = anthropic_body("b" * (64 * 1024 * 1024))
    status, _, answer = post(lab, "/v1/messages", body)
    assert status == 200
    assert "received 64.0 MB (≈16,777,216 tokens)" in json.loads(answer)["content"][0]["text"]
    assert lab.requests()[-1]["bytes"] == len(body)


def test_concurrent_connections(lab):
    def ask(i: int) -> tuple[int, str]:
        status, _, body = post(lab, "/v1/messages", anthropic_body(f"client {i}"))
        return status, json.loads(body)["content"][0]["text"]

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(ask, range(32)))
    assert all(status == 200 for status, _ in results)
    assert all(f"You said: “client {i}”" in text for i, (_, text) in enumerate(results))
    assert len(lab.requests()) == 32


def test_keep_alive_serves_several_requests_on_one_connection(lab):
    connection = http.client.HTTPConnection(lab.host, lab.port, timeout=10)
    try:
        for i in range(3):
            connection.request("POST", "/v1/messages", body=anthropic_body(f"turn {i}"))
            response = connection.getresponse()
            assert response.status == 200 and response.getheader("connection") == "keep-alive"
            response.read()
        sock_before = connection.sock
        connection.request("POST", "/v1/messages", body=anthropic_body("stream", stream=True))
        response = connection.getresponse()
        assert response.getheader("transfer-encoding") == "chunked"
        assert b"event: message_stop" in response.read()
        assert connection.sock is sock_before
    finally:
        connection.close()


def test_chunked_request_bodies_and_the_cap(lab):
    status, _, body = post(lab, "/v1/messages", anthropic_body("chunked hello"), chunked=True)
    assert status == 200 and "chunked hello" in json.loads(body)["content"][0]["text"]
    lab.configure(gateway="cloudflare", cap=1000)
    status, headers, _ = post(lab, "/v1/messages", anthropic_body("c" * 3000), chunked=True)
    assert status == 403 and headers["cf-ray"]
    assert lab.requests()[-1]["bytes"] > 1000


def test_expect_100_continue(lab):
    with socket.create_connection((lab.host, lab.port), timeout=10) as sock:
        body = anthropic_body("after continue")
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: lab\r\nExpect: 100-continue\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 OK") and b"after continue" in data


@pytest.mark.parametrize("stage", ["mid-head", "mid-body", "mid-stream", "garbage"])
def test_clients_that_vanish_do_not_hurt_the_server(lab, stage, caplog):
    lab.configure(faults="slow@1", slow_pause=0.01)
    with socket.create_connection((lab.host, lab.port), timeout=10) as sock:
        if stage == "mid-head":
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Le")
        elif stage == "mid-body":
            sock.sendall(b'POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{"model"')
        elif stage == "garbage":
            sock.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 400")
        else:
            body = anthropic_body("!big 20KB", stream=True)
            sock.sendall(
                b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: "
                + str(len(body)).encode()
                + b"\r\n\r\n"
                + body
            )
            assert sock.recv(200).startswith(b"HTTP/1.1 200")
    status, _, _ = post(lab, "/v1/messages", anthropic_body("still there?"))
    assert status == 200
    assert not [r for r in caplog.records if r.name.startswith("app.lab") and r.levelname == "ERROR"]


def test_embedded_lab_lifecycle():
    with start_embedded_lab(gateway="aws-waf", cap="4KB", window=9000, faults="429:0.1", seed=2) as lab:
        assert lab.url == f"http://127.0.0.1:{lab.port}" and lab.port > 0
        assert lab.config == LabConfig(gateway="aws-waf", cap=4096, window=9000, faults="429:0.1", seed=2)
        with pytest.raises(ValueError, match="cap"):
            lab.configure(cap="huge")
        assert lab.configure(gateway="none").gateway == "none"
        assert lab.requests() == []
    lab.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection((lab.host, lab.port), timeout=2).close()
    with pytest.raises(RuntimeError, match="stopped"):
        lab.requests()


def test_a_waf_that_reads_the_body_answers_expect_100_continue(lab):
    lab.configure(gateway="aws-waf", cap=100)
    body = anthropic_body("w" * 500)
    with socket.create_connection((lab.host, lab.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: lab\r\nExpect: 100-continue\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
        )
        assert sock.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 403 Forbidden") and b"server: awselb/2.0" in data
