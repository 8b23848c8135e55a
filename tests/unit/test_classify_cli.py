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
CLOUDFLARE_PAGE = (
    "<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></head>"
    "<body><h1>Sorry, you have been blocked</h1></body></html>"
)
RESULT_KEYS = {
    "id",
    "kind",
    "payload_related",
    "recoverable",
    "reason",
    "evidence",
    "rule_id",
    "decided_by",
    "hop",
}


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
    code = main(
        [
            "classify",
            "--status",
            "403",
            "--body-file",
            str(block_page),
            "--header",
            "cf-ray: 8f3a1c2b9d7e4a61-SJC",
            "--header",
            "Server: cloudflare",
            "--bytes",
            "422200",
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert "kind      waf_block  (payload-related, recoverable)" in out
    assert "reason    Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header" in out
    assert "gateway   Cloudflare" in out
    assert "evidence  - status 403" in out
    assert "- header cf-ray: 8f3a1c2b9d7e4a61-SJC" in out
    assert "action    learn a cap of ¾ × 412.3 KB = 309.2 KB and walk the recovery ladder" in out


def test_single_error_as_json(capsys):
    code = main(
        [
            "classify",
            "--status",
            "429",
            "--message",
            "Too Many Requests",
            "--header",
            "retry-after: 20",
            "--json",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    result = json.loads(out)
    assert {
        "kind",
        "payload_related",
        "recoverable",
        "transient",
        "reason",
        "evidence",
        "gateway",
        "action",
    } <= result.keys()
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
    batch.write_text(
        "\n".join(
            [
                json.dumps(
                    {"id": "ok-413", "status": 413, "message": "Payload Too Large", "request_bytes": 9000}
                ),
                "{not json",
                "",
                json.dumps(["a", "list"]),
                json.dumps(
                    {"status": "junk", "headers": "not a dict", "request_bytes": -5, "body": {"error": "x"}}
                ),
                json.dumps(
                    {"id": "html-200", "status": 200, "message": "<html></html>", "transport": "html-200"}
                ),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
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
    _stdin(
        monkeypatch, (json.dumps({"id": "s", "status": 401, "message": "invalid x-api-key"}) + "\n").encode()
    )
    assert main(["classify", "--batch", "-"]) == 0
    assert _json_lines(capsys.readouterr().out) == [
        {
            "id": "s",
            "kind": "auth",
            "payload_related": False,
            "recoverable": False,
            "reason": "Authentication or permission refused: 401 Unauthorized",
            "evidence": ["status 401", "rule auth.status"],
            "rule_id": "auth.status",
            "decided_by": "auth status, codes and wording",
            "hop": None,
        }
    ]


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


# -- user rules from [[classifier.rules]] (issue 15) ------------------------------------------------------
ACME_PAGE = (
    "<html><head><title>ACME SecureWeb</title></head><body><h2>Request refused</h2>"
    "<p>ACME-GW-0042: message body exceeds the policy limit for AI services.</p></body></html>"
)
ACME_RULES = """\
default_route = "lab"
[routes.lab]
provider = "lab"

[[classifier.rules]]
id = "acme-body-limit"
kind = "payload_too_large"
status = 502
header = "X-Acme-Gateway"
phrase = "ACME-GW-00\\\\d+: message body exceeds"
reason = "ACME's gateway refused the body size"
"""


def test_a_config_rule_decides_a_corporate_page(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text(ACME_RULES, encoding="utf-8")
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    page = tmp_path / "acme.html"
    page.write_text(ACME_PAGE, encoding="utf-8")
    args = [
        "classify",
        "--status",
        "502",
        "--header",
        "X-Acme-Gateway: edge-7",
        "--body-file",
        str(page),
        "--bytes",
        "300000",
    ]

    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["kind"] == "payload_too_large" and result["payload_related"]
    assert result["rule_id"] == "config:acme-body-limit" and result["rule_origin"] == f"{config}:5"
    assert result["reason"].endswith("ACME's gateway refused the body size")
    assert f"rule config:acme-body-limit (your rule, {config}:5)" in result["evidence"]

    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"rule      config:acme-body-limit  (your rule, {config}:5)" in out

    config.write_text("", encoding="utf-8")  # without the rule, the page's own words are read by meaning
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["rule_id"] == "meaning.body-size" and result["kind"] == "payload_too_large"
    assert any(line.startswith('meaning: body noun "body"') for line in result["evidence"])


@pytest.mark.parametrize(
    ("table", "where", "words"),
    [
        (
            'kind = "waf_block"\nphrase = "blocked (by"\n',
            6,
            "is not a valid regular expression (missing ), unterminated",
        ),
        ('kind = "blocked"\nstatus = 403\n', 5, "kind = 'blocked' is not one of context_overflow"),
        ('kind = "waf_block"\nstatus = 99\n', 6, "is not an HTTP status"),
        ('kind = "waf_block"\n', 4, "needs at least one of status, header or phrase"),
        ('kind = "waf_block"\nstatus = 403\ncolour = "red"\n', 7, "unknown key 'colour'"),
    ],
)
def test_config_check_names_the_file_and_line_of_a_bad_rule(
    tmp_path, monkeypatch, capsys, table, where, words
):
    config = tmp_path / "config.toml"
    config.write_text(f"# rules\n\n\n[[classifier.rules]]\n{table}", encoding="utf-8")
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    assert main(["config", "check"]) == 2
    out = capsys.readouterr().out
    assert f"✖ {config}:{where}:" in out and words in out


def test_config_check_lists_the_rules(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.toml"
    config.write_text(ACME_RULES, encoding="utf-8")
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    main(["config", "check"])
    assert (
        f"✓ classifier rule config:acme-body-limit ({config}:5): status [502], header 'X-Acme-Gateway'"
        in capsys.readouterr().out
    )
