"""Issue 36 through the real thing: Debian's Apache 2.4 + ModSecurity 2.9 + OWASP CRS 3.3, stock
configuration (SecRuleEngine On, no exclusion), as a reverse proxy in front of the lab, at paranoia
levels 1 and 2. `.ci/run` installs apache2, libapache2-mod-security2 and modsecurity-crs; without them
each test skips, naming the package.

What a user behind such a gateway relies on: bulkhead's own texts never trip it (so `hello` answers on
every wire format), and every fixed text passes on its own with no rule matched at all — a text that
scores even a warning leaves the user's own content less room before the anomaly threshold.
"""

from __future__ import annotations

import http.client
import json

import pytest

from app.engine import prompts
from app.model.archive import recall_suffix, stub_text
from app.tools.registry import TOOL_SPECS

PARANOIA_LEVELS = (1, 2)
WIRES = {
    "anthropic": ("anthropic", {}),
    "openai-chat": ("openai", {"api": "chat"}),
    "openai-responses": ("openai", {"api": "responses"}),
    "bedrock": ("bedrock", {}),
}
KEYS = ("0123456789abcdef", "fedcba9876543210", "a1b2c3d4e5f60718")


def post(port: int, path: str, body: bytes) -> int:
    """POST `body` as an SDK would (JSON, Accept, a key) to localhost:`port`; the status."""
    connection = http.client.HTTPConnection("localhost", port, timeout=30)
    try:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "bulkhead-tests",
            "x-api-key": "lab",
            "anthropic-version": "2023-06-01",
        }
        connection.request("POST", path, body=body, headers=headers)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def fixed_texts() -> dict[str, str]:
    """Every text bulkhead itself puts into a request (user content aside)."""
    texts = {
        "system prompt": prompts.SYSTEM_PROMPT,
        "payload notice": prompts.PAYLOAD_NOTICE,
        "continuation": prompts.CONTINUATION,
        "compacted notice": prompts.COMPACTED_NOTICE + " " + recall_suffix(KEYS[:1]),
        "dropped notice": prompts.DROPPED_NOTICE.format(count=12, markers=f"[[ccr:{KEYS[0]}]]"),
        "summary system": prompts.SUMMARY_SYSTEM,
        "summary header": prompts.SUMMARY_HEADER,
        "interrupted turn": prompts.INTERRUPTED_TURN,
        "stub": stub_text("[Old tool result cleared: 120 lines, 4,210 chars, text]", list(KEYS[:1])),
    }
    return texts


def anthropic_body(**fields) -> bytes:
    return json.dumps({"model": "lab-1", "max_tokens": 16, **fields}).encode()


def fixed_bodies() -> dict[str, bytes]:
    """Each fixed text in a request of its own: as a message, and each tool as the tools it declares."""
    bodies = {
        name: anthropic_body(messages=[{"role": "user", "content": text}])
        for name, text in fixed_texts().items()
    }
    for spec in TOOL_SPECS:
        tool = {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}
        bodies[f"tool {spec.name}"] = anthropic_body(
            messages=[{"role": "user", "content": "hi"}], tools=[tool]
        )
    return bodies


@pytest.mark.parametrize("paranoia", PARANOIA_LEVELS)
def test_every_fixed_text_passes_the_crs_without_matching_a_rule(crs, paranoia):
    gateway = crs(paranoia)
    offenders = {}
    for name, body in fixed_bodies().items():
        mark = gateway.log_mark()
        status = post(gateway.port, "/v1/messages", body)
        rules = gateway.rules_since(mark)
        if status != 200 or rules:
            offenders[name] = (status, [(r["id"], r["msg"], r["data"][:90]) for r in rules])
    assert offenders == {}, offenders


@pytest.mark.parametrize("paranoia", PARANOIA_LEVELS)
@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_hello_answers_through_a_stock_crs(make_harness, crs, paranoia, wire):
    """The whole first request — system prompt, every built-in tool, the SDK's own headers — passes."""
    gateway = crs(paranoia)
    provider, extra = WIRES[wire]
    base = f"{gateway.url}/v1" if provider == "openai" else gateway.url
    h = make_harness(provider, base_url=base, system=prompts.SYSTEM_PROMPT, route_extra=extra)
    mark = gateway.log_mark()

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert "You said: “hello”" in result.text
    assert gateway.rules_since(mark) == []


@pytest.mark.parametrize("paranoia", PARANOIA_LEVELS)
def test_a_text_with_several_markers_scores_no_more_than_a_warning(crs, paranoia):
    """A marker has five of the characters rule 942430 counts (PL2: twelve in one text is a warning, 3 of
    the 5 points that block). A stub or notice naming three keys passes, with at most that warning."""
    gateway = crs(paranoia)
    texts = [
        prompts.DROPPED_NOTICE.format(count=30, markers=" ".join(f"[[ccr:{k}]]" for k in KEYS)),
        stub_text("[Old tool result cleared: 120 lines, 4,210 chars, text]", list(KEYS)),
    ]
    for text in texts:
        mark = gateway.log_mark()
        status = post(
            gateway.port, "/v1/messages", anthropic_body(messages=[{"role": "user", "content": text}])
        )
        assert status == 200
        assert {rule["id"] for rule in gateway.rules_since(mark)} <= {"942430"}


LEGACY_STUB = (
    "[Old tool result cleared: 120 lines, 4,210 chars, text]\n"
    "[full content recoverable via @recall <<ccr:0123456789abcdef>>]"
)


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_a_session_stored_with_the_legacy_marker_passes_pl2(make_harness, crs, wire):
    """Views stored before the marker changed hold `<<ccr:KEY>>`, which PL2 refuses on its own (942120).
    What is sent carries `[[ccr:KEY]]` instead (rewritten at request build, every wire); the stored view
    and the master log keep what was written."""
    from app.model.messages import Message

    gateway = crs(2)
    mark = gateway.log_mark()
    assert (
        post(
            gateway.port, "/v1/messages", anthropic_body(messages=[{"role": "user", "content": LEGACY_STUB}])
        )
        == 403
    )
    provider, extra = WIRES[wire]
    base = f"{gateway.url}/v1" if provider == "openai" else gateway.url
    h = make_harness(provider, base_url=base, system=prompts.SYSTEM_PROMPT, route_extra=extra)
    h.session.append(Message.create("user", "what did the old tool say?", turn=1))
    h.session.append(Message.create("assistant", LEGACY_STUB, turn=1))
    request = h.engine.provider.build(h.session.view.messages, h.engine.system, h.engine.tools, max_tokens=16)
    assert "<<ccr:" not in json.dumps(request.body) and "[[ccr:0123456789abcdef]]" in json.dumps(request.body)
    mark = gateway.log_mark()

    result = await h.engine.submit("hello")

    assert result.outcome == "answered", result.error
    assert gateway.rules_since(mark) == []
    assert LEGACY_STUB in [m.text for m in h.session.master]  # nothing stored was rewritten
    assert LEGACY_STUB in [m.text for m in h.session.view.messages]


SQL_FILE = (
    "import sqlite3\n\n\n"
    "def connect(path):\n"
    "    return sqlite3.connect(path)\n\n\n"
    "def find_user(db, name):\n"
    "    # the old, unsafe way, kept for the migration notes\n"
    "    query = \"SELECT * FROM users WHERE name = '\" + name + \"' OR '1'='1'\"\n"
    "    return db.execute(query)\n\n\n"
    "def count(db):\n"
    '    return db.execute("SELECT COUNT(*) FROM users").fetchone()[0]\n'
)


@pytest.mark.parametrize(
    "wire,paranoia",
    # OpenAI's APIs carry a tool call's arguments as one JSON string, which the stock CRS refuses at PL2 on
    # its own (942260, `": "`): see test_openai_tool_call_arguments_trip_pl2_by_themselves.
    [("anthropic", 1), ("anthropic", 2), ("bedrock", 1), ("bedrock", 2), ("openai-chat", 1)],
)
async def test_a_tool_result_the_crs_refuses_is_found_withheld_and_the_session_goes_on(
    make_harness, crs, paranoia, wire
):
    """The must-show of issue 36: a session whose tool result holds SQL-injection-looking code is blocked by
    the real CRS, learns no cap; the finder names that tool result and a span in it within a bounded number
    of zero-cost probes; withholding it lets the next turn answer; the master log keeps the original."""
    from app.engine.blocked import blocked_plan, find_blocked
    from app.engine.withhold import withhold

    gateway = crs(paranoia)
    provider, extra = WIRES[wire]
    base = f"{gateway.url}/v1" if provider == "openai" else gateway.url
    h = make_harness(provider, base_url=base, system=prompts.SYSTEM_PROMPT, route_extra=extra)
    (h.engine.workspace / "db.py").write_text(SQL_FILE)
    assert (await h.engine.submit("hello")).outcome == "answered"

    blocked = await h.engine.submit("!read db.py")

    assert blocked.outcome == "failed"
    assert "Content blocked by Apache" in blocked.error and "/blocked" in blocked.error
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None and h.of_type("cap_learned") == []
    plan = blocked_plan(h.engine)
    report = await find_blocked(h.engine)
    finding = report.finding
    assert finding is not None, report.message
    assert finding.part.label == "turn 2, tool result of read_file db.py"
    assert report.probes <= plan.max_probes
    assert all(0 < end - start <= 300 for start, end in finding.spans), finding.to_json()
    if finding.cleared:  # every refused span found within the probes: the SQL line is among them
        assert any(first <= 10 <= last for first, last in finding.line_ranges), finding.to_json()
    original = next(r.content for m in h.session.master for r in m.tool_results)

    outcome = withhold(h.session, finding)
    answered = await h.engine.submit("what now?")

    assert outcome.applied, outcome.message
    assert answered.outcome == "answered", answered.error
    assert next(r.content for m in h.session.master for r in m.tool_results) == original  # byte for byte
    sent = next(r.content for m in h.session.view.messages for r in m.tool_results)
    assert "OR '1'='1" not in sent and "withheld" in sent
    assert h.session.store.archive_get(outcome.archive_key, h.session.id).content == original


@pytest.mark.parametrize("paranoia", PARANOIA_LEVELS)
def test_openai_tool_call_arguments_trip_pl2_by_themselves(crs, paranoia):
    """A fact users behind a PL2 CRS meet (README): Chat Completions and Responses send a tool call's
    arguments as one JSON string, and `"path": "db.py"` in a string is rule 942260 at PL2 — blocked with
    no content of the user's at all. At PL1 it passes. bulkhead cannot change the wire format; the
    finder names the tool call, and the README says to ask for an exclusion or use PL1."""
    gateway = crs(paranoia)
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "db.py"}'},
    }
    body = {
        "model": "gpt-5.5",
        "max_tokens": 0,
        "messages": [{"role": "assistant", "content": None, "tool_calls": [call]}],
    }
    mark = gateway.log_mark()
    status = post(gateway.port, "/v1/chat/completions", json.dumps(body).encode())
    ids = {rule["id"] for rule in gateway.rules_since(mark)}
    assert (status, "942260" in ids) == ((403, True) if paranoia == 2 else (400, False))
