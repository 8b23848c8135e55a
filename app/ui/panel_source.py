"""The inspector's view of an open session, built from the session on the app's side.

    inspector.show_session(panel_source(session))

Widgets never hold the session: they get this record (the session's id and its stored records, read in
their workers, its live counters, the report on the next request, made safe for display) and events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.textsafe import display_data
from app.ui.widgets.common import PanelSource

if TYPE_CHECKING:
    from app.engine.api.ui_session import UiSession


def panel_source(session: UiSession) -> PanelSource:
    """What the panels may read of `session` (its report is None on a half-built session)."""
    try:
        report = display_data(session.report())
    except Exception:  # a half-built session: the panels keep their empty state
        report = None
    return PanelSource(
        session_id=session.info().id,
        records=session.records(),
        counters=session.counters(),
        report=report,
        max_recovery_attempts=session.settings().max_recovery_attempts,
    )
