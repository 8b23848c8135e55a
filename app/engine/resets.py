"""Is a reset connection a size problem? The rules, shared by the classifier, the recovery and `bulkhead probe`.

A gateway with a body cap often says no by closing the connection (nginx `return 444`,
HAProxy `http-request reject`, a proxy that resets large uploads), and a flaky network says the same.
One reset proves nothing, so bulkhead judges a reset of a body of S bytes by evidence:

1. S ≥ `drop_payload_min_bytes` (500,000 by default, the seed's rule for a first reset);
2. this endpoint refused a body of R ≤ S before (413, WAF, a reset judged by size) and the
   largest body it accepted is smaller than S;
3. the previous request, the same S-byte body, was reset too, and the endpoint accepts
   smaller bodies (two identical resets in a row).

Anything else is treated as a transient network failure and retried. `SizeEvidence` is what
one endpoint has shown (the engine keeps one per route, the prober one per run).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.sizes import format_size

THRESHOLD = "threshold"
REFUSED_BEFORE = "refused-before"
REPEATED = "repeated"
UNPROVEN = "unproven"


@dataclass
class SizeEvidence:
    """Body sizes one endpoint accepted, refused and reset (in memory, for one route or one probe run)."""

    accepted_max: int | None = None  # the largest body that got an answer
    refused_min: int | None = None  # the smallest body refused for its size
    last_reset: int | None = None  # the body of the previous request, when it was reset

    def accepted(self, size: int | None) -> None:
        if size:
            self.accepted_max = max(self.accepted_max or 0, size)
        self.last_reset = None

    def refused(self, size: int | None) -> None:
        if size:
            self.refused_min = size if self.refused_min is None else min(self.refused_min, size)
        self.last_reset = None

    def reset(self, size: int | None) -> None:
        self.last_reset = size


@dataclass(frozen=True)
class ResetVerdict:
    payload: bool
    rule: str  # threshold | refused-before | repeated | unproven
    evidence: str  # one line for the classifier's evidence


def judge_reset(
    size: int | None,
    threshold: int,
    evidence: SizeEvidence | None = None,
    *,
    smaller_accepted_required: bool = True,
) -> ResetVerdict:
    """Is a reset of a `size`-byte body the gateway refusing its size? (rules 1–3 above)

    `smaller_accepted_required=False` is for the prober, whose bisection later shows whether
    smaller bodies pass (and reports no cap when none does).
    """
    if size is None:
        return ResetVerdict(
            False, UNPROVEN, f"request size unknown (drop threshold {format_size(threshold)})"
        )
    if size >= threshold:
        return ResetVerdict(
            True, THRESHOLD, f"request {format_size(size)} ≥ {format_size(threshold)} drop threshold"
        )
    ev = evidence or SizeEvidence()
    accepted = ev.accepted_max
    smaller_passed = accepted is not None and accepted < size
    if smaller_passed and ev.refused_min is not None and size >= ev.refused_min:
        return ResetVerdict(
            True,
            REFUSED_BEFORE,
            (
                f"request {format_size(size)} ≥ {format_size(ev.refused_min)}, the smallest body this endpoint "
                f"refused before (it accepted {format_size(accepted)})"
            ),
        )
    if ev.last_reset == size and (
        smaller_passed or (not smaller_accepted_required and (accepted is None or accepted < size))
    ):
        accepted_note = f"; it accepted {format_size(accepted)}" if accepted is not None else ""
        return ResetVerdict(
            True, REPEATED, f"the same {format_size(size)} body was reset twice in a row{accepted_note}"
        )
    return ResetVerdict(
        False,
        UNPROVEN,
        f"request {format_size(size)} < {format_size(threshold)} drop threshold"
        + (
            ""
            if ev.refused_min is None and ev.last_reset is None
            else ", and no repeated or larger refusal at this endpoint"
        ),
    )
