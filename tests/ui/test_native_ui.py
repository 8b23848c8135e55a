"""context_engine = "provider" as a user sees it: the chat and the Compaction panel show a provider
compaction, /context names the engine and what the provider cleared, the Payload panel counts edits."""

from __future__ import annotations

from datetime import UTC

from textual.widgets import Static

from app.model.events import ProviderEdits
from app.ui.app import BulkheadApp
from app.ui.chat_items import ReportItem
from app.ui.headless import ready, settle
from app.ui.widgets.inspector import Inspector
from tests.ui.conftest import lab_settings
from tests.ui.test_app import send

SIZE = (160, 48)


async def test_a_provider_compaction_shows_in_chat_compaction_panel_and_context(lab, tmp_path):
    settings = lab_settings(lab, context_engine="provider", provider_compact_threshold=600)
    app = BulkheadApp(
        settings,
        workspace=tmp_path,
        cursor_blink=False,
        keymap={},
        inspector=Inspector(clock=lambda: 0.0, tz=UTC),
    )
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for n in range(4):
            await send(pilot, f"question {n}: " + "lorem ipsum dolor sit amet " * 40)
            if app.chat.notices("compaction"):
                break
        notices = app.chat.notices("compaction")
        assert notices and "provider" in notices[0].text and "(/rewind compact undoes it)" in notices[0].text
        panel = app.inspector.panels["compaction"]
        assert panel.result is not None and panel.result.method == "provider"
        assert panel.result.trigger == "provider"

        await send(pilot, "/context")
        report = [item for item in app.chat.items if isinstance(item, ReportItem)][-1]
        rows = dict(report.rows)
        assert (
            rows["engine"].startswith("provider — Anthropic server-side compaction")
            and "from 600 tokens" in rows["engine"]
        )

        payload = app.inspector.payload
        app.inspector.dispatch(
            ProviderEdits(
                edits=1,
                cleared_tool_uses=2,
                cleared_input_tokens=30_000,
                stubbed=2,
                total_edits=1,
                total_tool_results=2,
                total_tokens=30_000,
            )
        )
        await settle(pilot)
        line = str(payload.query_one("#payload-context", Static).render())
        assert line.endswith("· provider cleared 2 tool results, 30,000 tokens in 1 edit")
