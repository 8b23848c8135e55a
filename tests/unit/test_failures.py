"""The failure classifier: every vector, its invariants, robustness, and real SDK exceptions.

The SDK tests make anthropic, openai and boto3 fail for real against a tiny HTTP server on
127.0.0.1 (port 0), then classify both the raw exception and the ProviderError an adapter
would wrap it in.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.failures import (
    KINDS,
    PAYLOAD_KINDS,
    TRANSIENT_KINDS,
    Failure,
    classify,
    classify_fields,
    describe_action,
    explain,
    give_up_advice,
)
from app.providers.base import ProviderError
from tests.fixtures.failure_vectors import TRANSPORTS, all_vectors

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFERENCE_VECTORS = FIXTURES / "error-vectors.jsonl"
EXTRA_VECTORS = FIXTURES / "failures" / "extra-vectors.jsonl"
PUBLIC_VECTORS = (
    FIXTURES / "failures" / "public-vectors.jsonl"
)  # mined from public tables and docs, sources cited
BIG_BODY_CHARS = 800_000  # comfortably above the 500,000-byte drop threshold
SMALL_BODY_CHARS = 2_000
SERVER_READS_BEFORE_RESET = 64 * 1024
REPOSITORY = Path(__file__).resolve().parents[2]


def _shared_reference(name: str) -> Path | None:
    """The team's shared reference folder: `BULKHEAD_SHARED`, else a `shared/` beside the repository or above it.

    Worktrees live at different depths (`/work/main`, `/work/wt/NAME`), so the folder is found by walking up from
    the repository instead of by an absolute path.
    """
    override = os.environ.get("BULKHEAD_SHARED")
    candidates = [Path(override)] if override else [parent / "shared" for parent in REPOSITORY.parents]
    for folder in candidates:
        if (folder / "reference" / name).is_file():
            return folder / "reference" / name
    return None


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


ALL_VECTORS = all_vectors()


def _fields(vector: dict) -> Failure:
    return classify_fields(
        vector["status"],
        vector["message"],
        vector["body"],
        vector["headers"],
        vector["request_bytes"],
        transport=vector.get("transport"),
        error_type=vector.get("error_type"),
        provider=vector.get("provider"),
        request_header_bytes=vector.get("request_header_bytes"),
    )


# -- vectors -----------------------------------------------------------------------------------------
def test_fixture_is_a_faithful_copy_of_the_reference_vectors():
    reference = _shared_reference("error-vectors.jsonl")
    if reference is None:
        pytest.skip("no shared/reference folder above the repository (set BULKHEAD_SHARED to point at it)")
    assert REFERENCE_VECTORS.read_text(encoding="utf-8") == reference.read_text(encoding="utf-8")


def test_there_are_enough_extra_vectors_and_ids_are_unique():
    extra = _load(EXTRA_VECTORS)
    assert len(extra) >= 25
    ids = [vector["id"] for vector in ALL_VECTORS]
    assert len(ids) == len(set(ids))
    assert {vector["expected"] for vector in ALL_VECTORS} == set(KINDS)


def test_every_vector_says_how_the_answer_arrived():
    for vector in ALL_VECTORS:
        assert "transport" in vector and vector["transport"] in TRANSPORTS, vector["id"]


@pytest.mark.parametrize("vector", ALL_VECTORS, ids=[v["id"] for v in ALL_VECTORS])
def test_vector_classifies_as_expected(vector):
    failure = _fields(vector)
    assert failure.kind == vector["expected"], (failure.reason, failure.evidence)
    if "expected_gateway" in vector:
        assert failure.gateway == vector["expected_gateway"]
    if "expected_retry_after" in vector:
        assert failure.retry_after == pytest.approx(vector["expected_retry_after"])
    if "expected_stated_window" in vector:
        assert failure.stated_window_tokens == vector["expected_stated_window"]
    _assert_consistent(failure, vector["request_bytes"])


@pytest.mark.parametrize("vector", ALL_VECTORS, ids=[v["id"] for v in ALL_VECTORS])
def test_vector_wrapped_in_a_provider_error_classifies_the_same(vector):
    error = ProviderError(
        vector["message"] or "",
        provider=vector.get("provider", "any"),
        status=vector["status"],
        headers=vector["headers"],
        body=vector["body"],
        request_bytes=vector["request_bytes"],
        transport=vector.get("transport"),
        error_type=vector.get("error_type"),
        request_header_bytes=vector.get("request_header_bytes"),
    )
    assert classify(error) == _fields(vector)


def _assert_consistent(failure: Failure, request_bytes: int | None) -> None:
    assert failure.kind in KINDS
    assert failure.payload_related == (failure.kind in PAYLOAD_KINDS)
    # recoverable: payload-related, a context overflow, or a gateway's refusal that allows one smaller try
    assert failure.recoverable == (
        failure.payload_related or failure.kind == "context_overflow" or failure.ladder_limit == 1
    )
    if failure.kind in TRANSIENT_KINDS:
        assert failure.transient
    if failure.recoverable:
        assert not failure.transient  # transient failures are retried, never compacted
    assert failure.rejected_bytes == request_bytes
    assert failure.reason and "\n" not in failure.reason
    assert failure.evidence and all(isinstance(item, str) and item for item in failure.evidence)


# -- specific rules and their evidence ---------------------------------------------------------------
def test_cloudflare_block_page_evidence_names_status_header_and_shape():
    failure = classify_fields(
        403,
        "Error code: 403",
        "<!DOCTYPE html><html><title>Attention Required! | Cloudflare</title></html>",
        {"CF-Ray": "8f3a1c2b9d7e4a61-SJC"},
        422_200,
    )
    assert failure.kind == "waf_block" and failure.gateway == "cloudflare"
    assert "status 403" in failure.evidence
    assert "header cf-ray: 8f3a1c2b9d7e4a61-SJC" in failure.evidence
    assert "HTML body where the API speaks JSON" in failure.evidence
    assert failure.reason == "Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header"


def test_large_drop_evidence_compares_the_request_with_the_threshold():
    failure = classify_fields(None, "Connection error.", request_bytes=839_782)
    assert failure.kind == "connection_drop" and failure.recoverable and failure.payload_related
    assert "request 820.1 KB ≥ 488.3 KB drop threshold" in failure.evidence


def test_small_drop_is_transient_other_and_says_so():
    failure = classify_fields(None, "Connection error.", request_bytes=4_183)
    assert failure.kind == "other" and failure.transient and not failure.recoverable
    assert "treated as a transient network failure and retried" in failure.reason
    assert describe_action(failure).startswith("retry with backoff")


def test_drop_threshold_is_a_parameter():
    assert (
        classify_fields(None, "Connection error.", request_bytes=200_000, drop_threshold=100_000).kind
        == "connection_drop"
    )
    assert classify_fields(None, "Connection error.", request_bytes=200_000).kind == "other"


def test_overflow_token_counts_become_evidence():
    failure = classify_fields(400, "prompt is too long: 212731 tokens > 200000 maximum")
    assert failure.kind == "context_overflow" and failure.recoverable and not failure.payload_related
    assert "tokens: 212,731 > 200,000 limit (+6%)" in failure.evidence
    assert 'phrase "prompt is too long"' in failure.evidence


@pytest.mark.parametrize("text", ["req_4130 failed", "used 24135 tokens", "id 4413", "v1.413.2", "4130"])
def test_bare_413_inside_other_digits_matches_nothing(text):
    failure = classify_fields(None, text)
    assert failure.kind == "other" and failure.status is None


def test_status_is_read_from_an_sdk_message_when_missing():
    failure = classify_fields(None, "Error code: 413 - {'error': {'message': 'too big'}}")
    assert failure.kind == "payload_too_large" and failure.status == 413
    assert "status 413 (from the message)" in failure.evidence


def test_html_200_needs_the_transport_flag():
    page = "<html><head><title>Sign in</title></head><body>captive</body></html>"
    assert classify_fields(200, page, page).kind == "other"
    flagged = classify_fields(200, page, page, request_bytes=1000, transport="html-200")
    assert flagged.kind == "waf_block" and flagged.payload_related and flagged.recoverable


def test_in_stream_overloaded_error_with_status_200():
    failure = classify_fields(
        200, "Overloaded", {"type": "error", "error": {"type": "overloaded_error"}}, transport="stream-error"
    )
    assert failure.kind == "overloaded" and failure.transient and not failure.recoverable


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "20"}, 20.0),
        ({"Retry-After-Ms": "1500"}, 1.5),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_retry_after_from_headers(headers, expected):
    failure = classify_fields(429, "Too Many Requests", headers=headers)
    assert failure.kind == "rate_limit" and failure.retry_after == expected


def test_retry_after_from_text_and_only_for_transient_failures():
    assert classify_fields(
        None, "Rate limit reached. Please try again in 5.264s."
    ).retry_after == pytest.approx(5.264)
    assert classify_fields(413, "too large", headers={"retry-after": "9"}).retry_after is None


def test_timeouts_are_never_compacted_even_when_big():
    failure = classify_fields(None, "Request timed out.", request_bytes=33_554_492, transport="timeout")
    assert failure.kind == "timeout" and failure.transient and not failure.recoverable


def test_failure_is_frozen_and_serialisable():
    failure = classify_fields(413, "Payload Too Large", request_bytes=1000)
    with pytest.raises(FrozenInstanceError):
        failure.kind = "other"  # type: ignore[misc]
    data = failure.to_dict()
    assert json.loads(json.dumps(data))["evidence"] == list(failure.evidence)


# -- describe_action and explain ---------------------------------------------------------------------
def test_explain_is_one_copyable_sentence():
    failure = classify_fields(
        403, "", "<html><title>Attention Required! | Cloudflare</title></html>", {"cf-ray": "8f3a"}, 422_200
    )
    assert explain(failure, learned_cap=316_650, level=2) == (
        "Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header, request 412.3 KB; "
        "bulkhead learned a 309.2 KB cap and recovered at ladder level 2"
    )
    assert "\n" not in explain(failure)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (
            {"status": 413, "message": "Payload Too Large", "request_bytes": 422_200},
            "learn a cap of ¾ × 412.3 KB = 309.2 KB and walk the recovery ladder",
        ),
        ({"status": 413, "message": "Payload Too Large"}, "assume a 4.0 MB cap"),
        (
            {"status": 429, "message": "slow", "headers": {"retry-after": "20"}},
            "retry with backoff (honouring retry-after 20s)",
        ),
        ({"status": 401, "message": "bad key"}, "fail: check your API key (`bulkhead auth set"),
        ({"status": 400, "message": "prompt is too long"}, "walk the recovery ladder"),
        ({"status": 404, "message": "no such model"}, "fail:"),
    ],
)
def test_describe_action(kwargs, words):
    assert words in describe_action(classify_fields(**kwargs))


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"status": 429, "message": "slow down"}, "wait a minute, then /retry"),
        ({"status": 529, "message": "Overloaded"}, "the provider is overloaded"),
        ({"status": 502, "message": "Bad Gateway"}, "check its status page"),
        ({"status": 504, "message": "Gateway Time-out"}, "raise request_timeout"),
    ],
)
def test_give_up_advice_fits_the_kind(kwargs, words):
    failure = classify_fields(**kwargs)
    assert failure.transient
    assert words in give_up_advice(failure)


def test_give_up_advice_for_a_network_failure_names_the_url():
    failure = classify_fields(message="Connection error.", request_bytes=1_000)
    assert give_up_advice(failure, "https://gw.example.com/v1/messages") == (
        "check that https://gw.example.com/v1/messages is reachable (network, VPN, HTTPS_PROXY), then /retry; "
        "if only large requests are reset, `bulkhead probe` finds the gateway's cap (or lower drop_payload_min_bytes)"
    )


@pytest.mark.parametrize(
    ("status", "body", "reason"),
    [
        (
            404,
            '{"error": {"type": "not_found_error", "message": "model: claude-9"}}',
            "404 from the provider: “model: claude-9” — check the route's `model`",
        ),
        (
            400,
            '{"message": "Malformed input request: #: extraneous key [foo] is not permitted"}',
            "400 from the provider: “Malformed input request: #: extraneous key [foo] is not permitted”",
        ),
        (404, '{"detail": "Not Found"}', "404 from the provider: “Not Found” — check the route's `base_url`"),
        (400, '{"error": {"message": "   "}}', "400 with no sign of size, overflow, WAF or overload"),
        (400, '["not", "an", "object"]', "400 with no sign of size, overflow, WAF or overload"),
        (
            404,
            "<html><body>404 Not Found</body></html>",
            "404 with no sign of size, overflow, WAF or overload",
        ),
    ],
)
def test_an_invalid_request_quotes_the_provider(status, body, reason):
    failure = classify_fields(status, "", body)
    assert failure.kind == "other" and reason in failure.reason
    assert describe_action(failure) == "fail: retrying or compacting would not help"


def test_explain_for_a_failure_that_stops():
    sentence = explain(classify_fields(401, "invalid x-api-key"))
    assert sentence.startswith("Authentication or permission refused: 401 Unauthorized; bulkhead stops here:")


# -- robustness ------------------------------------------------------------------------------------------
junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
    st.lists(st.one_of(st.text(), st.integers(), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=8), st.one_of(st.text(), st.none(), st.integers()), max_size=4),
)
FRAGMENTS = [
    "413",
    "403",
    "<html>",
    "cf-ray",
    "prompt is too long",
    "tokens",
    "exceeds",
    "Connection error.",
    "must be reduced",
    "overloaded_error",
    "Reference #",
    "Error code: 429 -",
    "{",
    "}",
    '"type":',
    "&#35;",
    "An error occurred (",
    ")",
    "timed out",
    "mod_security",
    "\x00",
    "\ud7ff",
    "ü",
]
texts = st.one_of(st.text(), st.lists(st.sampled_from(FRAGMENTS), max_size=12).map(" ".join), junk)
header_maps = st.one_of(
    junk,
    st.dictionaries(
        st.one_of(st.text(), st.binary(), st.integers()),
        st.one_of(st.text(), st.binary(), st.none(), st.integers()),
        max_size=6,
    ),
    st.lists(st.tuples(st.text(max_size=12), st.text(max_size=12)), max_size=6),
    st.lists(st.one_of(st.text(), st.tuples(st.text()), st.integers()), max_size=4),
)
statuses = st.one_of(
    junk, st.sampled_from([200, 400, 401, 403, 406, 407, 408, 413, 429, 431, 500, 502, 503, 504, 524, 529])
)
sizes = st.one_of(junk, st.integers(min_value=0, max_value=10**30))
transports = st.one_of(junk, st.sampled_from([None, "connection", "timeout", "html-200", "stream-error"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    status=statuses,
    message=texts,
    body=texts,
    headers=header_maps,
    request_bytes=sizes,
    transport=transports,
    error_type=texts,
    drop_threshold=sizes,
)
def test_classify_fields_never_raises_and_returns_a_known_kind(
    status, message, body, headers, request_bytes, transport, error_type, drop_threshold
):
    failure = classify_fields(
        status,
        message,
        body,
        headers,
        request_bytes,
        transport=transport,
        error_type=error_type,
        drop_threshold=drop_threshold,
    )
    assert failure.kind in KINDS
    assert isinstance(failure.reason, str) and failure.reason
    assert "could not be read" not in failure.reason  # junk is normalised, not an internal error
    assert isinstance(failure.evidence, tuple)
    # recoverable: payload-related, a context overflow, or a gateway's refusal that allows one smaller try
    assert failure.recoverable == (
        failure.payload_related or failure.kind == "context_overflow" or failure.ladder_limit == 1
    )


@settings(max_examples=150, deadline=None)
@given(
    status=statuses, message=texts, body=texts, headers=header_maps, request_bytes=sizes, transport=transports
)
def test_classify_never_raises_on_a_provider_error_with_junk_attributes(
    status, message, body, headers, request_bytes, transport
):
    error = ProviderError("boom", provider="x")
    error.status, error.message, error.body, error.headers = status, message, body, headers
    error.request_bytes, error.transport = request_bytes, transport
    assert classify(error).kind in KINDS


def test_huge_body_is_classified():
    page = (
        "<html><head><title>413 Request Entity Too Large</title></head><body>"
        + "x" * 10_000_000
        + "<center>nginx</center></body></html>"
    )
    failure = classify_fields(413, "", page, {"server": "nginx"}, 12_000_000)
    assert failure.kind == "payload_too_large" and failure.gateway == "nginx"


class _Hostile(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")


class _NotAString:
    def __str__(self) -> str:
        raise ValueError("nope")


def test_unreadable_input_is_other_with_the_problem_named():
    wrapped = ProviderError("x", provider="p", original=_Hostile())
    assert classify(wrapped).kind in KINDS
    assert classify_fields(_NotAString(), _NotAString(), _NotAString(), {_NotAString(): 1}).kind in KINDS
    assert classify(None).kind == "other"  # type: ignore[arg-type]


def test_errors_not_from_a_provider_call_are_never_recovered():
    failure = classify(ValueError("prompt is too long"))
    assert failure.kind == "other" and not failure.recoverable
    assert any("not a provider error" in item for item in failure.evidence)


def test_importing_the_classifier_imports_no_sdk():
    code = (
        "import sys, app.engine.failures; "
        "bad = [m for m in ('httpx', 'httpx2', 'anthropic', 'openai', 'botocore', 'boto3') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# -- real SDK exceptions against a local server ------------------------------------------------------
@dataclass
class Reaction:
    """What the local server does with each request: answer, or reset after reading some bytes."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    reset_after: int | None = None  # read this many body bytes, then RST the connection


class _Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        reader = sock.makefile("rb")
        headers: dict[str, str] = {}
        reader.readline(65_537)  # request line
        while (line := reader.readline(65_537)) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        reaction: Reaction = self.server.reaction  # type: ignore[attr-defined]
        if reaction.reset_after is not None:
            reader.read(min(length, reaction.reset_after))
            reader.close()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
            sock.close()
            return
        self.server.received.append(len(reader.read(length)))  # type: ignore[attr-defined]
        reader.close()
        body = reaction.body.encode("utf-8")
        head = [
            f"HTTP/1.1 {reaction.status} Canned",
            *(f"{k}: {v}" for k, v in reaction.headers.items()),
            f"content-length: {len(body)}",
            "connection: close",
            "",
            "",
        ]
        sock.sendall("\r\n".join(head).encode("latin-1") + body)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def gateway():
    """A local server; set `.reaction` before making the SDK call. Yields (server, base URL)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.reaction = Reaction()  # type: ignore[attr-defined]
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 "
    "Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)
CLOUDFLARE_403 = (
    "<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head><body>"
    "<h1>Sorry, you have been blocked</h1><p>Cloudflare Ray ID: <strong>8f3a1c2b9d7e4a61</strong>"
    "</p></body></html>"
)
ALB_403 = (
    "<!DOCTYPE html>\r\n<html>\r\n<head><title>403 Forbidden</title></head>\r\n<body>\r\n<center><h1>403 "
    "Forbidden</h1></center>\r\n</body>\r\n</html>\r\n"
)


def _anthropic(base_url: str):
    import anthropic

    return anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0, timeout=30)


def _openai(base_url: str):
    import openai

    return openai.OpenAI(api_key="sk-test", base_url=f"{base_url}/v1", max_retries=0, timeout=30)


def _ask_anthropic(base_url: str, chars: int) -> BaseException:
    with pytest.raises(Exception) as caught:
        _anthropic(base_url).messages.create(
            model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "x" * chars}]
        )
    return caught.value


def _ask_openai(base_url: str, chars: int) -> BaseException:
    with pytest.raises(Exception) as caught:
        _openai(base_url).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "x" * chars}]
        )
    return caught.value


def _wrap_httpx_sdk_error(exc: BaseException, provider: str) -> ProviderError:
    """What the anthropic/openai adapters do: status, headers, body text, exact request bytes."""
    response = getattr(exc, "response", None)
    type_names = {cls.__name__ for cls in type(exc).__mro__}
    transport = (
        "timeout"
        if "APITimeoutError" in type_names
        else "connection"
        if "APIConnectionError" in type_names
        else None
    )
    return ProviderError(
        str(exc),
        provider=provider,
        original=exc,
        status=getattr(exc, "status_code", None),
        headers=dict(response.headers) if response is not None else None,
        body=response.text if response is not None else None,
        request_bytes=len(exc.request.content),
        error_type=type(exc).__name__,
        transport=transport,
    )


def test_anthropic_413_html_from_nginx(gateway):
    server, url = gateway
    server.reaction = Reaction(413, {"content-type": "text/html", "server": "nginx/1.25.3"}, NGINX_413)
    exc = _ask_anthropic(url, SMALL_BODY_CHARS)
    assert type(exc).__name__ in ("ContentTooLargeError", "RequestTooLargeError")
    sent = len(exc.request.content)
    assert server.received == [sent]
    for failure in (classify(exc), classify(_wrap_httpx_sdk_error(exc, "anthropic"))):
        assert failure.kind == "payload_too_large" and failure.recoverable
        assert failure.rejected_bytes == sent and failure.gateway == "nginx" and failure.status == 413
        assert 'phrase "request entity too large"' in failure.evidence


def test_openai_403_cloudflare_html_with_cf_ray(gateway):
    server, url = gateway
    server.reaction = Reaction(
        403,
        {
            "content-type": "text/html; charset=UTF-8",
            "server": "cloudflare",
            "cf-ray": "8f3a1c2b9d7e4a61-SJC",
        },
        CLOUDFLARE_403,
    )
    exc = _ask_openai(url, SMALL_BODY_CHARS)
    assert type(exc).__name__ == "PermissionDeniedError"
    assert str(exc) == "Error code: 403"  # the HTML is only in exc.body / exc.response
    for failure in (classify(exc), classify(_wrap_httpx_sdk_error(exc, "openai"))):
        assert failure.kind == "waf_block" and failure.payload_related and failure.gateway == "cloudflare"
        assert "header cf-ray: 8f3a1c2b9d7e4a61-SJC" in failure.evidence
        assert failure.rejected_bytes == len(exc.request.content)


def test_openai_200_html_is_flagged_by_the_adapter(gateway):
    server, url = gateway
    page = "<html><head><title>Network Login</title></head><body>Please sign in</body></html>"
    server.reaction = Reaction(200, {"content-type": "text/html"}, page)
    result = _openai(url).chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}]
    )
    assert isinstance(result, str)  # no exception: the adapter must notice
    error = ProviderError(
        "HTML page instead of JSON",
        provider="openai",
        status=200,
        headers={"content-type": "text/html"},
        body=result,
        request_bytes=server.received[0],
        transport="html-200",
    )
    assert classify(error).kind == "waf_block"
    assert classify_fields(200, result, result).kind == "other"


@pytest.mark.parametrize(
    ("chars", "expected"), [(BIG_BODY_CHARS, "connection_drop"), (SMALL_BODY_CHARS, "other")]
)
def test_anthropic_connection_reset(gateway, chars, expected):
    server, url = gateway
    server.reaction = Reaction(reset_after=SERVER_READS_BEFORE_RESET)
    exc = _ask_anthropic(url, chars)
    assert type(exc).__name__ == "APIConnectionError"
    for failure in (classify(exc), classify(_wrap_httpx_sdk_error(exc, "anthropic"))):
        assert failure.kind == expected
        assert failure.rejected_bytes == len(exc.request.content)
        assert failure.recoverable == (expected == "connection_drop")
        assert failure.transient == (expected == "other")


def test_anthropic_connection_refused_is_never_payload_related():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exc = _ask_anthropic(f"http://127.0.0.1:{port}", BIG_BODY_CHARS)
    assert type(exc).__name__ == "APIConnectionError"
    for failure in (classify(exc), classify(_wrap_httpx_sdk_error(exc, "anthropic"))):
        # issue 38 item 3: said at once (not retried), and never a gateway problem
        assert failure.kind == "other" and not failure.transient and not failure.payload_related
        assert failure.rule_id == "net.refused" and "nothing listens at" in failure.reason


def _bedrock(base_url: str, monkeypatch: pytest.MonkeyPatch, sizes: list[int]):
    import boto3
    from botocore.config import Config

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTONLY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base_url,
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=30),
    )

    def record_size(request, **_):
        sizes.append(len(request.body or b""))  # returns None: the request goes on

    client.meta.events.register("before-send.bedrock-runtime.*", record_size)
    return client


def _converse(client, chars: int) -> BaseException:
    with pytest.raises(Exception) as caught:
        client.converse(
            modelId="anthropic.claude-test-v1:0",
            messages=[{"role": "user", "content": [{"text": "x" * chars}]}],
        )
    return caught.value


def test_botocore_client_error_from_an_html_403(gateway, monkeypatch):
    server, url = gateway
    server.reaction = Reaction(403, {"content-type": "text/html", "server": "awselb/2.0"}, ALB_403)
    sizes: list[int] = []
    exc = _converse(_bedrock(url, monkeypatch, sizes), SMALL_BODY_CHARS)
    assert type(exc).__name__ == "ClientError" and exc.response["Error"]["Code"] == "403"
    raw = classify(exc)
    assert raw.kind == "waf_block" and raw.status == 403 and raw.gateway == "awselb"
    wrapped = ProviderError(
        str(exc),
        provider="bedrock",
        original=exc,
        status=exc.response["ResponseMetadata"]["HTTPStatusCode"],
        headers=exc.response["ResponseMetadata"].get("HTTPHeaders"),
        body=exc.response["Error"].get("Message"),
        request_bytes=sizes[-1],
        error_type=exc.response["Error"]["Code"],
    )
    failure = classify(wrapped)
    assert failure.kind == "waf_block" and failure.rejected_bytes == sizes[-1] == server.received[0]
    assert "HTML body where the API speaks JSON" in failure.evidence


def test_botocore_connection_closed_on_a_big_body(gateway, monkeypatch):
    server, url = gateway
    server.reaction = Reaction(reset_after=SERVER_READS_BEFORE_RESET)
    sizes: list[int] = []
    exc = _converse(_bedrock(url, monkeypatch, sizes), BIG_BODY_CHARS)
    assert type(exc).__name__ == "ConnectionClosedError"
    failure = classify(exc)
    assert failure.kind == "connection_drop" and failure.rejected_bytes == sizes[-1]
