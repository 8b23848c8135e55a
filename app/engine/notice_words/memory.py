"""The words of the memory notices (facts in app.model.notice_facts.memory)."""

from __future__ import annotations

__all__: list[str] = []
