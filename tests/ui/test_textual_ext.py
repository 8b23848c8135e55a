"""The version gate over bulkhead's patches on private Textual code (`app.ui.textual_ext`).

Each patch checks what it relies on in the installed Textual and stays off — stock behaviour, one log line —
when that does not hold, instead of failing later. Simulated here by taking away or adding what a Textual
release could change.
"""

from __future__ import annotations

import logging

import pytest
from rich.segment import Segment
from textual.screen import Screen
from textual.strip import Strip

from app.ui.headless import ready
from app.ui.textual_ext import (
    collector,
    frames,
    full_map,
    gate,
    layout_requests,
    quiet_resize,
    steady_scrollbars,
    strip_caches,
    terminal_keys,
)
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app


def test_the_installed_textual_is_the_one_every_patch_was_written_for() -> None:
    assert gate.textual_version() == gate.TESTED_TEXTUAL  # constraints.txt pins it; raise both together
    assert strip_caches.reliance(Strip.__slots__) == []
    assert collector.reliance() == []
    assert frames.reliance() == []
    assert full_map.reliance() == []
    assert layout_requests.reliance() == quiet_resize.reliance() == steady_scrollbars.reliance() == []
    assert isinstance(full_map.compositor(), full_map.FullMapCompositor)


def test_a_strip_with_a_cache_slot_textual_added_is_left_as_it_is(monkeypatch, caplog) -> None:
    """The old guard only checked that the known slots were there: a new slot passed it, the patched
    `__init__` never set it, and the first read raised AttributeError. Any difference now turns it off."""
    monkeypatch.delattr(Strip, "_bulkhead_lazy_caches", raising=False)
    monkeypatch.setattr(Strip, "__slots__", [*Strip.__slots__, "_glyph_cache"])
    init = Strip.__init__

    with caplog.at_level(logging.WARNING, logger="bulkhead.textual_ext"):
        assert strip_caches.make_strip_caches_lazy() is False

    assert Strip.__init__ is init
    assert Strip([Segment("x")], 1).cell_length == 1
    assert "_glyph_cache is new" in gate.report()["strip_caches"]
    assert any(
        "strip_caches is off" in r.getMessage() and gate.TESTED_TEXTUAL in r.getMessage()
        for r in caplog.records
    )


async def test_the_main_screen_draws_with_the_frame_timer_so_a_renamed_update_timer_fails_here(lab, tmp_path):
    """Textual must still ask the screen's `_update_timer` for its timer: if a release renames it, ours is
    never asked for and the screen's `_frames` stays unset — this test fails."""
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        assert isinstance(app.screen._frames, frames.FrameTimer)


def test_a_screen_whose_update_timer_is_gone_keeps_textual_s_own(monkeypatch) -> None:
    monkeypatch.delattr(Screen, "_update_timer")
    assert "Screen._update_timer is no longer a property" in frames.reliance()
    assert frames.frames_hold() is False


def test_a_widget_without_what_doomed_reads_is_left_to_the_collector(monkeypatch) -> None:
    from textual.widget import Widget

    monkeypatch.setattr(collector, "WIDGET_PRIVATES", (*collector.WIDGET_PRIVATES, "_render_lines_cache"))
    monkeypatch.setattr(collector, "_doomed_holds", None)

    doomed = collector.Doomed.of([Widget()])

    assert doomed.nodes == [] and doomed.links == []
    doomed.release()  # nothing to break: the collector frees them as it would without the patch
    assert gate.report()["collector"] == "off: Widget._render_lines_cache"


def test_a_key_table_textual_moved_leaves_the_keys_as_they_are(monkeypatch) -> None:
    from textual import _ansi_sequences

    monkeypatch.delattr(_ansi_sequences, "ANSI_SEQUENCES_KEYS")
    terminal_keys.install()  # no error
    assert gate.report()["terminal_keys"].startswith("off")


@pytest.fixture(autouse=True)
def _gate_state(monkeypatch):
    monkeypatch.setattr(gate, "_state", {})


def test_a_screen_without_the_layout_list_keeps_textual_s_handler(monkeypatch) -> None:
    monkeypatch.delattr(Screen, "_on_layout")
    assert "Screen._on_layout" in layout_requests.reliance()
    layout_requests.layout_holds.cache_clear()
    try:
        assert layout_requests.layout_holds() is False
        assert gate.report()["layout_requests"].startswith("off")
    finally:
        layout_requests.layout_holds.cache_clear()
