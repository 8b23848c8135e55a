"""Issue 36, items 2, 5 and 6 in the lab: a content block is never a size cap.

The lab's `modsecurity` profile answers as Debian's Apache + ModSecurity + CRS do: a 413 with Apache's
stock page over the body limit, a 403 with Apache's stock page for content that matches a CRS-like
pattern. bulkhead judges the 403's cause from what the endpoint showed, learns no cap from content, and
says what helps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.engine.block_cause import BlockCause, judge_cause
from app.engine.failures import classify_fields

SQL = (
    "def find_user(db, name):\n"
    "    # the old, unsafe way, kept for the migration notes\n"
    "    query = \"SELECT * FROM users WHERE name = '\" + name + \"' OR '1'='1'\"\n"
    "    return db.execute(query)\n"
)
APACHE_403 = "<html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1></body></html>"


def _requests(h):
    return h.session.store.list_requests(h.session.id)


def command_line_env(h, lab, tmp_path):
    """The environment in which `bulkhead` on the command line reaches the harness's session over the lab."""
    import os

    config = tmp_path / "probe.toml"
    config.write_text(
        f'default_route = "t"\nworkspace = "{h.engine.workspace}"\n'
        f'[routes.t]\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\nbase_url = "{lab.url}"\n'
    )
    return {**os.environ, "BULKHEAD_CONFIG": str(config), "ANTHROPIC_API_KEY": "sk-ant-FAKE-test-key"}


def test_a_403_on_a_body_smaller_than_one_accepted_is_content():
    failure = classify_fields(status=403, body=APACHE_403, headers={"server": "Apache"}, request_bytes=4_600)
    assert failure.kind == "waf_block"
    assert (
        judge_cause(failure, request_bytes=4_600, accepted_max=9_000, floor_bytes=3_000)[0]
        is BlockCause.CONTENT
    )
    assert (
        judge_cause(failure, request_bytes=4_600, accepted_max=None, floor_bytes=4_000)[0]
        is BlockCause.CONTENT
    )
    assert (
        judge_cause(failure, request_bytes=90_000, accepted_max=9_000, floor_bytes=4_000)[0]
        is BlockCause.UNKNOWN
    )
    too_large = classify_fields(status=413, body="too large", request_bytes=90_000)
    assert (
        judge_cause(too_large, request_bytes=90_000, accepted_max=None, floor_bytes=None)[0]
        is BlockCause.SIZE
    )


async def test_a_tool_result_that_trips_the_waf_is_judged_content_and_learns_no_cap(make_harness, lab):
    lab.configure(gateway="modsecurity")
    h = make_harness("anthropic")
    (h.engine.workspace / "db.py").write_text(SQL)
    assert (await h.engine.submit("hello")).outcome == "answered"

    result = await h.engine.submit("!read db.py")

    assert result.outcome == "failed"
    assert h.engine.state.learned_cap(h.engine.route.endpoint_id) is None
    assert h.of_type("cap_learned") == []
    refused = [r for r in _requests(h) if r["status"] == 403]
    assert refused and all(r["kind"] == "waf_block" for r in refused)
    assert any(e.startswith("cause ") for e in refused[0]["evidence"])
    blocked = [r for r in lab.requests() if r["verdict"] == "blocked:modsecurity-403"]
    assert blocked and blocked[0]["rule"].startswith("942100")
    assert "Content blocked by Apache" in result.error and "/blocked" in result.error
    assert "/compact" not in result.error and "max_payload" not in result.error
    assert result.error.count("Recovery failed") == 0
    rejection = h.of_type("rejection")[-1]
    assert rejection.cause in ("content", "unknown")


async def test_a_403_smaller_than_an_accepted_body_is_content_at_once(make_harness, lab):
    """The endpoint took a larger body earlier: the 403 is about content; no ladder, no cap."""
    lab.configure(gateway="modsecurity")
    h = make_harness("openai")
    assert (await h.engine.submit("hello " * 3000)).outcome == "answered"  # ≈ 23 KB passed

    fresh = make_harness("openai")
    fresh.engine.sender.size_evidence.accepted(_requests(h)[-1]["actual_bytes"])  # what the endpoint showed
    h = fresh

    result = await h.engine.submit("please run: x' OR '1'='1")

    assert result.outcome == "failed"
    record = _requests(h)[-1]
    assert record["status"] == 403 and any(e.startswith("cause content") for e in record["evidence"])
    assert h.of_type("recovery") == [] and h.engine.state.learned_cap(h.engine.route.endpoint_id) is None
    assert h.of_type("rejection")[-1].cause == "content"
    assert "If the prompt you just sent holds the refused text, edit it" in result.error
    # the Requests panel's "Why" says what was decided then: the content action, the cause, the hop
    from app.ui.explain import explain_request

    why = explain_request(record, _requests(h))
    assert "bulkhead stops here: no cap is learned and nothing is compacted" in why
    assert "find the refused part and withhold it" in why and "Cause: content." in why
    assert "Hop: Apache (gateway)." in why and "compact" not in why.replace("compacted", "")


async def test_a_cap_learned_from_a_content_block_does_not_survive_the_upgrade(make_harness, lab):
    """Before issue 36 an HTML 403 on a 4.5 KB request left a 3.4 KB cap: below the floor, so it goes."""
    h = make_harness("anthropic", system="You are a coding assistant.")
    endpoint = h.engine.route.endpoint_id
    floor = h.engine.floor_sizes().total_bytes
    h.engine.state.learn_cap(
        endpoint,
        floor - 100,
        rejected_bytes=floor + 200,
        kind="waf_block",
        reason="Rejected by a WAF: 403 with an HTML block page",
        now=datetime.now(UTC) - timedelta(days=3),
    )

    await h.engine.start()

    assert h.engine.state.learned_cap(endpoint) is None
    notices = [e for e in h.of_type("notice") if e.code == "cap_forgotten"]
    assert notices and "request floor" in notices[0].text


async def test_a_cap_learned_from_a_413_stays(make_harness, lab):
    h = make_harness("anthropic")
    endpoint = h.engine.route.endpoint_id
    h.engine.state.learn_cap(endpoint, 100, rejected_bytes=134, kind="payload_too_large", reason="413")

    await h.engine.start()

    assert h.engine.state.learned_cap(endpoint).cap_bytes == 100


async def test_probe_content_from_the_command_line_finds_and_withholds(make_harness, lab, tmp_path):
    """`bulkhead probe --content --session ID --json --yes --withhold`, the real entry point, against the
    lab's modsecurity profile: it names the tool result and the span, withholds it, and the session goes on."""
    import json
    import subprocess
    import sys

    lab.configure(gateway="modsecurity")
    h = make_harness("anthropic")
    (h.engine.workspace / "db.py").write_text(SQL)
    assert (await h.engine.submit("hello")).outcome == "answered"
    assert (await h.engine.submit("!read db.py")).outcome == "failed"
    session_id = h.session.id
    await h.engine.close()
    env = command_line_env(h, lab, tmp_path)
    command = [sys.executable, "-m", "app", "probe", "--content", "--live", "--session", session_id, "--json"]

    refused = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    done = subprocess.run(
        [*command, "--yes", "--withhold"], env=env, capture_output=True, text=True, timeout=120
    )

    assert refused.returncode == 2 and "not probing (nothing was sent)" in refused.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    result = lines[-1]
    assert done.returncode == 0, done.stderr
    assert [line["type"] for line in lines[:-1]] == ["probe"] * (len(lines) - 1) and len(lines) - 1 == result[
        "probes"
    ]
    assert result["finding"]["part"]["label"] == "turn 2, tool result of read_file db.py"
    assert "OR '1'='1" in result["finding"]["span"]["text"] or "'1'='1" in result["finding"]["span"]["text"]
    assert result["withheld"]["applied"] is True
    answered = subprocess.run(
        [sys.executable, "-m", "app", "--resume", session_id, "-p", "what now?"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert answered.returncode == 0, answered.stderr
    assert "You said: “what now?”" in answered.stdout


async def test_a_refused_unanswered_prompt_is_taken_back_so_the_next_one_goes_through(
    make_harness, lab, tmp_path
):
    """The refused text is the newest prompt, never answered: `--withhold` takes it out of the view (the
    log keeps it) and says what it was; without that, every later prompt carried it and was refused."""
    import json
    import subprocess
    import sys

    lab.configure(gateway="modsecurity")
    h = make_harness("anthropic")
    assert (await h.engine.submit("hello")).outcome == "answered"
    assert (await h.engine.submit("why is this slow?\n" + SQL)).outcome == "failed"
    session_id = h.session.id
    await h.engine.close()
    env = command_line_env(h, lab, tmp_path)
    resume = [sys.executable, "-m", "app", "--resume", session_id, "-p", "what now?"]

    done = subprocess.run(
        [sys.executable, "-m", "app", "probe", "--content", "--live", "--session", session_id, "--json"]
        + ["--yes", "--withhold"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    answered = subprocess.run(resume, env=env, capture_output=True, text=True, timeout=120)

    result = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")][-1]
    assert done.returncode == 0, done.stderr
    assert result["finding"]["part"]["label"] == "turn 2, user prompt"
    assert result["withheld"]["applied"] is False and result["withheld"]["taken_back"] is True
    assert "why is this slow?" in result["withheld"]["message"]
    assert answered.returncode == 0, answered.stderr
    assert "You said: “what now?”" in answered.stdout
