"""The cap probe through the front door: what `bulkhead probe` needs of the engine to send its probes the
way a chat request goes (`app.probe` bisects the sizes; `app.probe_floor` carries the route's floor).

    apply_profile(provider, State())         # a beta this endpoint refused is left out, as chat leaves it out
    policy = retry_policy(settings)          # the transient retries a chat request gets (retry_* settings)
    rules = user_rules(settings)             # the user's [[classifier.rules]] judge each answer

The route and its key come from `app.engine.api.setup.choose_route`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.api.classify import user_rules
from app.engine.profile_evidence import apply_profile
from app.engine.retry import RetryPolicy

if TYPE_CHECKING:
    from app.config import Settings

__all__ = ["RetryPolicy", "apply_profile", "retry_policy", "user_rules"]


def retry_policy(settings: Settings) -> RetryPolicy:
    """How often and how long a transient failure (429, 5xx, a timeout) is retried: `retry_*` in config."""
    return RetryPolicy.from_settings(settings)
