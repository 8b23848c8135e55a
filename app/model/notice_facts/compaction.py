"""The facts of the compaction notices (worded by app.engine.notice_words.compaction)."""

from __future__ import annotations

__all__: list[str] = []
