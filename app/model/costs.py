"""Usage → price (genai-prices, offline data) and the per-session counters.

Token figures are normalised: `input_tokens` is the *whole* prompt, cached parts
included (Anthropic and Bedrock report cache reads/writes apart from `input_tokens`;
the adapters add them back). An unknown model is "unpriced", never an error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.model.levels import step_label

_PROVIDER_IDS = {"anthropic": "anthropic", "openai": "openai", "bedrock": "aws", "lab": None}


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


def price_usd(usage: Usage, model: str, provider: str) -> float | None:
    """The cost of `usage` on `model`, or None when genai-prices does not know the model."""
    provider_id = _PROVIDER_IDS.get(provider, provider)
    if provider_id is None:
        return 0.0  # the lab model is free
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price

        result = calc_price(
            PriceUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens or None,
                cache_write_tokens=usage.cache_write_tokens or None,
            ),
            model,
            provider_id=provider_id,
        )
        return float(result.total_price)
    except Exception:  # LookupError for unknown models, anything else: still unpriced
        return None


ROUTE_FIELDS = ("requests", "failed", "input_tokens", "output_tokens", "cost_usd")


def _bump(mapping: dict[str, int], key: str, by: int = 1) -> None:
    mapping[key] = mapping.get(key, 0) + by


@dataclass
class Counters:
    """Everything `/cost` shows, persisted with the session."""

    requests: int = 0
    failed_requests: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_output_tokens: int = 0
    summarizer_cost_usd: float = 0.0
    compactions: dict[str, int] = field(default_factory=dict)  # by trigger
    compactions_by_level: dict[str, int] = field(default_factory=dict)
    l3_count: int = 0
    rejections: dict[str, int] = field(default_factory=dict)  # by failure kind
    recoveries_ok: int = 0
    recoveries_failed: int = 0
    bytes_saved: int = 0
    memory_calls: int = 0  # the memory worker's requests, kept apart like the summarizer's
    memory_input_tokens: int = 0
    memory_output_tokens: int = 0
    memory_cost_usd: float = 0.0
    fallbacks: int = 0  # turns moved to the next route of a fallback chain
    by_route: dict[str, dict[str, float]] = field(
        default_factory=dict
    )  # route → requests, failed, tokens, cost

    def add_usage(
        self,
        usage: Usage,
        cost: float | None,
        *,
        summarizer: bool = False,
        route: str = "",
        memory: bool = False,
    ) -> None:
        if route:
            entry = self._route(route)
            entry["input_tokens"] += usage.input_tokens
            entry["output_tokens"] += usage.output_tokens
            entry["cost_usd"] += cost or 0.0
        if memory:
            self.memory_calls += 1
            self.memory_input_tokens += usage.input_tokens
            self.memory_output_tokens += usage.output_tokens
            self.memory_cost_usd += cost or 0.0
        elif summarizer:
            self.summarizer_calls += 1
            self.summarizer_input_tokens += usage.input_tokens
            self.summarizer_output_tokens += usage.output_tokens
            self.summarizer_cost_usd += cost or 0.0
        else:
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.cache_read_tokens += usage.cache_read_tokens
            self.cache_write_tokens += usage.cache_write_tokens
            self.cost_usd += cost or 0.0
        if cost is None:
            self.unpriced_requests += 1

    def _route(self, route: str) -> dict[str, float]:
        entry = self.by_route.setdefault(route, {})
        for key in ROUTE_FIELDS:
            entry.setdefault(key, 0)
        return entry

    def count_route(self, route: str, *, failed: bool = False) -> None:
        """One request sent on `route` (a failed one too)."""
        if not route:
            return
        entry = self._route(route)
        entry["requests"] += 1
        if failed:
            entry["failed"] += 1

    def add_rejection(self, kind: str) -> None:
        _bump(self.rejections, kind)

    def add_compaction(self, trigger: str, level: int, bytes_saved: int) -> None:
        _bump(self.compactions, trigger)
        _bump(self.compactions_by_level, step_label(trigger, level))  # "summary", "ladder L2 (last 10)"
        if level >= 3:
            self.l3_count += 1
        self.bytes_saved += max(0, bytes_saved)

    @property
    def total_cost_usd(self) -> float:
        return self.cost_usd + self.summarizer_cost_usd + self.memory_cost_usd

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Counters:
        known = {k: v for k, v in (data or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)
