"""`bulkhead sessions export ID --format har`: valid HAR 1.2, evidence in comments, no secret (issue 9)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from app.cli import main
from app.har import to_har
from tests.engine.conftest import FAKE_KEY

SCHEMA = json.loads((Path(__file__).parent.parent / "fixtures" / "har-1.2.schema.json").read_text())


async def _session_with_a_rejection(make_harness, lab):
    lab.configure(gateway="cloudflare", cap="64KB")
    h = make_harness("anthropic")
    h.grow(6, 10_000)
    result = await h.engine.submit("hello")
    assert result.outcome == "answered", result.error
    return h


async def test_har_export_is_valid_and_explains_the_rejection(make_harness, lab):
    h = await _session_with_a_rejection(make_harness, lab)

    har = to_har(h.session, body_limit=2048)

    jsonschema.validate(har, SCHEMA)
    entries = har["log"]["entries"]
    assert len(entries) == len(h.session.store.list_requests(h.session.id)) >= 2
    rejected = entries[0]
    assert rejected["response"]["status"] == 403
    assert "waf_block" in rejected["comment"] and "cf-ray" in rejected["comment"]
    assert "<html" in rejected["response"]["content"]["text"].lower()
    assert all(len(e["request"]["postData"]["text"].encode()) <= 2048 for e in entries)
    assert entries[-1]["response"]["status"] == 200


async def test_har_export_through_the_cli_holds_no_secret(make_harness, lab, capsys):
    h = await _session_with_a_rejection(make_harness, lab)

    assert main(["sessions", "export", h.session.id, "--format", "har"]) == 0

    text = capsys.readouterr().out
    jsonschema.validate(json.loads(text), SCHEMA)
    assert FAKE_KEY not in text
    headers = [hdr for e in json.loads(text)["log"]["entries"] for hdr in e["request"]["headers"]]
    auth = [hdr["value"] for hdr in headers if hdr["name"].lower() in ("x-api-key", "authorization")]
    assert auth and set(auth) == {"[redacted]"}
