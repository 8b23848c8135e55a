"""The facts of the recovery notices (worded by app.engine.notice_words.recovery)."""

from __future__ import annotations

__all__: list[str] = []
