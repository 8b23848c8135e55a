"""Ladder panel: the recovery ladder L0–L3, the current attempt, attempts left, the last failure.

L0 is the request as built from the view; L1 repairs tool pairing, halves the tool-result
budgets and cuts long assistant messages; L2 keeps the last 10 messages; L3 the last 4,
shrunk to fit. Each attempt's outcome is listed (sending, not_smaller, over_cap, succeeded,
failed, exhausted, refused). A new turn resets the ladder to L0; the last recovery's
summary stays.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import tzinfo

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from app.model.events import Event, RecoveryStep, Rejection, RequestFinished, Retry, TurnStarted
from app.model.levels import LADDER_STEPS
from app.sizes import format_size
from app.ui.widgets.common import Clock, Panel, copy_binding, one_line, setting_default

STEPS = LADDER_STEPS
MAX_ATTEMPT_ROWS = 8


@dataclass(frozen=True)
class AttemptRow:
    attempt: int
    level: int
    outcome: str
    bytes_before: int | None = None
    bytes_after: int | None = None
    reason: str = ""


class LadderPanel(Panel):
    NAME = "ladder"
    TITLE = "Recovery ladder"
    HANDLES = (RecoveryStep, Rejection, RequestFinished, Retry, TurnStarted)
    BINDINGS = [copy_binding("ladder", "the ladder's state and the last failure")]
    HELP = """\
## Recovery ladder

When the provider or a gateway rejects a request **before any output became visible**,
bulkhead walks a ladder, one level per attempt (at most 3):

- **L0** — the request as built from the active view (what was rejected).
- **L1** — repair tool pairing, halve tool-result budgets, cut long assistant messages.
- **L2** — keep the system prompt and the last 10 messages; the rest is archived.
- **L3** — keep the last 4 messages, each capped, then shrink the largest until it fits.

An attempt whose request is **not smaller** than the rejected one (or still above a learned
cap) is not sent. Success commits the new view; failure of every attempt leaves the
conversation unchanged. Everything dropped is in the Archive panel (`/rewind compact` undoes).
"""

    def __init__(self, *, clock: Clock = time.time, tz: tzinfo | None = None) -> None:
        super().__init__(clock=clock, tz=tz)
        self.level = 0
        self.attempt = 0
        self.max_attempts: int = setting_default("max_recovery_attempts")
        self.outcome = "idle"
        self.attempts: list[AttemptRow] = []
        self.failure_kind = ""
        self.failure_reason = ""
        self.failure_status: int | None = None
        self.failure_bytes: int | None = None
        self.last_recovery = ""
        self.retry_text = ""

    @property
    def attempts_left(self) -> int:
        return max(0, self.max_attempts - self.attempt)

    def compose(self) -> ComposeResult:
        with Horizontal(id="ladder-steps"):
            for index, (name, words) in enumerate(STEPS):
                yield Static(
                    f"{name} {words}", id=f"ladder-step-{index}", classes="ladder-step", markup=False
                )
        yield Static(id="ladder-attempt", classes="panel-line", markup=False)
        yield Static(id="ladder-failure", classes="panel-detail", markup=False)
        yield Static(id="ladder-attempts", classes="panel-detail", markup=False)
        yield Static(id="ladder-last", classes="panel-detail", markup=False)

    # -- events ----------------------------------------------------------------------------------------
    def on_engine_event(self, event: Event) -> None:
        if isinstance(event, TurnStarted):
            self.level, self.attempt, self.outcome = 0, 0, "idle"
            self.attempts = []
            self.retry_text = ""
        elif isinstance(event, Rejection):
            self.failure_kind = event.kind
            self.failure_reason = event.reason
            self.failure_status = event.status
            self.failure_bytes = event.bytes
        elif isinstance(event, RecoveryStep):
            self._on_step(event)
        elif isinstance(event, RequestFinished):
            if event.kind and self.attempt and event.level > 0 and self.outcome == "sending":
                # The attempt's request was rejected again: the next RecoveryStep (or none) follows.
                self.outcome = "failed"
                self._upsert(
                    replace(
                        self._current_row(),
                        outcome="failed",
                        reason=event.reason or self._current_row().reason,
                    )
                )
            elif not event.kind:
                self.retry_text = ""
        elif isinstance(event, Retry):
            self.retry_text = (
                f"retry {event.attempt}/{event.max_attempts} after {event.kind} in {event.delay_s:.1f} s"
            )
        self.sync()

    def _on_step(self, event: RecoveryStep) -> None:
        self.max_attempts = event.max_attempts or self.max_attempts
        self.level = max(0, min(3, event.level))
        self.attempt = event.attempt
        self.outcome = event.outcome
        if event.kind:
            self.failure_kind = event.kind
        if event.outcome in ("exhausted", "refused"):
            why = one_line(event.reason, 160)
            self.last_recovery = (
                f"recovery exhausted after {event.attempt} attempt{'s' if event.attempt != 1 else ''}: {why}"
                if event.outcome == "exhausted"
                else f"recovery refused: {why}"
            )
            if event.outcome == "exhausted" and self.attempts and self.attempts[-1].outcome == "sending":
                self._upsert(replace(self.attempts[-1], outcome="failed"))
            return
        self._upsert(
            AttemptRow(
                event.attempt, event.level, event.outcome, event.bytes_before, event.bytes_after, event.reason
            )
        )
        if event.outcome == "succeeded":
            kind = f" ({event.kind})" if event.kind else ""
            self.last_recovery = (
                f"recovered at L{event.level} on attempt {event.attempt}/{event.max_attempts}: "
                f"{format_size(event.bytes_before)} → {format_size(event.bytes_after)}{kind}"
            )

    def _current_row(self) -> AttemptRow:
        for row in self.attempts:
            if row.attempt == self.attempt:
                return row
        return AttemptRow(self.attempt, self.level, self.outcome)

    def _upsert(self, row: AttemptRow) -> None:
        for index, existing in enumerate(self.attempts):
            if existing.attempt == row.attempt:
                keep_sizes = row.bytes_after is None and existing.bytes_after is not None
                self.attempts[index] = (
                    replace(row, bytes_before=existing.bytes_before, bytes_after=existing.bytes_after)
                    if keep_sizes
                    else row
                )
                return
        self.attempts.append(row)
        del self.attempts[:-MAX_ATTEMPT_ROWS]

    def on_session_shown(self) -> None:
        if self.source is not None:
            self.max_attempts = self.source.max_recovery_attempts
        self.sync()

    def copy_text(self) -> str:
        if not self.ready:
            return ""
        parts = [
            f"Recovery ladder: L{self.level}",
            str(self.query_one("#ladder-attempt", Static).render()),
            str(self.query_one("#ladder-failure", Static).render()),
        ]
        if self.attempts:
            parts.append(str(self.query_one("#ladder-attempts", Static).render()))
        if self.last_recovery:
            parts.append(f"last recovery: {self.last_recovery}")
        return "\n".join(parts)

    # -- rendering ---------------------------------------------------------------------------------------
    def sync(self) -> None:
        if not self.ready:
            return
        finished = self.outcome in ("succeeded", "exhausted", "refused")
        for index in range(len(STEPS)):
            step = self.query_one(f"#ladder-step-{index}", Static)
            current = index == self.level
            step.set_class(current, "-current")
            step.set_class(index < self.level, "-passed")
            step.set_class(current and self.outcome == "succeeded", "-succeeded")
            step.set_class(current and self.outcome in ("exhausted", "refused", "failed"), "-failed")
            step.set_class(current and not finished and self.outcome not in ("idle", "failed"), "-active")
        if self.attempt == 0 and self.outcome == "idle":
            attempt_text = f"idle · {self.max_attempts} attempts available"
        else:
            attempt_text = (
                f"attempt {self.attempt} of {self.max_attempts} · {self.attempts_left} left · {self.outcome}"
            )
        if self.retry_text:
            attempt_text += f" · {self.retry_text}"
        self.query_one("#ladder-attempt", Static).update(attempt_text)
        failure = self.query_one("#ladder-failure", Static)
        if self.failure_kind:
            status = f" {self.failure_status}" if self.failure_status else ""
            size = f" · {format_size(self.failure_bytes)}" if self.failure_bytes else ""
            reason = f" — {one_line(self.failure_reason, 200)}" if self.failure_reason else ""
            failure.update(f"last failure: {self.failure_kind}{status}{size}{reason}")
        else:
            failure.update("last failure: none")
        rows = self.query_one("#ladder-attempts", Static)
        rows.display = bool(self.attempts)
        rows.update(
            "\n".join(
                f"{row.attempt}. L{row.level} {row.outcome:<11} "
                f"{format_size(row.bytes_before)} → {format_size(row.bytes_after)}"
                for row in self.attempts
            )
        )
        last = self.query_one("#ladder-last", Static)
        last.display = bool(self.last_recovery)
        last.update(f"last recovery: {self.last_recovery}")
