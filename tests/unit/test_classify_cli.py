"""`bulkhead classify`: one error in words or JSON, and `--batch` over JSONL files."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REFERENCE_VECTORS = FIXTURES / "error-vectors.jsonl"
EXTRA_VECTORS = FIXTURES / "failures" / "extra-vectors.jsonl"
CLOUDFLARE_PAGE = ("<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>"
                   "<body><h1>Sorry, you have been blocked</h1></body></html>")
RESULT_KEYS = {"id", "kind", "payload_related", "recoverable", "reason", "evidence", "rule_id"}


def _vectors(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


@pytest.fixture
def block_page(tmp_path: Path) -> Path:
    path = tmp_path / "block.html"
    path.write_text(CLOUDFLARE_PAGE, encoding="utf-8")
    return path


def test_single_error_in_words(block_page, capsys):
    code = main(["classify", "--status", "403", "--body-file", str(block_page),
                 "--header", "cf-ray: 8f3a1c2b9d7e4a61-SJC", "--header", "Server: cloudflare", "--bytes", "422200"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "kind      waf_block  (payload-related, recoverable)" in out
    assert "reason    Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header" in out
    assert "gateway   Cloudflare" in out
    assert "evidence  - status 403" in out
    assert "- header cf-ray: 8f3a1c2b9d7e4a61-SJC" in out
    assert "action    learn a cap of ¾ × 412.3 KB = 309.2 KB and walk the recovery ladder" in out


def test_single_error_as_json(capsys):
    code = main(["classify", "--status", "429", "--message", "Too Many Requests", "--header", "retry-after: 20",
                 "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    result = json.loads(out)
    assert {"kind", "payload_related", "recoverable", "transient", "reason", "evidence", "gateway",
            "action"} <= result.keys()
    assert result["kind"] == "rate_limit" and result["transient"] is True and result["recoverable"] is False
    assert result["action"].startswith("retry with backoff (honouring retry-after 20s)")
    assert "status 429" in result["evidence"]


def test_message_only_connection_drop(capsys):
    assert main(["classify", "--message", "Connection error.", "--bytes", "819260", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "connection_drop" and result["payload_related"] is True
    assert "request 800.1 KB ≥ 488.3 KB drop threshold" in result["evidence"]


def test_body_from_stdin(monkeypatch, capsys):
    _stdin(monkeypatch, b"<html><head><title>413 Request Entity Too Large</title></head></html>")
    assert main(["classify", "--status", "413", "--body-file", "-", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "payload_too_large"


def test_drop_threshold_comes_from_the_settings(monkeypatch, capsys):
    monkeypatch.setenv("BULKHEAD_DROP_PAYLOAD_MIN_BYTES", "100000")
    assert main(["classify", "--message", "Connection error.", "--bytes", "200000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "connection_drop"


@pytest.mark.parametrize("vectors", [REFERENCE_VECTORS, EXTRA_VECTORS], ids=["reference", "extra"])
def test_batch_gives_one_line_per_case_with_the_expected_kind(vectors, capsys):
    code = main(["classify", "--batch", str(vectors)])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    results = _json_lines(out)
    cases = _vectors(vectors)
    assert len(results) == len(cases)
    for case, result in zip(cases, results, strict=True):
        assert set(result) == RESULT_KEYS
        assert result["id"] == case["id"]
        assert result["kind"] == case["expected"], case["id"]
        assert isinstance(result["evidence"], list) and result["evidence"]


def test_batch_malformed_lines_become_error_lines(tmp_path, capsys):
    batch = tmp_path / "cases.jsonl"
    batch.write_text("\n".join([
        json.dumps({"id": "ok-413", "status": 413, "message": "Payload Too Large", "request_bytes": 9000}),
        "{not json",
        "",
        json.dumps(["a", "list"]),
        json.dumps({"status": "junk", "headers": "not a dict", "request_bytes": -5, "body": {"error": "x"}}),
        json.dumps({"id": "html-200", "status": 200, "message": "<html></html>", "transport": "html-200"}),
    ]) + "\n", encoding="utf-8")
    code = main(["classify", "--batch", str(batch)])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err
    results = _json_lines(out)
    assert len(results) == 5  # the blank line is skipped
    assert results[0]["id"] == "ok-413" and results[0]["kind"] == "payload_too_large"
    assert results[1]["line"] == 2 and results[1]["error"].startswith("line 2: not valid JSON")
    assert results[2]["line"] == 4 and "line 4" in results[2]["error"] and "list" in results[2]["error"]
    assert results[3]["id"] is None and results[3]["kind"] == "other"
    assert results[4]["kind"] == "waf_block"


def test_batch_of_binary_junk_never_tracebacks(tmp_path, capsys):
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe\x00garbage\n\x89PNG\r\n")
    assert main(["classify", "--batch", str(junk)]) == 0
    results = _json_lines(capsys.readouterr().out)
    assert [result["line"] for result in results] == [1, 2]
    assert all("error" in result for result in results)


def test_batch_from_stdin(monkeypatch, capsys):
    _stdin(monkeypatch, (json.dumps({"id": "s", "status": 401, "message": "invalid x-api-key"}) + "\n").encode())
    assert main(["classify", "--batch", "-"]) == 0
    assert _json_lines(capsys.readouterr().out) == [{
        "id": "s", "kind": "auth", "payload_related": False, "recoverable": False,
        "reason": "Authentication or permission refused: 401 Unauthorized",
        "evidence": ["status 401", "rule auth.status"], "rule_id": "auth.status"}]


def test_unreadable_batch_file_exits_2_with_a_clear_message(tmp_path, capsys):
    missing = tmp_path / "missing.jsonl"
    assert main(["classify", "--batch", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"cannot read --batch {missing}" in err and "Traceback" not in err


def test_unreadable_body_file_exits_2(tmp_path, capsys):
    assert main(["classify", "--status", "403", "--body-file", str(tmp_path / "nope.html")]) == 2
    assert "cannot read --body-file" in capsys.readouterr().err


def test_bad_header_exits_2(capsys):
    assert main(["classify", "--status", "403", "--header", "no colon here"]) == 2
    assert "--header expects 'Name: value'" in capsys.readouterr().err


def test_nothing_to_classify_exits_2(capsys):
    assert main(["classify"]) == 2
    assert "nothing to classify" in capsys.readouterr().err
