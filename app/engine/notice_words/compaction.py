"""The words of the compaction notices (facts in app.model.notice_facts.compaction)."""

from __future__ import annotations

__all__: list[str] = []
