"""The facts of the budget notices (worded by app.engine.notice_words.budget)."""

from __future__ import annotations

__all__: list[str] = []
