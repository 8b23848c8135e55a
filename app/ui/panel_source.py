"""The inspector's view of an open session, built from the engine on the app's side.

    inspector.show_session(panel_source(engine))

Widgets never hold the engine: they get this record (the session's id and store, its live
counters, the engine's report on the next request, made safe for display) and engine events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.textsafe import display_data
from app.ui.widgets.common import PanelSource

if TYPE_CHECKING:
    from app.engine.turn import Engine


def panel_source(engine: Engine) -> PanelSource:
    """What the panels may read of `engine`'s session (its report is None on a half-built engine)."""
    try:
        report = display_data(engine.context_report())
    except Exception:  # a half-built engine: the panels keep their empty state
        report = None
    session = engine.session
    return PanelSource(
        session_id=session.id,
        store=session.store,
        counters=session.counters,
        report=report,
        max_recovery_attempts=engine.settings.max_recovery_attempts,
    )
