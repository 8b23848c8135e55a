"""`/blocked` in the TUI besides the session's calls (`UiSession.find_offline`, `find_blocked`, `withhold`):
how a finding's lines are named, and why the offline Core Rule Set is not available ("" when it is)."""

from app.engine.blocked import lines_words
from app.engine.offline_waf import offline_unavailable

__all__ = ["lines_words", "offline_unavailable"]
