"""Find the largest request body a route's gateway accepts, by bisection, with requests that cost nothing.

Each probe sends a body of an exact size through the real adapter (so the same SDK, the
same headers, the same path as a chat request) to an endpoint that does not run the
model: Anthropic's and Bedrock's count-tokens, or — for OpenAI-compatible routes, which
have none — a completion with `max_tokens: 0` that the provider itself refuses at once
with a 400 once the body is past the gateway. Every answer is classified: a gateway
rejection (413, WAF block, reset of a big body, HTML where JSON belongs) is a "no"; any
answer from the provider (even an error about our deliberate `max_tokens: 0`) is a
"yes". Rate limits, overloads and drops of small bodies are retried with backoff and,
if they persist, reported — never mistaken for a cap.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from app.engine.failure_rules import Rule
from app.engine.failures import Failure, classify
from app.engine.resets import SizeEvidence, judge_reset
from app.engine.retry import RetryPolicy
from app.providers.base import ProviderError
from app.sizes import format_size

REJECTION_KINDS = frozenset({"payload_too_large", "waf_block", "connection_drop"})
SUGGESTION_MARGIN = 0.95  # suggest a max_payload a little under the largest body seen to pass


@dataclass(frozen=True)
class ProbeAnswer:
    """What one probe request got back (from the adapter's `probe(size)`)."""

    size: int  # bytes of the body actually sent
    status: int | None
    latency_ms: float
    error: ProviderError | None = None


@dataclass(frozen=True)
class Probe:
    """One probe, as reported: size → verdict."""

    number: int
    size: int
    verdict: str  # passed | rejected | transient | error
    status: int | None
    kind: str | None
    reason: str
    evidence: tuple[str, ...]
    latency_ms: float

    def to_json(self) -> dict:
        return {
            "type": "probe",
            "probe": self.number,
            "bytes": self.size,
            "verdict": self.verdict,
            "status": self.status,
            "kind": self.kind,
            "reason": self.reason,
            "evidence": list(self.evidence),
            "latency_ms": round(self.latency_ms, 1),
        }


@dataclass
class ProbeResult:
    cap_bytes: int | None  # the largest body accepted, when a rejection was found above it
    smallest_rejected: int | None
    kind: str | None
    evidence: tuple[str, ...]
    probes: list[Probe] = field(default_factory=list)
    conclusive: bool = True
    message: str = ""
    rejection: Failure | None = None

    @property
    def suggestion(self) -> int | None:
        if self.cap_bytes is None:
            return None
        return max(1024, int(self.cap_bytes * SUGGESTION_MARGIN) // 1024 * 1024)

    def to_json(self) -> dict:
        return {
            "type": "result",
            "cap_bytes": self.cap_bytes,
            "smallest_rejected_bytes": self.smallest_rejected,
            "kind": self.kind,
            "evidence": list(self.evidence),
            "probes": len(self.probes),
            "conclusive": self.conclusive,
            "suggested_max_payload": self.suggestion,
            "message": self.message,
        }


def max_probes_for(low: int, high: int, precision: int) -> int:
    """Requests a clean run needs at most: ⌈log2(range / precision)⌉ + 1 (+1 when --min must be tried)."""
    return math.ceil(math.log2(max(2, (high - low) / max(1, precision)))) + 2


class _Inconclusive(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Prober:
    """Bisection over body sizes. `send(size)` makes one probe request and says what came back.

    The largest size is tried first (most gateways have no cap below it) and `--min` only when
    every smaller probe was refused, so a clean run takes ⌈log2(range / precision)⌉ + 1 requests.
    A dropped connection is judged by the rules the classifier uses (`app/engine/resets.py`): a
    "no" when the body is over the drop threshold, at least the smallest one refused here, or the
    same body reset twice in a row. Once resets are this gateway's way of saying no, a single
    reset between the largest pass and the smallest refusal counts; a cap found through resets is
    checked once more at the end, and inconsistent answers end the probe without a cap.
    """

    def __init__(
        self,
        send: Callable[[int], Awaitable[ProbeAnswer]],
        *,
        drop_threshold: int,
        retry_policy: RetryPolicy,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_probe: Callable[[Probe], None] | None = None,
        max_requests: int = 60,
        user_rules: tuple[Rule, ...] = (),
    ) -> None:
        self.send = send
        self.drop_threshold = drop_threshold
        self.retry_policy = retry_policy
        self.sleep = sleep
        self.on_probe = on_probe
        self.max_requests = max_requests
        self.user_rules = user_rules
        self.sizes = SizeEvidence()  # what this gateway has shown: largest pass, smallest refusal, last reset
        self.probes: list[Probe] = []
        self.last_rejection: Failure | None = None
        self._drops_refuse = False  # learned: this gateway says no by resetting the connection
        self._sent = 0  # bytes of the body the last probe really sent

    async def find(self, low: int, high: int, precision: int) -> ProbeResult:
        """Bisect between `low` and `high`; the sizes reported are the bytes that really crossed the wire."""
        try:
            if await self._accepts(high):
                return self._result(
                    None,
                    None,
                    None,
                    conclusive=True,
                    message=(
                        f"no cap found: a {format_size(self._sent)} body passed (raise --max to look further)"
                    ),
                )
            passed, rejected, low_seen = low, high, False
            passed_sent, rejected_sent = low, self._sent
            while rejected - passed > precision:
                middle = (passed + rejected) // 2
                if await self._accepts(middle):
                    passed, passed_sent, low_seen = middle, self._sent, True
                else:
                    rejected, rejected_sent = middle, self._sent
            if not low_seen:
                if not await self._accepts(low):
                    failure = self.last_rejection
                    return self._result(
                        None,
                        self._sent,
                        failure,
                        conclusive=True,
                        message=(
                            f"the gateway refuses even {format_size(self._sent)}: "
                            f"{failure.reason if failure else 'rejected'} — lower --min, or check the route"
                        ),
                    )
                passed_sent = self._sent
            if self._drops_refuse and rejected != high and await self._accepts(rejected):
                raise _Inconclusive(
                    f"inconsistent answers at {format_size(rejected)} (a reset, then a pass): "
                    f"the connection looks flaky rather than capped; no cap is reported"
                )
            return self._result(
                passed_sent,
                rejected_sent,
                self.last_rejection,
                conclusive=True,
                message=(
                    f"cap found: bodies up to {format_size(passed_sent)} pass, {format_size(rejected_sent)} is refused"
                ),
            )
        except _Inconclusive as stop:
            return self._result(None, None, self.last_rejection, conclusive=False, message=stop.message)

    def _result(
        self,
        cap: int | None,
        rejected: int | None,
        failure: Failure | None,
        *,
        conclusive: bool,
        message: str,
    ) -> ProbeResult:
        return ProbeResult(
            cap_bytes=cap,
            smallest_rejected=rejected,
            kind=failure.kind if failure else None,
            evidence=tuple(failure.evidence) if failure else (),
            probes=self.probes,
            conclusive=conclusive,
            message=message,
            rejection=failure,
        )

    async def _accepts(self, size: int) -> bool:
        """True when a body of `size` gets past the gateway; retries transient answers first."""
        transient_tries = 0
        while True:
            if len(self.probes) >= self.max_requests:
                raise _Inconclusive(
                    f"stopped after {self.max_requests} probe requests without a clear answer"
                )
            answer = await self.send(size)
            self._sent = answer.size
            verdict, failure = self._judge(answer)
            self._report(answer, verdict, failure)
            if verdict == "passed":
                self.sizes.accepted(answer.size)
                return True
            if verdict == "rejected":
                self.sizes.refused(answer.size)
                self.last_rejection = failure
                return False
            if verdict == "dropped":
                judged = judge_reset(
                    answer.size, self.drop_threshold, self.sizes, smaller_accepted_required=False
                )
                between = self._drops_refuse and (
                    self.sizes.accepted_max is None or answer.size > self.sizes.accepted_max
                )
                if judged.payload or between:
                    self._drops_refuse = True
                    self.sizes.refused(answer.size)
                    self.last_rejection = self._drop_failure(
                        answer.size,
                        failure,
                        judged.evidence if judged.payload else "resets are this gateway's way of saying no",
                    )
                    return False
                self.sizes.reset(answer.size)
                await self.sleep(self.retry_policy.delay(1) or 0.0)
                continue
            if verdict == "error":
                raise _Inconclusive(
                    f"the probe cannot go on: {failure.reason if failure else 'unknown error'}"
                    + (
                        " — check the route's key (`bulkhead config check`)"
                        if failure and failure.kind == "auth"
                        else ""
                    )
                )
            transient_tries += 1
            delay = self.retry_policy.delay(transient_tries, failure.retry_after if failure else None)
            if delay is None:
                raise _Inconclusive(
                    f"{failure.kind if failure else 'transient failures'} persisted at "
                    f"{format_size(size)} after {transient_tries} tries; no cap is reported "
                    f"(try again later)"
                )
            await self.sleep(delay)

    async def try_size(self, size: int) -> tuple[Probe | None, str]:
        """Send one body of `size` (e.g. the route's floor on its own), transient answers retried: the probe
        reported for it, or (None, why no answer came)."""
        try:
            await self._accepts(size)
        except _Inconclusive as stop:
            return None, stop.message
        return self.probes[-1], ""

    @staticmethod
    def _drop_failure(size: int, failure: Failure | None, why: str) -> Failure:
        evidence = tuple(e for e in (failure.evidence if failure else ()) if not e.startswith("rule "))
        return Failure(
            kind="connection_drop",
            payload_related=True,
            recoverable=True,
            rejected_bytes=size,
            reason=f"the connection is reset while sending {format_size(size)} ({why})",
            evidence=evidence + (f"reset at {size:,} bytes: {why}", "rule net.reset-by-size"),
            rule_id="net.reset-by-size",
        )

    def _judge(self, answer: ProbeAnswer) -> tuple[str, Failure | None]:
        if answer.error is None:
            return "passed", None
        from app.engine.sender import redact_failure

        failure = redact_failure(
            classify(
                answer.error,
                drop_threshold=self.drop_threshold,
                size_evidence=self.sizes,
                user_rules=self.user_rules,
            )
        )
        if answer.error.transport == "connection" or failure.kind == "connection_drop":
            return "dropped", failure
        if failure.kind in REJECTION_KINDS and failure.payload_related:
            return "rejected", failure
        if (
            failure.kind in ("context_overflow", "other")
            and not failure.transient
            and answer.status
            and 400 <= answer.status < 500
            and not _html(answer.error)
        ):
            return (
                "passed",
                failure,
            )  # the provider answered (e.g. our max_tokens: 0): the gateway let it through
        if failure.transient or failure.kind in ("rate_limit", "overloaded", "server_error", "timeout"):
            return "transient", failure
        return "error", failure

    def _report(self, answer: ProbeAnswer, verdict: str, failure: Failure | None) -> None:
        probe = Probe(
            number=len(self.probes) + 1,
            size=answer.size,
            verdict=verdict,
            status=answer.status,
            kind=failure.kind if failure else None,
            reason=(failure.reason if failure else "accepted"),
            evidence=tuple(failure.evidence) if failure else (),
            latency_ms=answer.latency_ms,
        )
        self.probes.append(probe)
        if self.on_probe is not None:
            self.on_probe(probe)


def _html(error: ProviderError) -> bool:
    body = (error.body or "").lstrip().lower()
    return body.startswith("<") or error.transport == "html-200"


async def timed(send: Callable[[], Awaitable[tuple[int, int | None]]], size: int) -> ProbeAnswer:
    """Run one adapter probe call — `send()` gives (status, bytes sent) — as a ProbeAnswer."""
    started = time.monotonic()
    try:
        status, sent = await send()
    except ProviderError as error:
        return ProbeAnswer(
            error.request_bytes or size, error.status, (time.monotonic() - started) * 1000, error
        )
    return ProbeAnswer(sent or size, status or 200, (time.monotonic() - started) * 1000)
