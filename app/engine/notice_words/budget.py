"""The words of the budget notices (facts in app.model.notice_facts.budget)."""

from __future__ import annotations

__all__: list[str] = []
