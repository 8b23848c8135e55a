"""The one place for cap policy: how a rejection of N bytes becomes a learned cap, and the fallback.

DESIGN.md §4: a payload-related rejection of N bytes teaches a cap of floor(¾ × N); when N is
unknown and no cap exists, bulkhead assumes `fallback_cap` (4 MiB by default, a setting).
"""

from __future__ import annotations

import math

LEARNED_CAP_RATIO = 0.75  # seed: "¾ of the rejected size"
DEFAULT_FALLBACK_CAP = 4 * 1024 * 1024  # Settings.fallback_cap's default


def learned_cap_for(rejected_bytes: int) -> int:
    """The cap learned from a payload rejection of `rejected_bytes`: floor(0.75 × N)."""
    return math.floor(LEARNED_CAP_RATIO * rejected_bytes)
