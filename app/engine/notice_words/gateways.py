"""The words of the gateways notices (facts in app.model.notice_facts.gateways)."""

from __future__ import annotations

__all__: list[str] = []
