"""Issue 36 item 1: the lab model's own answers pass a stock OWASP CRS at paranoia levels 1 and 2.

Its answers go back to the gateway in the next request (the conversation's history), so a lab answer that
trips the CRS would block a rehearsal that real models would pass. Each kind of answer — the report, tool
calls, tool-result answers, a tool the request does not offer, usage errors, a cut answer and its
continuation, "nothing to continue", a summary — is sent as an assistant message through the real Debian
Apache + ModSecurity + CRS 3.3 (tests/engine/real_gateways.py; skipped, naming the package, without it):
each passes, matching at most rule 942430's warning (twelve special characters: 3 of the 5 points that
block), as bulkhead's own markers do.
"""

from __future__ import annotations

import json

import pytest

from app.engine.prompts import CONTINUATION, SUMMARY_SYSTEM
from app.lab.model import respond
from tests.engine.test_modsecurity_crs import post
from tests.lab.test_lab_model import conv

TOOL_RESULTS = (
    ("user", "!read a.py\n!shell false"),
    (
        "assistant",
        [
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "t2", "name": "shell", "input": {"command": "false"}},
        ],
    ),
    (
        "user",
        [
            {"type": "tool_result", "tool_use_id": "t1", "content": "\nimport os\nprint(os.getcwd())\n"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "exit 1", "is_error": True},
        ],
    ),
)


def _segment(n: int):
    messages = []
    for i in range(n):
        messages.append(("user", f"Step {i}: please look at module {i}."))
        messages.append(
            (
                "assistant",
                [
                    {"type": "text", "text": f"Looked at module {i}. Found [[ccr:{i:016x}]] there."},
                    {"type": "tool_use", "id": f"c{i}", "name": "grep", "input": {"pattern": f"module{i}"}},
                ],
            )
        )
        messages.append(("user", [{"type": "tool_result", "tool_use_id": f"c{i}", "content": f"hit {i}"}]))
    return messages


def lab_answers() -> dict[str, str]:
    cut = respond(conv(("user", "!cut"), max_tokens=300)).text
    return {
        "report": respond(conv(("user", "first"), ("assistant", "ok"), ("user", "hello"))).text,
        "calling tools": respond(conv(("user", "!read a.py\n!grep foo src"))).text,
        "tool results": respond(conv(*TOOL_RESULTS)).text,
        "tool not offered": respond(conv(("user", "!shell pwd\n!read a.py"), tools=["read_file"])).text,
        "no tools": respond(conv(("user", "!ls"), tools=[])).text,
        "usage errors": respond(conv(("user", "!read a.py lines\n!recall nope\n!write"))).text,
        "bad !call": respond(conv(("user", "!call mcp__demo__echo {text"))).text,
        "cut": cut,
        "continuation": respond(
            conv(("user", "!cut"), ("assistant", cut), ("user", CONTINUATION), max_tokens=600)
        ).text,
        "nothing to continue": respond(
            conv(("user", "hi"), ("assistant", "ok"), ("user", CONTINUATION))
        ).text,
        "summary": respond(conv(*_segment(4), system=SUMMARY_SYSTEM, tools=[])).text,
        "big": respond(conv(("user", "!big 2KB"))).text,
    }


@pytest.mark.parametrize("paranoia", (1, 2))
def test_the_lab_models_answers_pass_a_stock_crs(crs, paranoia):
    gateway = crs(paranoia)
    offenders = {}
    for name, text in lab_answers().items():
        assert text.strip(), name
        body = {
            "model": "lab-1",
            "max_tokens": 16,
            "messages": [
                {"role": "user", "content": "go on"},
                {"role": "assistant", "content": text},
                {"role": "user", "content": "thanks"},
            ],
        }
        mark = gateway.log_mark()
        status = post(gateway.port, "/v1/messages", json.dumps(body).encode())
        rules = {rule["id"] for rule in gateway.rules_since(mark)} - {"942430"}
        if status != 200 or rules:
            offenders[name] = (status, sorted(rules), text[:160])
    assert offenders == {}, offenders
