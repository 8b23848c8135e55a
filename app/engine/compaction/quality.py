"""The summary's quality gate: refusals and answers too short for the segment are rejected.

The floor scales with the segment's size (1/20 of its chars), capped at `summary_min_chars_cap` (80). The L2
summary (app.engine.compaction.summarize) gates both the built-in summarizer's and an external engine's answer.
"""

from __future__ import annotations

import re

from app.model.prompts import SUMMARY_HEADER

FLOOR_RATIO = 20  # the too-short floor is 1/20 of the segment's chars, capped (default 80)

_APOS = "['’]"
_REFUSAL_START = re.compile(
    rf"^\W*(i\s+can{_APOS}?t|i\s+cannot|i\s+can\s+not|i{_APOS}m\s+(sorry|unable|not able)|i\s+am\s+(sorry|unable|not able)"
    rf"|sorry,|i\s+won{_APOS}t|i\s+will\s+not|unfortunately,?\s+i|as\s+an\s+ai)",
    re.IGNORECASE,
)
_REFUSAL_ANYWHERE = re.compile(
    rf"\b(i\s+can{_APOS}?t\s+help|i\s+cannot\s+(help|assist|comply|provide|summari[sz]e)|i{_APOS}m\s+unable\s+to"
    rf"|i\s+am\s+unable\s+to|i\s+can{_APOS}t\s+(assist|comply|summari[sz]e)|as\s+an\s+ai\b|as\s+a\s+language\s+model)",
    re.IGNORECASE,
)
_SHORT_REFUSAL_CHARS = 400


def summary_floor(segment_chars: int, cap: int = 80) -> int:
    """The shortest acceptable summary: 1/20 of the segment, at least 1 char, at most `cap`."""
    return min(cap, max(1, segment_chars // FLOOR_RATIO))


def quality_gate(summary: str, segment_chars: int, cap: int = 80) -> tuple[bool, str]:
    """(ok, reason): refusals and answers too short for the segment are rejected."""
    text = (summary or "").strip()
    if not text:
        return False, "empty answer"
    body = text.removeprefix(SUMMARY_HEADER).strip().lstrip("#*> ").strip()
    match = _REFUSAL_START.search(body[:200])
    if match is None and (
        len(body) < _SHORT_REFUSAL_CHARS or "as an ai" in body.lower() or "language model" in body.lower()
    ):
        match = _REFUSAL_ANYWHERE.search(body)
    if match is not None:
        return False, f"refusal (“{match.group(0).strip()}”)"
    floor = summary_floor(segment_chars, cap)
    if len(body) < floor:
        return False, f"too short: {len(body)} chars for a {segment_chars:,}-char segment (floor {floor})"
    return True, "ok"
