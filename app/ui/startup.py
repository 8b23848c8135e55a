"""What the TUI does around its first frame: find its stylesheet, import the SDK early.

prewarm_in_background("anthropic")     # import the route's SDK (and compile common lexers) in a daemon thread
prewarm_in_background("lab", then=f)   # ... and then f() in that thread (first=g: g() before the import)
"""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from app.ui.markdown.painter import lexers_warm, warm_lexers

SDK_MODULES = {"anthropic": "anthropic", "lab": "anthropic", "openai": "openai", "bedrock": "boto3"}


def styles_path(name: str = "app.tcss") -> Path:
    """`styles/NAME` in a checkout, or `app/styles/NAME` in an installed wheel."""
    here = Path(__file__).resolve()
    for folder in (here.parents[2] / "styles", here.parents[1] / "styles"):
        if (folder / name).is_file():
            return folder / name
    return here.parents[2] / "styles" / name


def collect_from_now() -> None:
    """The first frame is drawn: turn the cyclic collector back on if the command line paused it for the start
    (`app.cli.main`), freezing what the start made first — the modules, classes, stylesheets and widgets that
    live as long as the app (`prewarm_sdk` freezes what the SDK's import adds in the same way) — so no
    collection walks them again. Nothing when the collector was on (an app built by a test)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def prewarm_sdk(
    provider: str, then: Callable[[], None] | None = None, first: Callable[[], None] | None = None
) -> None:
    """`first()`; import the route's SDK now (0.6–1.6 s) so the first request does not wait, compile the lexers
    of the languages answers fence most (`warm_lexers`, 60–90 ms), then freeze what is alive; then `then()`.

    Freezing (`gc.freeze`) moves the objects alive now — the app's and the SDK's modules, classes and
    tables, ~175,000 of them, which live as long as the process — out of the cyclic collector's reach.
    With them in, every full collection took 60–190 ms, a stall the user sees while an answer streams.
    """
    if first is not None:
        first()
    name = SDK_MODULES.get(provider)
    if name:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):  # a faster first code block; nothing breaks without it
        warm_lexers()
    gc.freeze()
    if then is not None:
        then()


def prewarm_in_background(
    provider: str, then: Callable[[], None] | None = None, first: Callable[[], None] | None = None
) -> threading.Thread | None:
    """`prewarm_sdk` in a daemon thread: quitting does not wait for it (a worker thread would be joined).
    `first`: to do in that thread before the import (a long session's older messages decoded); `then`: once
    the rest is done (the resumed view measured, `Engine.warm_sizes`)."""
    name = SDK_MODULES.get(provider)
    if not name or (name in sys.modules and lexers_warm()):  # nothing to import or compile

        def target() -> None:
            if first is not None:
                first()
            # a first prompt sent at once imported the SDK: freeze as the import would
            if name and not gc.get_freeze_count():
                gc.freeze()
            if then is not None:
                then()

        if first is None and then is None:
            target()
            return None
    else:
        target = functools.partial(prewarm_sdk, provider, then, first)
    thread = threading.Thread(target=target, name=f"import {name or provider}", daemon=True)
    thread.start()
    return thread
