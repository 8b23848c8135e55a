"""Every place bulkhead patches or subclasses private Textual code, behind one version gate.

    strip_caches   Strip's caches made on first use, no line cached as its own result (memory, GC pauses)
    collector      fewer cyclic collections; removed widgets' cycles broken (`Doomed`)
    frames         the main screen draws a change at once, at most MAX_FPS a second (`FrameTimer`)
    full_map       a layout leaves its map of every widget current (`FullMapCompositor`)
    terminal_keys  Alt+Enter and Alt+digit taught to Textual's key parser
    quiet_resize   a container grows without a second layout and a full repaint; stale measures forgotten
    layout_requests  a Layout message lists every child that asked under each container (issue 40's fix)
    steady_scrollbars  a scroll view's scrollbars repainted only when something they show changed

Each module says, through `gate.holds(name, missing)`, whether what it relies on is still there in the
installed Textual; a patch whose reliance does not hold is left off (the stock Textual behaviour) and says
so once in the log (`bulkhead.textual_ext`). `gate.report()` lists what is on and off. The UI was written
and measured against `gate.TESTED_TEXTUAL` (pinned exactly in constraints.txt).
"""
