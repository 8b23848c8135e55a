"""The words of the recovery notices (facts in app.model.notice_facts.recovery)."""

from __future__ import annotations

__all__: list[str] = []
