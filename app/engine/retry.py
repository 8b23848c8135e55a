"""Backoff for transient failures: rate limits, overloads, 5xx, timeouts, drops of small requests.

Bounded exponential backoff with jitter; a server's `retry-after` wins (within reason).
Payload-related failures and context overflows are never retried here — they go to the
recovery ladder, which changes the request first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from app.config import Settings

MAX_HONOURED_RETRY_AFTER = 300.0  # a server asking for more than 5 minutes gets a failure instead


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    base_delay: float = 1.0
    max_delay: float = 30.0
    rng: random.Random = field(default_factory=random.Random)

    @classmethod
    def from_settings(cls, settings: Settings, rng: random.Random | None = None) -> RetryPolicy:
        return cls(
            settings.retry_max_attempts,
            settings.retry_base_delay,
            settings.retry_max_delay,
            rng or random.Random(),
        )

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `attempt` (1-based), or None when out of attempts."""
        if attempt > self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= MAX_HONOURED_RETRY_AFTER else None
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return float(
            ceiling * (0.5 + 0.5 * self.rng.random())
        )  # "equal jitter": never zero, never above the cap
