"""Textual's `Strip` (one drawn line) with five of its seven caches made when a line first uses one.

Every line a widget draws is a `Strip`, and each `Strip` makes seven `FIFOCache`s when it is built (for
its crops, styles, filters, divisions…). Two are used by every line the compositor draws (its filters
and its division into the screen's cuts: ~100,000 reads each in a ten-second stream); the other five by
few lines (a few thousand reads) or none. Building the caches was ~60 % of building a line, and each is
an object Python's cyclic collector has to walk: after paging back through a long session a quarter of
the live objects were those caches (26,700 of 103,000), and a full collection took 60–140 ms.

`make_strip_caches_lazy()` keeps the two hot caches as Textual makes them (read straight from their
slots) and makes each of the five others when it is first read (a property over the same slot: the
same size, the same contents). And three methods stop caching a line as its own result (a division at its
end, the same cell length, a crop-extend to itself): that made every full-width line a reference cycle
(the line → its cache → the line) that only a full collection could free. Called once, when the TUI starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.segment import Segment
from textual.cache import FIFOCache
from textual.strip import Strip

from app.ui.textual_ext import gate

# Strip's cache slots and their sizes, as `Strip.__init__` (Textual 8.2) makes them: made with the line,
# read for every line drawn (a property in their place would cost more than it saves) …
EAGER_CACHE_SIZES = {"_divide_cache": 4, "_filter_cache": 4}
# … and made on first use.
CACHE_SIZES = {
    "_crop_cache": 16,
    "_style_cache": 16,
    "_line_length_cache": 4,
    "_crop_extend_cache": 4,
    "_offsets_cache": 4,
}
# Every slot `_init` below sets, and so every slot Strip may have: a slot Textual adds later would be left
# unset by `_init` (and raise AttributeError when first read), so any difference turns the patch off.
KNOWN_SLOTS = frozenset(
    {
        "_segments",
        "_cell_length",
        "_render_cache",
        "_link_ids",
        "_cell_count",
        *EAGER_CACHE_SIZES,
        *CACHE_SIZES,
    }
)
PATCHED_METHODS = ("divide", "adjust_cell_length", "crop_extend")


def reliance(slots: Iterable[str]) -> list[str]:
    """What this patch relies on that a `Strip` with these slots lacks or adds ([] when it holds)."""
    slots = set(slots)
    missing = [f"Strip slot {name} is gone" for name in sorted(KNOWN_SLOTS - slots)]
    missing += [
        f"Strip slot {name} is new (this patch would not set it)" for name in sorted(slots - KNOWN_SLOTS)
    ]
    return missing + gate.missing_attributes(Strip, PATCHED_METHODS)


def _lazy_slot(name: str, size: int) -> property:
    slot = Strip.__dict__[name]  # the slot's own descriptor: where the cache is kept

    def get(strip: Strip) -> FIFOCache:
        try:
            return slot.__get__(strip, Strip)
        except AttributeError:
            cache: FIFOCache = FIFOCache(size)
            slot.__set__(strip, cache)
            return cache

    return property(get, slot.__set__, doc=f"Strip.{name}, made on first use")


def _init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    self._segments = list(segments)
    self._cell_length = cell_length
    self._divide_cache = FIFOCache(EAGER_CACHE_SIZES["_divide_cache"])
    self._filter_cache = FIFOCache(EAGER_CACHE_SIZES["_filter_cache"])
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


_textual_divide = Strip.divide
_textual_adjust_cell_length = Strip.adjust_cell_length
_textual_crop_extend = Strip.crop_extend


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    """`Strip.divide`; a line cut only at its end (most lines the compositor draws) is itself, not cached."""
    cell_length = self.cell_length
    kept = [cut for cut in cuts if cut <= cell_length]
    if kept == [cell_length]:
        return [self]
    return _textual_divide(self, kept)


def _adjust_cell_length(self: Strip, cell_length: int, style=None) -> Strip:
    """`Strip.adjust_cell_length`; a line of that length already is itself, not cached."""
    if cell_length == self.cell_length:
        return self
    return _textual_adjust_cell_length(self, cell_length, style)


def _crop_extend(self: Strip, start: int, end: int, style) -> Strip:
    """`Strip.crop_extend`; the whole line is itself, not cached."""
    if start == 0 and end == self.cell_length:
        return self
    return _textual_crop_extend(self, start, end, style)


def make_strip_caches_lazy() -> bool:
    """Make five of `Strip`'s caches on first use and stop a line caching itself as its own result
    (idempotent); False, changing nothing, when `Strip` is not the one this was written for (a slot missing,
    renamed or added: `reliance`)."""
    if getattr(Strip, "_bulkhead_lazy_caches", False):
        return True
    if not gate.holds("strip_caches", reliance(Strip.__slots__)):
        return False
    for name, size in CACHE_SIZES.items():
        setattr(Strip, name, _lazy_slot(name, size))
    Strip.__init__ = _init  # type: ignore[method-assign]
    Strip.divide = _divide  # type: ignore[assignment,method-assign]
    Strip.adjust_cell_length = _adjust_cell_length  # type: ignore[method-assign]
    Strip.crop_extend = _crop_extend  # type: ignore[method-assign]
    Strip._bulkhead_lazy_caches = True  # type: ignore[attr-defined]
    return True
