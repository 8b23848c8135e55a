"""When the main screen draws: at once when something changed, at most `MAX_FPS` times a second.

Textual's screen draws on a 60 Hz interval timer that it pauses after each frame and resumes when a
widget asks to be drawn again. After a frame the timer skips the tick of its fixed grid that it is late
for and sleeps to the next one, 16.7–33 ms ahead: a change made meanwhile waited for that tick, whatever
the frame cost. While an answer streamed at 2,000 tokens a second
and the user typed, the answer's 40 Hz flushes met that grid out of step: frame gaps of 50–65 ms at the
99th percentile and keys 65–90 ms from the press to the screen (`bench/tui_stream.py`).

`FrameTimer` draws as soon as it is asked, once `1 / MAX_FPS` has passed since the last frame began
(Textual's `TEXTUAL_FPS`, 60 by default): a change after a quiet moment is drawn at once, and a screen
that changes all the time is still drawn at most 60 times a second. After a frame that took longer than
that (a resume laying out its history, a page of items going in) it waits two periods, as Textual's
timer would: drawing does not crowd out the work that makes the next frame worth drawing.
"""

from __future__ import annotations

from textual import _time
from textual.constants import MAX_FPS
from textual.screen import Screen
from textual.timer import EventTargetGone, Timer

from app.ui.textual_ext import gate

FRAME_PERIOD_S = 1 / MAX_FPS  # the least time between the starts of two frames


def reliance() -> list[str]:
    """What `FrameTimer` and the main screen's `_update_timer` rely on that this Textual lacks ([] = holds):
    the screen must still take its update timer from the `_update_timer` property (else ours is never asked
    for), and the timer must still run `_run` / `_tick` / `_start`."""
    missing = []
    if not isinstance(Screen.__dict__.get("_update_timer"), property):
        missing.append("Screen._update_timer is no longer a property")
    missing += gate.missing_attributes(Screen, ["_on_timer_update"])
    missing += gate.missing_attributes(Timer, ["_run", "_tick", "_start", "pause", "resume"])
    missing += gate.missing_attributes(_time, ["get_time", "sleep"])
    return missing


def frames_hold() -> bool:
    """Whether the main screen may use a `FrameTimer` (logged once when not)."""
    return gate.holds("frames", reliance())


class FrameTimer(Timer):
    """A timer that ticks as soon as it is resumed, `interval` after its last tick began at the earliest (two
    intervals after a tick that took longer than one). Textual's ticks on a fixed grid and skips late ticks."""

    async def _run(self) -> None:
        due = _time.get_time()
        while True:
            await self._active.wait()
            wait = due - _time.get_time()
            if wait > 0:
                await _time.sleep(wait)
                await self._active.wait()  # paused meanwhile (the screen drew another way): wait again
            start = _time.get_time()
            try:
                await self._tick(next_timer=start, count=0)
            except EventTargetGone:
                break
            took = _time.get_time() - start
            due = start + self._interval * (2 if took > self._interval else 1)


def frame_timer(screen: Screen) -> Timer:
    """An update timer for `screen` (what Textual's `Screen._update_timer` makes, but a `FrameTimer`)."""
    timer = FrameTimer(
        screen, FRAME_PERIOD_S, name="screen_update", callback=screen._on_timer_update, pause=True
    )
    timer._start()
    screen._timers.add(timer)
    return timer
