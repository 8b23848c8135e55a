"""What the TUI does around its first frame: find its stylesheet, tune the collector, import the SDK early.

tune_gc()                              # fewer full collections while answers stream
collect_for_paging(True)               # smaller full collections while the user pages back through history
prewarm_in_background("anthropic")     # import the route's SDK in a daemon thread
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import sys
import threading
from pathlib import Path

SDK_MODULES = {"anthropic": "anthropic", "lab": "anthropic", "openai": "openai", "bedrock": "boto3"}
GC_YOUNG_THRESHOLD = 5_000  # allocations between young collections (Python's default: 700); see tune_gc
GC_FULL_EVERY = 10  # middle-generation collections between full ones (Python's default)
GC_FULL_EVERY_PAGING = 2  # the same while the user pages through the history; see collect_for_paging


def styles_path(name: str = "app.tcss") -> Path:
    """`styles/NAME` in a checkout, or `app/styles/NAME` in an installed wheel."""
    here = Path(__file__).resolve()
    for folder in (here.parents[2] / "styles", here.parents[1] / "styles"):
        if (folder / name).is_file():
            return folder / name
    return here.parents[2] / "styles" / name


def prewarm_sdk(provider: str) -> None:
    """Import the route's SDK now (0.6–1.6 s) so the first request does not wait, then freeze what is alive.

    Freezing (`gc.freeze`) moves the objects alive now — the app's and the SDK's modules, classes and
    tables, ~175,000 of them, which live as long as the process — out of the cyclic collector's reach.
    With them in, every full collection took 60–190 ms, a stall the user sees while an answer streams.
    """
    name = SDK_MODULES.get(provider)
    if name:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    gc.freeze()


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


def prewarm_in_background(provider: str) -> threading.Thread | None:
    """`prewarm_sdk` in a daemon thread: quitting does not wait for it (a worker thread would be joined)."""
    name = SDK_MODULES.get(provider)
    if not name:
        return None
    if name in sys.modules:
        if not gc.get_freeze_count():  # a first prompt sent at once imported it: freeze as the import would
            gc.freeze()
        return None
    thread = threading.Thread(target=lambda: prewarm_sdk(provider), name=f"import {name}", daemon=True)
    thread.start()
    return thread
