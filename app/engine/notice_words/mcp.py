"""The words of the mcp notices (facts in app.model.notice_facts.mcp)."""

from __future__ import annotations

__all__: list[str] = []
