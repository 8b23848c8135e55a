"""How often Python's cyclic collector runs in the TUI (the SDK import's `gc.freeze` is in `startup`).

tune_gc()                              # fewer full collections while answers stream
doomed = Doomed.of(items); await chat.remove_children(items); doomed.release()   # freed at once
"""

from __future__ import annotations

import gc
from collections.abc import Iterable

from textual.dom import DOMNode
from textual.widget import Widget

from app.ui.textual_ext import gate

GC_YOUNG_THRESHOLD = 5_000  # allocations between young collections (Python's default: 700); see tune_gc
GC_FULL_EVERY = 10  # middle-generation collections between full ones (Python's default)


def tune_gc() -> None:
    """Fewer cyclic collections: a young-generation threshold of `GC_YOUNG_THRESHOLD` allocations.

    A streamed answer allocates fast (frames, strips, events); at the default (700) the collector ran
    a full collection every second or so while streaming, each 50–110 ms here — the largest stalls
    left once answers stopped mounting widgets. Young collections get a little longer (≈1–4 ms).
    """
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, GC_FULL_EVERY)


WIDGET_PRIVATES = (
    "_component_styles",
    "_query_one_cache",
    "_css_styles",
    "_inline_styles",
    "_styles_cache",
    "_box_model_cache",
)


def reliance(widget: Widget | None = None) -> list[str]:
    """What `Doomed` reads of a widget that `widget` (a fresh one by default) lacks ([] when it holds)."""
    widget = widget if widget is not None else Widget()
    missing = gate.missing_attributes(widget, WIDGET_PRIVATES)
    if not missing:
        for name in ("_query_one_cache", "_box_model_cache"):
            missing += gate.missing_attributes(getattr(widget, name), ["_cache"])
        missing += gate.missing_attributes(widget._css_styles, ["node"])
    return missing


_doomed_holds: bool | None = None


def doomed_holds() -> bool:
    """Whether `Doomed` may break cycles in this Textual (checked once); off, widgets wait for the collector."""
    global _doomed_holds
    if _doomed_holds is None:
        _doomed_holds = gate.holds("collector", reliance())
    return _doomed_holds


class Doomed:
    """Widgets about to be removed, to be freed by reference counting once they are.

    A removed Textual widget is kept alive by reference cycles: its `Styles` point back at it (`node`), and
    Textual's `LRUCache` (its box models, its `query_one` answers) is a ring of linked lists. So every
    widget taken off the chat (~115 objects with its styles, caches and node lists) waited for a full
    collection: paging back through a long session, 40,000 dead objects a collection, 100–170 ms each.
    `release()` breaks those cycles (and the main screen's compositor no longer keeps old maps alive, see
    `app.ui.textual_ext.full_map`): a whole PageUp run to the top of 4,000 messages without any full collection left
    ~1,400 dead objects for the collector instead of ~67,000.

    `Doomed.of(widgets)` is taken before the removal (Textual empties the component styles and the query
    cache as it removes a widget), `release()` after it. Styles without a node are what Textual's are
    before mounting (`refresh` does nothing): a test or a late callback holding a removed widget still
    reads its styles.
    """

    def __init__(self, nodes: list[DOMNode], links: list[list]) -> None:
        self.nodes = nodes  # the widgets and their descendants, and the nodes of their component classes
        self.links = links  # [previous, next, key, value] of their LRU caches

    @classmethod
    def of(cls, widgets: Iterable[Widget]) -> Doomed:
        nodes: list[DOMNode] = []
        links: list[list] = []
        if (
            not doomed_holds()
        ):  # Textual changed what this reads: nothing to release, the collector frees them
            return cls(nodes, links)
        for widget in widgets:
            for node in widget.walk_children(Widget, with_self=True):
                nodes.append(node)
                nodes.extend(styles.node for styles in node._component_styles.values() if styles.node)
                links.extend(node._query_one_cache._cache.values())
        return cls(nodes, links)

    def release(self) -> None:
        """After the removal: break the cycles and drop the lines each widget drew (once; the lists are
        emptied). The lines go even if something still holds a widget: Textual's `StylesCache.get_inner_outer`
        is an `lru_cache` that keeps up to 1,024 widgets' `StylesCache` (and the lines in it) alive."""
        for node in self.nodes:
            node._css_styles.node = None
            node._inline_styles.node = None
            if isinstance(node, Widget):
                node._styles_cache.clear()
                self.links.extend(node._box_model_cache._cache.values())
                node._box_model_cache.clear()
        for link in self.links:
            link.clear()
        self.nodes.clear()
        self.links.clear()
