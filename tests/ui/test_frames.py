"""When the main screen draws (`app.ui.textual_ext.frames`): a change at once, at most one frame per period.

Counted, never timed: the timers here have periods far longer than the test (a tick that waited for one
would never come) or far shorter than what the test waits for.
"""

from __future__ import annotations

import asyncio

from textual.app import App
from textual.timer import Timer

from app.ui.headless import ready, until
from app.ui.textual_ext.frames import FrameTimer
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app

HOUR = 3600.0


def ticking(app: App, cls: type[Timer], interval: float) -> tuple[Timer, list[int]]:
    """A paused timer on the app's screen that, like the screen's update timer, pauses itself on each tick."""
    ticks = [0]

    def tick() -> None:
        timer.pause()
        ticks[0] += 1

    timer = cls(app.screen, interval, callback=tick, pause=True)
    timer._start()
    return timer, ticks


async def test_a_resumed_frame_timer_ticks_at_once_and_not_again_within_its_period():
    async with App().run_test() as pilot:
        timer, ticks = ticking(pilot.app, FrameTimer, HOUR)
        await pilot.pause(0.1)
        assert ticks == [0]  # paused: nothing asked for a frame
        timer.resume()
        await until(pilot, lambda: ticks[0] == 1, "the tick a resume asks for")
        timer.resume()  # asked again at once: the next frame waits out the period (an hour here)
        await pilot.pause(0.2)
        assert ticks == [1]
        timer.stop()


async def test_textual_s_own_timer_makes_a_resumed_frame_wait_for_its_next_tick():
    """What `FrameTimer` fixes: Textual's interval timer, resumed, waits for its grid (an hour here). A check on
    Textual, not on bulkhead: if a Textual release changes this, `FrameTimer` (which replaces `Timer._run`) must
    be looked at again."""
    async with App().run_test() as pilot:
        timer, ticks = ticking(pilot.app, Timer, HOUR)
        timer.resume()
        await pilot.pause(0.2)
        assert ticks == [0]
        timer.stop()


async def test_a_frame_timer_paused_while_it_waits_out_its_period_does_not_tick_until_resumed():
    async with App().run_test() as pilot:
        timer, ticks = ticking(pilot.app, FrameTimer, 0.05)
        timer.resume()
        await until(pilot, lambda: ticks[0] == 1, "the first tick")
        timer.resume()
        timer.pause()  # the screen drew another way (a layout on resize) before the period was out
        await asyncio.sleep(0.3)
        assert ticks == [1]
        timer.resume()
        await until(pilot, lambda: ticks[0] == 2, "the tick the second resume asks for")
        timer.stop()


async def test_the_main_screen_draws_a_typed_key_with_a_frame_timer(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert isinstance(app.screen._update_timer, FrameTimer)
        frames: list[str] = []
        display = app._display

        def drawn(screen, update):
            if update is not None:
                frames.append(app.prompt.text)
            return display(screen, update)

        app._display = drawn
        app.prompt.focus()
        await pilot.press("h", "i")
        await until(pilot, lambda: "hi" in frames, "a frame that shows the typed text")
