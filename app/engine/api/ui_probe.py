"""`/probe` in the TUI (the command line's `bulkhead probe` may share it): the retry policy and the user's
classifier rules the prober uses; what it sends through is the session's (`UiSession.probe_target`)."""

from app.engine.retry import RetryPolicy
from app.engine.user_rules import build_rules

__all__ = ["RetryPolicy", "build_rules"]
