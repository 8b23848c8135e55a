"""Streaming quirks of the path to an endpoint, judged from the timing of one streamed answer.

- **buffered SSE**: something on the way (nginx compressing `text/event-stream`, a proxy, an API gateway)
  holds the event stream and lets it through at the end — the answer's events arrive in one burst after
  a wait, instead of spread over the answer. Judged on answers of at least `BUFFERED_MIN_EVENTS` events
  that took `BUFFERED_MIN_SECONDS` or more: the spread of their arrivals is under `BUFFERED_SPREAD` of the
  time to the last one.
- **idle cut**: the stream failed after `IDLE_CUT_MIN_SECONDS` or more of silence — an idle timeout
  (`proxy_read_timeout`, a load balancer's idle timeout) cut it. The silence is recorded: it is about the
  idle limit on the way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BUFFERED_MIN_EVENTS = 8
BUFFERED_MIN_SECONDS = 1.0
BUFFERED_SPREAD = 0.1
IDLE_CUT_MIN_SECONDS = 1.0


@dataclass
class StreamTiming:
    """Arrival times (monotonic seconds) of one request's stream events."""

    started: float
    arrivals: list[float] = field(default_factory=list)

    def saw(self, at: float) -> None:
        self.arrivals.append(at)


@dataclass(frozen=True)
class StreamObservation:
    """What one streamed request showed: `failed_at` set when the stream failed (after `arrivals`)."""

    started: float
    arrivals: tuple[float, ...]
    failed_at: float | None = None
    transport_failure: bool = False  # the failure was the connection (a cut), not an error answer


def buffered(observation: StreamObservation) -> str | None:
    """A sentence when the answer looks held back and released at once; None otherwise."""
    arrivals = observation.arrivals
    if observation.failed_at is not None or len(arrivals) < BUFFERED_MIN_EVENTS:
        return None
    total = arrivals[-1] - observation.started
    spread = arrivals[-1] - arrivals[0]
    if total < BUFFERED_MIN_SECONDS or spread > BUFFERED_SPREAD * total:
        return None
    return (
        f"{len(arrivals)} stream events arrived within {spread * 1000:.0f} ms after a {total:.1f} s wait — "
        f"something on the way buffers the event stream (a compressing or buffering proxy, an API gateway)"
    )


def idle_cut(observation: StreamObservation) -> float | None:
    """The silence before a stream was cut, when it looks like an idle timeout; None otherwise."""
    if observation.failed_at is None or not observation.transport_failure:
        return None
    last = observation.arrivals[-1] if observation.arrivals else observation.started
    silence = observation.failed_at - last
    return silence if silence >= IDLE_CUT_MIN_SECONDS else None
