"""The words of the session notices (facts in app.model.notice_facts.session)."""

from __future__ import annotations

__all__: list[str] = []
