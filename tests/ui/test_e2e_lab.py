"""End to end through the lab: a 128 KB nginx cap, a growing session, a 413, recovery, recall.

One Pilot test drives the real app (chat, prompt, the real inspector) against an embedded lab
whose gateway is nginx with a 128 KB body cap. Messages grow the session (`!big 40KB`) until a
request is rejected; then the Requests panel shows the 413 with its evidence, the Ladder moves,
the Payload gauge switches to the learned cap, the answer arrives, the Archive lists what the
recovery dropped, and Enter on it recalls it into the conversation.
"""

from __future__ import annotations

import functools
from datetime import UTC

from app.config import Route, load_settings
from app.lab.embedded import start_embedded_lab
from app.ui import headless
from app.ui.app import BulkheadApp
from app.ui.chat_items import UserItem
from app.ui.widgets.inspector import Inspector

SIZE = (160, 48)
CAP = 128 * 1024
MAX_MESSAGES = 8  # 40 KB answers: the fourth request is already over 128 KB
WAIT_S = 90.0
until = functools.partial(headless.until, timeout=WAIT_S)
settle = functools.partial(headless.settle, timeout=WAIT_S)


async def test_413_recovery_is_visible_end_to_end(tmp_path):
    with start_embedded_lab(gateway="nginx", cap="128KB") as lab:
        route = Route(name="gateway", provider="lab", model="lab-1", base_url=lab.url)
        settings = load_settings().with_overrides(routes={"gateway": route})
        app = BulkheadApp(
            settings,
            workspace=tmp_path,
            cursor_blink=False,
            keymap={},
            inspector=Inspector(clock=lambda: 0.0, tz=UTC),
        )
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            inspector: Inspector = app.inspector
            assert inspector.payload.cap_source == "none"

            def rejected() -> list[dict]:
                return [r for r in inspector.requests.records.values() if r.get("status") == 413]

            sent = 0
            while not rejected() and sent < MAX_MESSAGES:
                app.prompt.set_text("!big 40KB")
                await pilot.press("enter")
                await settle(pilot)
                sent += 1
            assert rejected(), f"no request was rejected after {sent} messages"

            # The Requests panel: the 413, its size over the cap, and the classifier's evidence.
            record = rejected()[0]
            assert record["kind"] == "payload_too_large" and record["actual_bytes"] > CAP
            inspector.show_panel("requests")
            await pilot.pause()
            inspector.requests._show_detail(record["id"])
            await pilot.pause()
            detail = inspector.requests.detail_text
            assert "413" in detail and "nginx" in detail.lower()
            assert inspector.requests.explanation

            # The Ladder moved past L0 and the recovery succeeded.
            ladder = inspector.ladder
            assert ladder.level >= 1 and ladder.attempts
            assert ladder.failure_kind == "payload_too_large"
            assert "recovered" in ladder.last_recovery

            # The Payload gauge now measures against the learned cap (¾ of what was refused).
            payload = inspector.payload
            assert payload.cap_source == "learned"
            learned = app.session.engine.state.learned_cap(route.endpoint_id)
            assert learned is not None and payload.cap_bytes == learned.cap_bytes < CAP

            # The answer arrived, and the chat says what happened.
            master = app.session.engine.session.master
            assert master[-1].role == "assistant" and not master[-1].meta.partial
            assert app.chat.last_answer().raw == master[-1].text
            assert app.chat.notices("cap_learned") and app.chat.notices("recovery")

            # The Archive lists the dropped segment; Enter on it recalls it into the conversation.
            archive = inspector.archive
            await until(pilot, lambda: archive.row_keys, "the archive to list the dropped segment")
            key = archive.row_keys[0]
            inspector.show_panel("archive")
            await until(pilot, lambda: app.focused is archive.table, "the archive table to take the keyboard")
            archive.table.move_cursor(row=0)
            await pilot.pause()
            await pilot.press("enter")
            await until(
                pilot,
                lambda: any(isinstance(i, UserItem) and i.origin == "recall" for i in app.chat.items),
                "the recalled segment in the chat",
            )
            recalled = app.session.engine.session.master[-1]
            assert recalled.meta.origin == "recall"
            entry = app.session.engine.session.store.archive_get(key, app.session.engine.session.id)
            assert entry.content.strip()[:200] in recalled.text
            await app.action_quit()
