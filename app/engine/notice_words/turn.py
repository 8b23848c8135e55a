"""The words of the turn notices (facts in app.model.notice_facts.turn)."""

from __future__ import annotations

__all__: list[str] = []
