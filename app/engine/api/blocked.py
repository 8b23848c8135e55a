"""Refused content through the front door: find the text a content-inspecting gateway (WAF, DLP) refuses
in a session's request, and withhold it (`bulkhead probe --content`, the TUI's `/blocked`).

    plan = blocked_plan(engine)                          # the parts, at most how many probes, the question
    report = await find_offline(engine, paranoia=None)   # the local Core Rule Set judges it: nothing is sent
    report = await find_blocked(engine, on_probe=show)   # live probes through the route (ask first)
    outcome = withhold(engine.session, report.finding)   # the span replaced, the original archived

`offline_unavailable()` says why the offline check cannot run ("" when it can: the offline-waf extra and
the rules are installed). Every record here is frozen; `BlockedReport.to_json()` is `--json`'s line.
"""

from __future__ import annotations

from app.engine.blocked import (
    BlockedPlan,
    BlockedReport,
    blocked_plan,
    find_blocked,
    find_offline,
    lines_words,
)
from app.engine.content_finder import Finding
from app.engine.offline_waf import offline_unavailable
from app.engine.withhold import WithholdOutcome, withhold

__all__ = [
    "BlockedPlan",
    "BlockedReport",
    "Finding",
    "WithholdOutcome",
    "blocked_plan",
    "find_blocked",
    "find_offline",
    "lines_words",
    "offline_unavailable",
    "withhold",
]
