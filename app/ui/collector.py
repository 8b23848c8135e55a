"""How often Python's cyclic collector runs in the TUI (the SDK import's `gc.freeze` is in `startup`).

tune_gc()                              # fewer full collections while answers stream
collect_for_paging(True)               # smaller full collections while the user pages back through history
"""

from __future__ import annotations

import gc

GC_YOUNG_THRESHOLD = 5_000  # allocations between young collections (Python's default: 700); see tune_gc
GC_FULL_EVERY = 10  # middle-generation collections between full ones (Python's default)
GC_FULL_EVERY_PAGING = 2  # the same while the user pages through the history; see collect_for_paging


def tune_gc() -> None:
    """Fewer cyclic collections: a young-generation threshold of `GC_YOUNG_THRESHOLD` allocations.

    A streamed answer allocates fast (frames, strips, events); at the default (700) the collector ran
    a full collection every second or so while streaming, each 50–110 ms here — the largest stalls
    left once answers stopped mounting widgets. Young collections get a little longer (≈1–4 ms).
    """
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, GC_FULL_EVERY)


def collect_for_paging(paging: bool) -> None:
    """Full collections in smaller batches while the user pages back through the history (`paging`).

    Paging mounts items at one end of the chat and removes as many at the other; a removed Textual widget
    is a reference cycle (~130 objects) freed only by a full collection. At `GC_FULL_EVERY` a full collection
    came every ~500,000 allocations with ~125,000 dead objects to free: 250–450 ms, the longest stall while
    paging. Every `GC_FULL_EVERY_PAGING` middle collections they are 50–90 ms. While the chat follows the
    end (an answer streaming) they stay rare: a stream's garbage is freed without the collector.
    """
    young, middle, _old = gc.get_threshold()
    gc.set_threshold(young, middle, GC_FULL_EVERY_PAGING if paging else GC_FULL_EVERY)
