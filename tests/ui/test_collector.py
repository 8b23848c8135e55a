"""A removed widget is freed by reference counting once `Doomed` releases it; Textual alone leaves it (its
styles, its LRU caches) to a full collection. Paging in a real chat: tests/ui/test_chat_window.py."""

from __future__ import annotations

import gc
import weakref

from rich.segment import Segment
from textual.strip import Strip

from app.ui.chat_items import ToolBlock, UserItem
from app.ui.textual_ext.collector import Doomed


def cyclic_widgets() -> list[UserItem | ToolBlock]:
    """Widgets as removal leaves them: styles that point back at them, box models and a `query_one`
    answer (the widget itself) in Textual's LRU caches."""
    widgets = [UserItem("question"), ToolBlock("call-1", "shell", {"command": "ls"}, approvable=False)]
    for widget in widgets:
        for n in range(3):
            widget._box_model_cache.set(n, f"box model {n}")
        widget._query_one_cache.set(("Widget",), widget)
    return widgets


def test_a_released_widget_is_freed_at_once_and_drops_the_lines_it_drew() -> None:
    gc.disable()
    try:
        widgets = cyclic_widgets()
        refs = [weakref.ref(widget) for widget in widgets]
        lines = [widget._styles_cache for widget in widgets]  # kept alive by Textual's lru_cache, in the app
        for cache in lines:
            cache._cache[0] = Strip([Segment("a line drawn")], 12)
        doomed = Doomed.of(widgets)
        assert doomed.nodes == widgets  # unmounted: no children, no component-class nodes yet
        del widgets
        doomed.release()
        assert doomed.nodes == [] and doomed.links == []  # released once, holding nothing
        del doomed
        alive = [ref() for ref in refs if ref() is not None]
    finally:
        gc.enable()
    assert alive == []
    assert all(not cache._cache for cache in lines)


def test_textual_alone_leaves_a_removed_widget_to_the_collector() -> None:
    """The canary: when Textual's widgets stop being reference cycles, `Doomed` can go."""
    gc.disable()
    try:
        widgets = cyclic_widgets()
        refs = [weakref.ref(widget) for widget in widgets]
        del widgets
        alive = [ref() is not None for ref in refs]
    finally:
        gc.enable()
    assert alive == [True, True]
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
