"""A drawn line (`Strip`) makes the caches few lines use when one is used, not when it is built
(`make_strip_caches_lazy`); the two every drawn line reads are made with it, as Textual makes them."""

from __future__ import annotations

import gc

from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.strip import Strip

from app.ui.textual_ext.strip_caches import CACHE_SIZES, EAGER_CACHE_SIZES, make_strip_caches_lazy


def caches_of(strip: Strip) -> list[FIFOCache]:
    return [ref for ref in gc.get_referents(strip) if isinstance(ref, FIFOCache)]


def test_a_new_line_has_only_the_two_hot_caches_until_it_is_cropped_then_the_crop_is_cached() -> None:
    assert make_strip_caches_lazy()
    strip = Strip([Segment("hello "), Segment("world", Style(bold=True))], 11)
    hot = caches_of(strip)  # Textual's own Strip makes seven here
    assert sorted(cache._maxsize for cache in hot) == sorted(EAGER_CACHE_SIZES.values())
    assert strip._filter_cache in hot and strip._divide_cache in hot
    part = strip.crop(2, 8)
    assert part.text == "llo wo" and part.cell_length == 6
    assert strip.crop(2, 8) is part  # the second crop comes from the cache
    (cache,) = [cache for cache in caches_of(strip) if cache not in hot]
    assert cache._maxsize == CACHE_SIZES["_crop_cache"]
    assert strip.text == "hello world" and strip.cell_length == 11


def test_every_cache_a_line_uses_is_made_once_and_kept() -> None:
    assert make_strip_caches_lazy()
    strip = Strip([Segment("abcdef")], 6)
    styled = strip.apply_style(Style(italic=True))
    assert strip.apply_style(Style(italic=True)) is styled
    assert strip.divide([2, 4, 6]) is strip.divide([2, 4, 6])
    assert strip.crop_extend(1, 9, None) is strip.crop_extend(1, 9, None)
    assert strip.apply_offsets(3, 4) is strip.apply_offsets(3, 4)
    assert strip.adjust_cell_length(9) is strip.adjust_cell_length(9)
    assert len(caches_of(strip)) == 2 + 4  # the hot two, then style, crop-extend, offsets, cell length
    assert make_strip_caches_lazy()  # a second call changes nothing
    assert len(caches_of(Strip([Segment("x")], 1))) == 2


def test_a_strip_it_was_not_written_for_is_left_as_it_is(monkeypatch) -> None:
    monkeypatch.delattr(Strip, "_bulkhead_lazy_caches", raising=False)
    monkeypatch.setattr(Strip, "__slots__", ["_segments", "_cell_length"])  # as if Textual renamed the caches
    init = Strip.__init__
    assert make_strip_caches_lazy() is False
    assert Strip.__init__ is init


def test_a_line_is_never_cached_as_its_own_result() -> None:
    """A line divided only at its end, adjusted to its own length or crop-extended to itself is itself, as in
    Textual, but not kept in its own cache: that made each such line a reference cycle (most lines the
    compositor draws) that only a full collection freed."""
    assert make_strip_caches_lazy()
    strip = Strip([Segment("abc"), Segment("def", Style(bold=True))], 6)
    assert strip.divide([6]) == [strip] and strip.divide([6, 9]) == [strip]
    assert strip.adjust_cell_length(6) is strip
    assert strip.crop_extend(0, 6, None) is strip
    assert strip.crop(0, 6) is strip
    assert not gc.get_referrers(strip)  # nothing refers to it: freed when dropped, no collection needed
    parts = strip.divide([2, 6])
    assert [part.text for part in parts] == ["ab", "cdef"] and strip.divide([2, 6]) is parts
    assert strip.adjust_cell_length(4).text == "abcd" and strip.crop_extend(1, 8, None).text == "bcdef  "
