"""Injected faults: which model request fails, and how.

SPEC is a comma list of items, each either

- ``KIND:RATE`` — with probability RATE (0–1) per model request, drawn from a generator seeded by
  ``--seed`` (one draw per request, so the schedule depends only on the seed and the request number);
  the rates of all items must add up to at most 1; or
- ``KIND@N`` / ``KIND@N+M+…`` — exactly the Nth (and Mth, …) model requests, counted from 1 since the
  lab started or its faults/seed were last changed. Scheduled items win over rates.

Counted requests are the provider requests that passed the gateway and parsed: generation
(`/v1/messages`, `/v1/chat/completions`, `/model/…/converse[-stream]`) and token counting
(`/v1/messages/count_tokens`, `/model/…/count-tokens`) alike — real token-counting endpoints are rate
limited and fail like the rest (`stream-error` answers a count with the provider's 529/503). Kinds:

- ``429``     rate limited, with ``retry-after`` and the provider's rate-limit body
- ``529``     overloaded (Anthropic 529 overloaded_error; OpenAI and Bedrock answer 503)
- ``500``     internal server error; ``503`` service unavailable
- ``401``     the key is refused (Anthropic 401 authentication_error, OpenAI 401 invalid_api_key, Bedrock 403
  UnrecognizedClientException)
- ``404``     the model does not exist there (Anthropic 404 not_found_error, OpenAI 404 model_not_found, Bedrock
  400 ValidationException "The provided model identifier is invalid.")
- ``drop``    read the request, then close the connection without a response
- ``slow``    answer with pauses between stream events (or before a JSON answer); completes
- ``timeout`` read the request and never answer, until the client gives up
- ``cut``     start streaming text, then reset the connection mid-stream (output visible, then lost)
- ``stream-error`` start streaming text, then send the provider's in-stream error event
  (Anthropic ``event: error`` overloaded_error, OpenAI error chunk, Bedrock exception frame)
- ``html-400`` a gateway's own HTML 400 (Apache's stock page, as ModSecurity answers too many JSON values)
- ``408``     a gateway's own HTML 408 (Apache's RequestReadTimeout: the upload was too slow)
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

FAULT_KINDS = (
    "429",
    "401",
    "404",
    "529",
    "500",
    "503",
    "drop",
    "slow",
    "timeout",
    "cut",
    "stream-error",
    "html-400",
    "408",
)
STATUS_FAULTS = ("429", "529", "500", "503", "401", "404")
RETRY_AFTER_SECONDS = 2
_ITEM_RE = re.compile(r"^\s*([a-z0-9-]+)\s*(?::\s*([0-9]*\.?[0-9]+)|@\s*(\d+(?:\s*\+\s*\d+)*))\s*$", re.I)


class FaultSpecError(ValueError):
    """A --faults SPEC that does not parse; the message says which item and why."""


@dataclass(frozen=True)
class FaultRule:
    kind: str
    rate: float = 0.0
    at: frozenset[int] = frozenset()

    def __str__(self) -> str:
        if self.at:
            return f"{self.kind}@{'+'.join(str(n) for n in sorted(self.at))}"
        return f"{self.kind}:{self.rate:g}"


def parse_faults(spec: str | None) -> tuple[FaultRule, ...]:
    """`"429:0.1,cut@3+5"` → rules; empty or None → no faults."""
    if spec is None or not spec.strip() or spec.strip().lower() == "none":
        return ()
    rules = []
    for item in spec.split(","):
        if not item.strip():
            continue
        match = _ITEM_RE.match(item)
        if not match:
            raise FaultSpecError(
                f"fault {item.strip()!r}: use KIND:RATE (e.g. 429:0.1) or KIND@N[+M…] "
                f"(e.g. cut@3); kinds: {', '.join(FAULT_KINDS)}"
            )
        kind = match.group(1).lower()
        if kind not in FAULT_KINDS:
            raise FaultSpecError(
                f"fault {item.strip()!r}: unknown kind {kind!r} (kinds: {', '.join(FAULT_KINDS)})"
            )
        if match.group(2) is not None:
            rate = float(match.group(2))
            if not 0 <= rate <= 1:
                raise FaultSpecError(f"fault {item.strip()!r}: a rate is a probability between 0 and 1")
            rules.append(FaultRule(kind, rate=rate))
        else:
            numbers = frozenset(int(n) for n in re.split(r"\s*\+\s*", match.group(3).strip()))
            if 0 in numbers:
                raise FaultSpecError(f"fault {item.strip()!r}: requests are counted from 1")
            rules.append(FaultRule(kind, at=numbers))
    if sum(r.rate for r in rules) > 1 + 1e-9:
        raise FaultSpecError(f"faults {spec!r}: the rates add up to more than 1")
    return tuple(rules)


def describe_faults(rules: tuple[FaultRule, ...]) -> str:
    return ",".join(str(r) for r in rules) or "none"


class FaultPlan:
    """Decides, request by request, which fault (if any) the Nth model request gets."""

    def __init__(self, rules: tuple[FaultRule, ...], seed: int = 0) -> None:
        self.rules = rules
        self._rng = random.Random(seed)
        self.count = 0

    def next(self) -> str | None:
        self.count += 1
        draw = self._rng.random()
        for rule in self.rules:
            if self.count in rule.at:
                return rule.kind
        threshold = 0.0
        for rule in self.rules:
            threshold += rule.rate
            if rule.rate and draw < threshold:
                return rule.kind
        return None
