"""Refused content through the front door, outside a session: whether the local Core Rule Set can judge a
request, and the records a session's `/blocked` methods return (`SessionApi.blocked_plan`, `find_offline`,
`find_blocked`, `withhold`: `bulkhead probe --content`, the TUI's `/blocked`).

    offline_unavailable()        # why the offline check cannot run ("" when it can: the offline-waf extra
                                 # and the rules are installed)
    lines_words(finding)         # "line 3", "lines 3-5", "lines 3, 10-11": the lines a finding holds

Every record here is frozen; `BlockedReport.to_json()` is `--json`'s line.
"""

from __future__ import annotations

from app.engine.blocked import BlockedPlan, BlockedReport, lines_words
from app.engine.content_finder import Finding
from app.engine.offline_waf import offline_unavailable
from app.engine.withhold import WithholdOutcome

__all__ = [
    "BlockedPlan",
    "BlockedReport",
    "Finding",
    "WithholdOutcome",
    "lines_words",
    "offline_unavailable",
]
