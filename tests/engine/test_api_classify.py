"""The classifier through the front door (`app.engine.api.classify`): `decision()` spells out the same
decision `classify_fields` takes — `bulkhead classify --explain` never explains a different verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.api.classify import FALLBACK_RULE_ID, classify_fields, decision, user_rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VECTOR_FILES = [FIXTURES / "error-vectors.jsonl", *sorted((FIXTURES / "failures").glob("*.jsonl"))]
FIELDS = ("status", "message", "body", "headers", "request_bytes", "transport", "error_type", "provider")
CLOUDFLARE_PAGE = (
    "<html><head><title>Attention Required! | Cloudflare</title></head>"
    "<body>Sorry, you have been blocked</body></html>"
)


def _cases() -> list[dict]:
    cases = []
    for path in VECTOR_FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cases.append(json.loads(line))
    return cases


def test_every_vector_is_explained_by_the_rule_that_decided_it():
    cases = _cases()
    assert len(cases) > 400
    for case in cases:
        fields = {name: case.get(name) for name in FIELDS}
        fields["message"] = fields["message"] or ""
        failure = classify_fields(**fields)
        spelled = decision(**fields)
        said = spelled.winner.rule_id if spelled.winner is not None else FALLBACK_RULE_ID
        assert said == failure.rule_id, case.get("id")
        assert spelled.winner is None or spelled.winner.kind == failure.kind, case.get("id")
        assert all(other.rule_id != said for other in spelled.also_matched), case.get("id")


def test_a_block_page_names_its_rule_the_rules_it_beat_the_vendor_and_the_hop():
    spelled = decision(status=403, body=CLOUDFLARE_PAGE, headers={"cf-ray": "8f3a"}, request_bytes=422_200)
    assert spelled.winner is not None and spelled.winner.rule_id == "waf.403"
    assert "header cf-ray: 8f3a" in spelled.winner.lines
    assert [m.priority for m in spelled.also_matched] == sorted(
        (m.priority for m in spelled.also_matched), reverse=True
    )
    assert all(m.priority <= spelled.winner.priority for m in spelled.also_matched)
    assert spelled.vendor is not None and "Cloudflare" in spelled.vendor
    assert spelled.hop is not None and spelled.hop.kind.value == "gateway"
    assert spelled.reading  # how the words were read, even when no sentence pairs a size with a limit


def test_a_user_rule_decides_and_the_built_in_it_beat_is_listed(tmp_path, monkeypatch):
    from app.config import load_settings

    config = tmp_path / "config.toml"
    config.write_text(
        '[[classifier.rules]]\nid = "corp-403"\nkind = "auth"\nstatus = 403\nphrase = "you have been blocked"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("BULKHEAD_CONFIG", str(config))
    rules = user_rules(load_settings())
    assert [rule.id for rule in rules] == ["config:corp-403"]
    fields = {"status": 403, "body": CLOUDFLARE_PAGE, "headers": {"cf-ray": "8f3a"}}
    spelled = decision(**fields, user_rules=rules)
    assert spelled.winner is not None and spelled.winner.rule_id == "config:corp-403"
    assert "waf.403" in [m.rule_id for m in spelled.also_matched]
    assert classify_fields(**fields, user_rules=rules).rule_id == "config:corp-403"


@pytest.mark.parametrize("status", [None, 200])
def test_nothing_matched_is_the_fallback(status):
    spelled = decision(status=status, message="")
    failure = classify_fields(status=status, message="")
    assert (spelled.winner is None) == (failure.rule_id == FALLBACK_RULE_ID)
