"""Pilot tests of the inspector panels: each reacts to engine events fed through `Inspector.dispatch`.

A tiny App mounts only the Inspector; panels that read the store get a real Store, Session and
Engine (lab route, never started: no network). Times come from a fixed clock, in UTC.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input, Static

from app.config import Route, Settings
from app.engine.api.records import SessionRecords
from app.engine.session import Session
from app.engine.turn import Engine
from app.model.ages import age
from app.model.archive import ArchiveEntry, archive_key
from app.model.events import (
    CapLearned,
    Compaction,
    CompactionPhase,
    CountersChanged,
    HookRun,
    RecoveryStep,
    Rejection,
    RequestFinished,
    RequestStarted,
    Retry,
    TextDelta,
    TurnStarted,
    UsageRecorded,
    ViewChanged,
)
from app.model.messages import Message
from app.providers.factory import make_provider
from app.state import State
from app.store import Store
from app.ui.explain import explain_request, recovery_after, request_report
from app.ui.panel_source import panel_source as session_panel_source
from app.ui.widgets import archive as archive_module
from app.ui.widgets import hooks as hooks_module
from app.ui.widgets import requests as requests_module
from app.ui.widgets.common import Gauge, SizeSample
from app.ui.widgets.inspector import PANEL_NAMES, Inspector
from app.ui.widgets.report_lines import ReportLines

FIXED_NOW = datetime(2026, 1, 1, 14, 2, 7, tzinfo=UTC).timestamp()
WAF_REASON = "Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header"
WAF_EVIDENCE = [
    "status 403",
    "HTML body where the API speaks JSON",
    "header cf-ray: 8a1b2c3d4e5f-AMS",
    "header server: cloudflare",
    'phrase "attention required"',
    "request 412.5 KB",
]
SECRET = "sk-ant-api03-SECRETSECRETSECRET"


class _Viewed:
    """What `panel_source` asks of a session, answered by a bare engine (no session, so no approver)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def report(self):
        return self.engine.context_report()

    def info(self):
        return SimpleNamespace(id=self.engine.session.id)

    def records(self):
        return SessionRecords(self.engine.session.store, self.engine.session.id)

    def counters(self):
        return self.engine.session.counters

    def settings(self):
        return self.engine.settings


def panel_source(engine: Engine):
    return session_panel_source(_Viewed(engine))


class InspectorApp(App):
    """Only the inspector, with the app's side of its messages recorded (and acted on)."""

    AUTO_FOCUS = None

    def __init__(self, engine: Engine | None = None, *, act: bool = True, **options) -> None:
        super().__init__()
        self.animation_level = "none"
        self.engine = engine
        self.act = act
        self.options = options
        self.recalls: list[str] = []
        self.rewinds = 0
        self.copies: list[str] = []

    def compose(self) -> ComposeResult:
        inspector = Inspector(clock=lambda: FIXED_NOW, tz=UTC, **self.options)
        if self.engine is not None:  # what the real app does once the session is open
            inspector.show_session(panel_source(self.engine))
        yield inspector

    def on_mount(self) -> None:
        for field in self.query(Input):
            field.cursor_blink = False
        if self.engine is not None:  # what the real app's bridge does: every bus event to dispatch
            self.engine.session.bus.subscribe(self.inspector.dispatch)

    @property
    def inspector(self) -> Inspector:
        return self.query_one(Inspector)

    def on_archive_recall_requested(self, message) -> None:
        self.recalls.append(message.key)
        if self.act:  # what the real app does (when no turn runs)
            self.engine.recall_into_view(message.key)

    def on_rewind_requested(self, message) -> None:
        self.rewinds += 1
        if self.act:
            self.engine.rewind()

    def on_copy_requested(self, message) -> None:
        self.copies.append(message.text)


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def make_engine(tmp_path, settings: Settings | None = None) -> Engine:
    settings = settings or Settings()
    route = Route(name="lab", provider="lab", model="lab-1")
    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=str(tmp_path))
    return Engine(settings, session, route, make_provider(route, settings), state=State(), workspace=tmp_path)


@pytest.fixture
def engine(tmp_path):
    engine = make_engine(tmp_path)
    yield engine
    engine.session.store.close()


def view(
    predicted: int, cap: int | None, source: str, tokens: int = 50_000, window: int = 200_000
) -> ViewChanged:
    return ViewChanged(
        view_id="v1",
        messages=12,
        predicted_bytes=predicted,
        effective_cap=cap,
        cap_source=source,
        context_tokens=tokens,
        context_window=window,
    )


def finished(
    request_id: str,
    size: int,
    status: int | None = 200,
    kind: str | None = None,
    *,
    level: int = 0,
    reason: str = "",
    purpose: str = "chat",
    latency: float = 120.0,
) -> RequestFinished:
    return RequestFinished(
        request_id=request_id,
        route="lab",
        purpose=purpose,
        predicted_bytes=size,
        bytes=size,
        status=status,
        latency_ms=latency,
        kind=kind,
        reason=reason,
        level=level,
    )


# -- the container -------------------------------------------------------------------------------------------
async def test_empty_state_before_the_engine_exists():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        inspector = app.inspector
        assert inspector.source is None
        assert inspector.payload.cap_label == "no cap known · warns above 2.5 MB"
        assert inspector.payload.gauge.level == "idle"
        assert "waiting" in str(inspector.query_one("#payload-next", Static).render())
        assert inspector.ladder.attempts_left == 3 and inspector.ladder.level == 0
        assert inspector.archive.preview_text == "Waiting for the session…"
        assert inspector.requests.table.row_count == 0 and inspector.hooks.table.row_count == 0
        assert inspector.cost.values["cost"] == "—"
        assert not inspector.errors


async def test_events_dispatched_before_mount_are_replayed():
    inspector = Inspector(clock=lambda: FIXED_NOW, tz=UTC)
    inspector.dispatch(view(1_000_000, None, "none"))
    inspector.dispatch(RequestStarted("r1", "lab", "chat", 1_000_000))
    inspector.dispatch(finished("r1", 1_000_000))

    class Early(InspectorApp):
        def compose(self) -> ComposeResult:
            yield inspector

    app = Early()
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        assert inspector.payload.predicted_bytes == 1_000_000
        assert inspector.payload.gauge.value == 1_000_000
        assert inspector.requests.table.row_count == 1
        assert [s.bytes for s in inspector.payload.samples] == [1_000_000]


async def test_a_request_row_shows_when_it_was_sent_not_when_the_event_was_handled():
    inspector = Inspector(clock=lambda: FIXED_NOW, tz=UTC)
    sent = FIXED_NOW - 65  # the UI was busy, or the panel mounted a minute later
    inspector.dispatch(RequestStarted("r1", "lab", "chat", 1_000, started_at=sent))
    inspector.dispatch(dataclasses.replace(finished("r1", 1_000), started_at=sent))
    inspector.dispatch(RequestStarted("r2", "lab", "chat", 2_000, started_at=sent + 1))

    class Early(InspectorApp):
        def compose(self) -> ComposeResult:
            yield inspector

    app = Early()
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        table = inspector.requests.table
        assert [str(table.get_row(key)[0]) for key in ("r1", "r2")] == ["14:01:02", "14:01:03"]


async def test_a_completed_request_widens_its_columns():
    app = InspectorApp()
    async with app.run_test(size=(120, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(RequestStarted("r1", "lab", "chat", 4_600))
        await pilot.pause()
        inspector.dispatch(finished("r1", 35_900_000, status=413, kind="payload_too_large"))
        await pilot.pause()
        table = inspector.requests.table
        cells = [str(cell) for cell in table.get_row("r1")]
        assert cells[1:5] == ["413", "payload_too_large", "34.2 MB", "34.2 MB"]
        for key, text in zip(("status", "kind", "predicted", "actual"), cells[1:5], strict=True):
            assert table.columns[key].content_width >= len(text), key  # nothing is cut


async def test_text_deltas_reach_no_panel():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        calls = []
        for panel in inspector.panels.values():
            panel.on_engine_event = lambda event, calls=calls: calls.append(event)  # type: ignore[method-assign]
        for _ in range(100):
            inspector.dispatch(TextDelta("token "))
        await pilot.pause()
        assert calls == [] and inspector._routes[TextDelta] == ()


async def test_show_panel_switches_tab_and_focuses(engine):
    app = InspectorApp(engine)
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        inspector = app.inspector
        assert inspector.active_tab == "requests"
        inspector.show_panel("archive")
        await pilot.pause()
        assert inspector.active_tab == "archive" and app.focused is inspector.archive.table
        inspector.show_panel("cost")
        await pilot.pause()
        assert inspector.active_tab == "cost" and app.focused is inspector.cost
        inspector.show_panel("payload")
        await pilot.pause()
        assert app.focused is inspector.payload and inspector.active_tab == "cost"
        await pilot.press("ctrl+pagedown")  # focus is in the inspector: next tab wraps to the first
        await pilot.pause()
        assert inspector.active_tab == "compaction"
        with pytest.raises(ValueError):
            inspector.show_panel("nope")
        assert Inspector.PANELS == PANEL_NAMES == tuple(inspector.panels)


async def test_wide_and_hidden_classes():
    app = InspectorApp()
    async with app.run_test(size=(120, 50)) as pilot:
        inspector = app.inspector
        top = inspector.query_one("#inspector-top")
        assert top.styles.layout.name == "vertical"
        inspector.wide = True
        await pilot.pause()
        assert inspector.has_class("-wide") and top.styles.layout.name == "horizontal"
        assert inspector.payload.region.y == inspector.ladder.region.y  # side by side
        app.add_class("-hide-inspector")
        await pilot.pause()
        assert inspector.styles.display == "none"


async def test_rebinding_to_another_session_rebuilds_the_panels(tmp_path):
    first, second = make_engine(tmp_path), make_engine(tmp_path)
    app = InspectorApp(first)
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        inspector = app.inspector
        inspector.dispatch(RequestStarted("r1", "lab", "chat", 1000))
        old_requests = inspector.requests
        inspector.show_session(panel_source(second))
        await settle(pilot)
        assert inspector.requests is not old_requests and inspector.requests.session_id == second.session.id
        assert inspector.requests.table.row_count == 0
        kept = inspector.requests
        inspector.show_session(
            panel_source(second)
        )  # the same session again (e.g. after /model): panels kept
        assert inspector.requests is kept and inspector.requests.session_id == second.session.id
    first.session.store.close()
    second.session.store.close()


async def test_c_copies_each_panel_as_plain_text():
    app = InspectorApp()
    async with app.run_test(size=(100, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(view(300_000, 316_800, "learned"))
        inspector.dispatch(finished("r1", 422_400, 403, "waf_block", reason=WAF_REASON))
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "succeeded", "waf_block", "recovered at L2")
        )
        inspector.dispatch(Compaction("recovery", "L2", "applied", 422_400, 120_000, 30, 11, level=2))
        inspector.dispatch(HookRun("Stop", "*", "./stop.sh", 2.0, 0, "ok"))
        inspector.dispatch(UsageRecorded(1000, 20, cost_usd=0.01))
        await pilot.pause()
        for name in ("payload", "ladder", "compaction", "hooks", "cost"):
            inspector.show_panel(name)
            await pilot.pause()
            await pilot.press("alt+c")
        payload, ladder, compaction, hooks, cost = app.copies
        assert (
            payload.startswith("Next request 293.0 KB of 309.4 KB cap") and "412.5 KB (waf_block)" in payload
        )
        assert "recovered at L2 on attempt 2/3" in ladder
        assert compaction.startswith("Last: recovery · ladder L2 (last 10) · applied")
        assert compaction.endswith("applied: 30 → 11 msgs · 412.5 KB → 117.2 KB (−295.3 KB)")
        assert hooks.startswith("Stop · matcher * · exit 0 · ok")
        assert "  input: 1,000" in cost and "  cost: $0.0100" in cost


def test_every_panel_has_help_and_binding_ids():
    for panel in Inspector().panels.values():
        assert panel.HELP and panel.HELP.startswith("## "), panel
        for binding in panel.BINDINGS:
            assert isinstance(binding, Binding) and binding.id and binding.description and binding.tooltip
    for binding in [*Inspector.BINDINGS, *archive_module.ArchiveTable.BINDINGS]:
        assert binding.id and binding.tooltip


# -- payload -------------------------------------------------------------------------------------------------
async def test_payload_gauge_against_no_cap_then_learned_cap(engine):
    app = InspectorApp(engine)
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        payload = app.inspector.payload
        # bound: the engine's own numbers, before any event
        assert payload.predicted_bytes == engine.context_report().predicted_bytes
        assert payload.cap_label == "no cap known · warns above 2.5 MB"

        app.inspector.dispatch(view(2_000_000, None, "none"))
        await pilot.pause()
        assert payload.gauge.total == int(2.5 * 1024 * 1024) and payload.gauge.value == 2_000_000
        assert payload.gauge.level == "ok" and payload.gauge.soft
        app.inspector.dispatch(view(3_000_000, None, "none"))
        assert payload.gauge.level == "warn"  # over the warning threshold: a warning, never "over"

        learned_at = datetime(2026, 1, 1, 13, 58, tzinfo=UTC)
        engine.state.learn_cap(
            engine.route.endpoint_id,
            316_800,
            rejected_bytes=422_400,
            kind="waf_block",
            reason=WAF_REASON,
            now=learned_at,
        )
        event = engine.view_changed(
            "cap"
        )  # the engine's own event (through the bus): it says where the cap came from
        await pilot.pause()
        assert event.cap_detail.endswith("(Rejected by a WAF (Cloudflare))") and event.preflight_ratio == 0.85
        assert payload.cap_bytes == 316_800 and payload.gauge.total == 316_800
        assert payload.cap_label == (
            "cap 309.4 KB · learned 2026-01-01 13:58 from a waf_block rejection of "
            "412.5 KB (Rejected by a WAF (Cloudflare))"
        )
        assert payload.gauge.level == "ok" and not payload.has_class("-warn")
        app.inspector.dispatch(view(280_000, 316_800, "learned"))  # 88% ≥ the 85% pre-flight ratio
        assert payload.gauge.level == "warn" and payload.has_class("-warn")
        app.inspector.dispatch(view(330_000, 316_800, "learned"))
        assert payload.gauge.level == "over" and payload.has_class("-over") and not payload.has_class("-warn")
        assert payload.gauge.classes & {"-idle", "-ok", "-warn", "-over"} == {"-over"}  # one level at a time
        assert "Next request 322.3 KB of 309.4 KB cap" in str(
            payload.query_one("#payload-next", Static).render()
        )
        app.inspector.dispatch(RecoveryStep(1, 1, 3, 330_000, 42_500, "sending"))
        await pilot.pause()
        assert str(payload.query_one("#payload-next", Static).render()) == (
            "Recovery L1 sending 41.5 KB of 309.4 KB cap"
        )
        assert payload.gauge.value == 42_500 and payload.gauge.level == "ok"
        app.inspector.dispatch(RecoveryStep(1, 1, 3, 330_000, 42_500, "failed"))
        await pilot.pause()  # not accepted: the view, still over the cap, is what the next request holds
        assert "Next request 322.3 KB of 309.4 KB cap" in str(
            payload.query_one("#payload-next", Static).render()
        )
        assert payload.gauge.level == "over"

        assert payload.context_gauge.value == 50_000 and payload.context_gauge.total == 200_000


async def test_payload_names_a_configured_cap(tmp_path):
    settings = dataclasses.replace(
        Settings(), max_payload=1024 * 1024, sources={"max_payload": "config.toml"}
    )
    engine = make_engine(tmp_path, settings)
    app = InspectorApp(engine)
    async with app.run_test(size=(80, 50)) as pilot:
        await settle(pilot)
        payload = app.inspector.payload
        assert payload.cap_bytes == 1024 * 1024 and payload.cap_source == "configured"
        assert payload.cap_label == "cap 1.0 MB · configured: max_payload from config.toml"
    engine.session.store.close()


async def test_payload_shows_the_endpoints_gateway_profile_and_an_imported_cap(engine):
    """Issue 38 item 9: what the endpoint has shown beyond its cap — a refused beta, a proxy hop whose text
    came from outside (shown escaped) — and a profile imported from a team's file, with its source."""
    from app.gateway_profile import record_hop, record_refused_beta
    from app.gateway_share import import_profiles

    endpoint = engine.route.endpoint_id
    record_refused_beta(
        engine.state, endpoint, "context-management-2025-06-27", how="stripped", evidence="400"
    )
    record_hop(engine.state, endpoint, name="Squid", kind="forward-proxy", detail="Via: 1.1 \x1b[31mproxy")
    import_profiles(
        engine.state,
        f'format = "bulkhead-gateways"\nversion = 1\n[gateways."{endpoint}"]\ncap_bytes = 102400\n',
        source="team/gateways.toml",
    )
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        engine.view_changed("profile")
        await pilot.pause()
        payload = app.inspector.payload
        label = payload.profile_label
        assert label.startswith("Gateway: refused beta: context-management-2025-06-27 (stripped on the way")
        assert "proxy hop: Squid — Via: 1.1 \\x1b[31mproxy" in label  # the escape is shown, not obeyed
        assert "imported (cap 100.0 KB) from team/gateways.toml" in label
        assert payload.cap_bytes == 102_400 and payload.cap_source == "imported"
        assert payload.cap_label.startswith("cap 100.0 KB · imported from team/gateways.toml on 20")
        assert payload.query_one("#payload-profile", Static).display
        assert "Gateway: refused beta" in payload.copy_text()


async def test_cap_learned_event_switches_the_label_at_once():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        payload = app.inspector.payload
        app.inspector.dispatch(view(300_000, None, "none"))
        app.inspector.dispatch(
            CapLearned(cap_bytes=316_800, rejected_bytes=422_400, endpoint="lab default", reason=WAF_REASON)
        )
        await pilot.pause()
        assert payload.cap_bytes == 316_800 and payload.cap_source == "learned"
        assert payload.cap_label == "cap 309.4 KB · learned just now from a rejection of 412.5 KB"
        assert payload.gauge.level == "warn"


async def test_sparkline_marks_rejections():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(finished("r1", 100_000))
        inspector.dispatch(finished("r2", 422_400, 403, "waf_block", reason=WAF_REASON))
        inspector.dispatch(finished("r3", 50_000, 429, "rate_limit"))
        inspector.dispatch(finished("r4", 120_000, level=2))
        inspector.dispatch(finished("r4", 120_000, level=2))  # the same request twice counts once
        inspector.dispatch(finished("r5", 30_000, purpose="summary"))
        await pilot.pause()
        spark = inspector.payload.sparkline
        assert [(s.bytes, s.kind) for s in inspector.payload.samples] == [
            (100_000, None),
            (422_400, "waf_block"),
            (50_000, "rate_limit"),
            (120_000, None),
            (30_000, None),
        ]
        assert [s.rejected for s in spark.samples] == [False, True, True, False, False]
        rows = spark.render().plain.splitlines()
        assert len(rows) == 3 and rows[-1].startswith("▔✗!▔▔")
        assert rows[0][1] == "█" and rows[1][1] == "█"  # the largest request fills the height
        title = str(inspector.query_one("#payload-spark-title", Static).render())
        assert title.startswith("Requests 5 · 2 rejected · last 29.3 KB · max 412.5 KB")


async def test_sparkline_is_bounded():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        for n in range(300):
            app.inspector.dispatch(finished(f"r{n}", 1000 + n))
        await pilot.pause()
        samples = app.inspector.payload.samples
        assert len(samples) == 240 and samples[-1].bytes == 1299


def test_gauge_levels():
    gauge = Gauge()
    gauge.set_reactive(Gauge.total, 100)
    for value, level in ((None, "idle"), (10, "ok"), (85, "warn"), (100, "over"), (150, "over")):
        gauge.set_reactive(Gauge.value, value)
        assert gauge.level == level
    gauge.set_reactive(Gauge.soft, True)
    assert gauge.level == "warn"
    assert SizeSample(10, "waf_block").rejected and not SizeSample(10).rejected


# -- ladder --------------------------------------------------------------------------------------------------
async def test_ladder_walks_the_levels_and_resets_on_a_new_turn():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        ladder = inspector.ladder
        inspector.dispatch(TurnStarted(turn=1, prompt="hi"))
        inspector.dispatch(finished("r1", 422_400, 403, "waf_block", reason=WAF_REASON))
        inspector.dispatch(Rejection("waf_block", 422_400, WAF_REASON, 403, tuple(WAF_EVIDENCE), True, True))
        inspector.dispatch(
            RecoveryStep(
                1,
                1,
                3,
                422_400,
                430_000,
                "not_smaller",
                "waf_block",
                "L1 candidate (419.9 KB) is not smaller than the rejected request; not sent",
            )
        )
        await pilot.pause()
        assert (ladder.level, ladder.attempt, ladder.attempts_left) == (1, 1, 2)
        assert ladder.failure_kind == "waf_block" and ladder.failure_reason == WAF_REASON
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "sending", "waf_block", "L2: 30 → 11 messages")
        )
        await pilot.pause()
        steps = [inspector.query_one(f"#ladder-step-{n}", Static) for n in range(4)]
        assert [s.has_class("-current") for s in steps] == [False, False, True, False]
        assert [s.has_class("-passed") for s in steps] == [True, True, False, False]
        assert steps[2].has_class("-active")
        text = str(inspector.query_one("#ladder-attempt", Static).render())
        assert text == "attempt 2 of 3 · 1 left · sending"
        failure = str(inspector.query_one("#ladder-failure", Static).render())
        assert failure.startswith("last failure: waf_block 403 · 412.5 KB — Rejected by a WAF (Cloudflare)")

        inspector.dispatch(finished("r2", 120_000, 413, "payload_too_large", level=2, reason="413 again"))
        assert ladder.outcome == "failed" and ladder.attempts[-1].outcome == "failed"
        inspector.dispatch(RecoveryStep(3, 3, 3, 422_400, 60_000, "sending", "payload_too_large", "L3"))
        inspector.dispatch(
            RecoveryStep(3, 3, 3, 422_400, 60_000, "succeeded", "waf_block", "recovered at L3")
        )
        await pilot.pause()
        assert [(a.attempt, a.level, a.outcome) for a in ladder.attempts] == [
            (1, 1, "not_smaller"),
            (2, 2, "failed"),
            (3, 3, "succeeded"),
        ]
        assert ladder.attempts_left == 0 and steps[3].has_class("-succeeded")
        assert ladder.last_recovery == "recovered at L3 on attempt 3/3: 412.5 KB → 58.6 KB (waf_block)"

        inspector.dispatch(TurnStarted(turn=2, prompt="next"))
        await pilot.pause()
        assert (ladder.level, ladder.attempt, ladder.attempts, ladder.attempts_left) == (0, 0, [], 3)
        assert steps[0].has_class("-current") and not steps[3].has_class("-current")
        assert "recovered at L3" in str(inspector.query_one("#ladder-last", Static).render())


async def test_ladder_exhausted_refused_and_retries():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        ladder = inspector.ladder
        inspector.dispatch(RecoveryStep(1, 1, 3, 500_000, 400_000, "sending", "context_overflow", "L1"))
        inspector.dispatch(
            RecoveryStep(3, 3, 3, 500_000, None, "exhausted", "context_overflow", "prompt is too long")
        )
        await pilot.pause()
        assert ladder.outcome == "exhausted" and ladder.attempts_left == 0
        assert ladder.last_recovery == "recovery exhausted after 3 attempts: prompt is too long"
        assert inspector.query_one("#ladder-step-3", Static).has_class("-failed")
        inspector.dispatch(TurnStarted(turn=2, prompt="again"))
        inspector.dispatch(
            RecoveryStep(
                0, 0, 3, 100_000, 120_000, "refused", "payload_too_large", "the request base alone is too big"
            )
        )
        await pilot.pause()
        assert ladder.last_recovery == "recovery refused: the request base alone is too big"
        inspector.dispatch(Retry("rate_limit", 1, 4, 2.0, "429"))
        await pilot.pause()
        assert "retry 1/4 after rate_limit in 2.0 s" in str(
            inspector.query_one("#ladder-attempt", Static).render()
        )
        inspector.dispatch(finished("r9", 1000))
        assert ladder.retry_text == ""


# -- compaction ----------------------------------------------------------------------------------------------
async def test_compaction_phases_live_then_final():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        panel = inspector.compaction
        inspector.show_panel("compaction")
        await pilot.pause()  # the hidden tabs' panels mount after the first frame
        assert (
            str(panel.query_one("#compaction-phases", Static).render())
            == "No compaction yet in this session."
        )
        inspector.dispatch(
            CompactionPhase("preflight", "start", "📦 Compacting history (23 msgs, 4.2 MB → target 2.0 MB)")
        )
        inspector.dispatch(
            CompactionPhase("preflight", "trim", "🧹 Trim: microcompact, dedup, budgets (no LLM)…")
        )
        inspector.dispatch(
            CompactionPhase("preflight", "summarize", "🧠 Summarizing old messages… (Esc cancels)")
        )
        await pilot.pause()
        assert panel.running and panel.trigger == "preflight" and panel.has_class("-running")
        assert [key for key, _ in panel.phases] == ["start", "trim", "summarize"]
        lines = str(panel.query_one("#compaction-phases", Static).render()).splitlines()
        assert lines[-1].startswith("● 🧠 Summarizing") and lines[0].startswith(
            "  📦"
        )  # spinner on the current
        assert "Running · trigger preflight since 14:02:07" in str(
            panel.query_one("#compaction-status").render()
        )

        inspector.dispatch(
            CompactionPhase(
                "preflight", "summary_applied", "✓ Summary applied (23 → 9 msgs, 4.2 MB → 1.8 MB)"
            )
        )
        inspector.dispatch(CompactionPhase("preflight", "done", "✓ Compacted (23 → 9 msgs, 4.2 MB → 1.8 MB)"))
        inspector.dispatch(
            Compaction(
                "preflight",
                "summary",
                "applied",
                4_404_019,
                1_887_437,
                23,
                9,
                level=2,
                archive_keys=("a" * 16, "b" * 16),
            )
        )
        await pilot.pause()
        assert not panel.running and not panel.has_class("-running")
        assert panel.result is not None and panel.result.method == "summary"
        assert len(panel.phases) == 5
        result = str(panel.query_one("#compaction-result", Static).render())
        assert result == "applied: 23 → 9 msgs · 4.2 MB → 1.8 MB (−2.4 MB) · 2 archived"
        assert str(panel.query_one("#compaction-status").render()) == "Last: preflight · summary · applied"

        # the next one starts afresh; the last one goes to the history
        inspector.dispatch(CompactionPhase("manual", "start", "📦 Compacting history (12 msgs, 1.8 MB)"))
        inspector.dispatch(CompactionPhase("manual", "done", "✓ Nothing to compact"))
        inspector.dispatch(Compaction("manual", "none", "skipped", 1_887_437, 1_887_437, 12, 12))
        await pilot.pause()
        assert [key for key, _ in panel.phases] == ["start", "done"]
        assert str(panel.query_one("#compaction-result", Static).render()).startswith(
            "skipped — nothing to compact"
        )
        history = str(panel.query_one("#compaction-history", Static).render())
        assert history.startswith("14:02:07 preflight summary applied 4.2 MB → 1.8 MB")


async def test_compaction_panel_follows_a_recovery():
    app = InspectorApp()
    async with app.run_test(size=(80, 50)) as pilot:
        inspector = app.inspector
        panel = inspector.compaction
        inspector.dispatch(
            RecoveryStep(1, 1, 3, 422_400, 430_000, "not_smaller", "waf_block", "L1 not smaller")
        )
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "sending", "waf_block", "L2: 30 → 11 messages")
        )
        await pilot.pause()
        assert panel.running and panel.trigger == "recovery" and len(panel.phases) == 2
        inspector.dispatch(
            RecoveryStep(2, 2, 3, 422_400, 120_000, "succeeded", "waf_block", "recovered at L2")
        )
        inspector.dispatch(
            Compaction(
                "recovery", "L2", "applied", 422_400, 120_000, 30, 11, level=2, archive_keys=("c" * 16,)
            )
        )
        await pilot.pause()
        assert not panel.running and len(panel.phases) == 3 and panel.result.level == 2
        inspector.dispatch(RecoveryStep(3, 3, 3, 422_400, None, "exhausted", "waf_block", "still blocked"))
        await pilot.pause()
        assert not panel.running and panel.failed_text.startswith("recovery exhausted")
        assert panel.has_class("-failed")


# -- archive -------------------------------------------------------------------------------------------------
ARCHIVED = [
    ("L2", "user: run the failing test in tests/test_store.py and tell me why it fails", 3600),
    (
        "microcompact",
        "tool read_file nginx.conf: client_max_body_size 128k; proxy_pass http://upstream;",
        1800,
    ),
    ("summary", "assistant: the WAF blocks bodies over 400 KB, so we trimmed the history twice", 300),
]


def seed_archive(session: Session) -> list[str]:
    """Three archived segments (oldest first) and a compaction view on the stack, to rewind."""
    for text in ("first question", "first answer", "second question", "second answer"):
        session.append(Message.create("user" if "question" in text else "assistant", text, turn=1))
    entries = [
        ArchiveEntry(
            key=archive_key(content),
            content=content,
            reason=reason,
            source_ids=("m1", "m2"),
            created_at=FIXED_NOW - age,
        )
        for reason, content, age in ARCHIVED
    ]
    session.commit_view(session.view.messages[2:], entries, reason="manual:summary")
    return [e.key for e in entries]


async def test_archive_lists_searches_previews_and_recalls(engine):
    keys = seed_archive(engine.session)
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        inspector = app.inspector
        panel = inspector.archive
        assert panel.row_keys == keys[::-1]  # newest first
        assert panel.table.get_row(keys[2])[:4] == [keys[2], "summary", "77 B", "5m"]
        assert panel.preview_key == keys[2] and panel.preview_text == ARCHIVED[2][1]
        title = str(panel.query_one("#archive-preview-title", Static).render())
        assert title == f"ccr:{keys[2]} · summary · 77 B · 13:57:07 · from 2 messages"

        inspector.show_panel("archive")
        await pilot.pause()
        await pilot.press("down")
        assert panel.preview_key == keys[1] and "client_max_body_size" in panel.preview_text

        await pilot.press("shift+tab")  # the search box, above the table
        assert app.focused is panel.search
        await pilot.press(*"pytest failing")
        await settle(pilot)
        assert panel.row_keys == []  # "pytest" is in no segment
        assert panel.preview_text == "Nothing in the archive matches 'pytest failing'."
        panel.search.value = "fail"
        await settle(pilot)
        assert panel.row_keys == [keys[0]] and panel.preview_key == keys[0]
        await pilot.press("enter")  # submit the search: the table gets the keyboard
        assert app.focused is panel.table

        master_before = len(engine.session.master)
        await pilot.press("enter")  # Enter recalls the selected segment
        await pilot.pause()
        assert app.recalls == [keys[0]]
        assert len(engine.session.master) == master_before + 1
        recalled = engine.session.master[-1]
        assert recalled.meta.origin == "recall" and ARCHIVED[0][1] in recalled.text
        assert engine.session.view.messages[-1].id == recalled.id
        assert inspector.payload.messages == len(engine.session.view)  # the ViewChanged reached the gauge

        panel.search.value = ""
        await settle(pilot)
        assert panel.row_keys == keys[::-1]

        await pilot.press("alt+c")
        assert app.copies == [ARCHIVED[0][1]]
        assert not inspector.errors


async def test_archive_rewind_key_restores_the_previous_view(engine):
    seed_archive(engine.session)
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        app.inspector.show_panel("archive")
        await pilot.pause()
        assert len(engine.session.views) == 2 and len(engine.session.view) == 2
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert app.rewinds == 1
        assert len(engine.session.views) == 1 and len(engine.session.view) == 4
        await pilot.press("ctrl+z")  # the fallback chord; nothing left to rewind is not an error
        await pilot.pause()
        assert app.rewinds == 2 and len(engine.session.views) == 1


def test_no_widget_holds_or_imports_the_engine():
    """The panels render events and read the store through a PanelSource: no Engine in app/ui/widgets."""
    import ast
    from pathlib import Path

    import app.ui.widgets as widgets

    folder = Path(widgets.__file__).parent
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "app.engine.turn", f"{path.name} imports app.engine.turn"
            if isinstance(node, ast.Name | ast.Attribute):
                name = node.id if isinstance(node, ast.Name) else node.attr
                assert name not in ("Engine", "bind_engine", "direct_actions"), f"{path.name} uses {name}"
    inspector = Inspector()
    for widget in (inspector, *inspector.panels.values()):
        assert not hasattr(widget, "engine"), widget


async def test_archive_adds_new_segments_incrementally(engine, monkeypatch):
    keys = seed_archive(engine.session)
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        panel = app.inspector.archive
        row_objects = dict(panel.table.rows)
        monkeypatch.setattr(panel.table, "clear", lambda *a, **k: pytest.fail("rebuilt the whole table"))
        content = "tool grep output: 412 matches of TODO across the repository"
        entry = ArchiveEntry(
            key=archive_key(content), content=content, reason="budget", created_at=FIXED_NOW - 10
        )
        engine.session.archive([entry])
        engine.session.writer.flush()  # on disk before the event, as the engine's own commit_view does
        app.inspector.dispatch(
            Compaction("auto", "trim", "applied", 2000, 1000, 10, 10, archive_keys=(entry.key,))
        )
        await settle(pilot)
        assert panel.row_keys == [entry.key, *keys[::-1]]
        assert all(panel.table.rows[k] is row_objects[k] for k in row_objects)  # old rows untouched


async def test_archive_is_bounded(engine, monkeypatch):
    monkeypatch.setattr(archive_module, "MAX_ROWS", 2)
    seed_archive(engine.session)
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        assert len(app.inspector.archive.row_keys) == 2


async def test_refreshing_the_ages_of_many_archive_entries_measures_no_column_again(engine, monkeypatch):
    """The ages go `59s` → `1m` (narrower): DataTable's update_cell(update_width=True) measured the whole
    column for each such cell — 440 entries held the event loop 3.6 s every 10 s."""
    entries = [
        ArchiveEntry(
            key=archive_key(f"segment {n}"),
            content=f"segment {n}",
            reason="budget",
            created_at=FIXED_NOW - 50,
        )
        for n in range(300)
    ]
    engine.session.archive(entries)
    engine.session.writer.flush()  # the session's writer thread has written them before the panel reads
    now = [FIXED_NOW]
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        panel = app.inspector.archive
        panel.clock = lambda: now[0]
        assert len(panel.row_keys) == 300 and panel.table.get_row(entries[0].key)[3] == "50s"
        columns_measured = 0
        original = DataTable.get_column

        def counted(self, column_key):
            nonlocal columns_measured
            columns_measured += 1
            return original(self, column_key)

        monkeypatch.setattr(DataTable, "get_column", counted)
        now[0] = FIXED_NOW + 20  # every age is now 1m: narrower than 50s
        panel.refresh_ages()
        await settle(pilot)
        assert {panel.table.get_row(e.key)[3] for e in entries} == {"1m"}
        assert columns_measured == 0
        now[0] = FIXED_NOW + 3_600 * 30  # a day later
        panel.refresh_ages()
        await settle(pilot)
        assert panel.table.get_row(entries[0].key)[3] == "1d"
        assert panel.table.columns["age"].content_width >= 3


# -- requests ------------------------------------------------------------------------------------------------
def record_waf_story(engine: Engine) -> None:
    """What the sender records for: an accepted request, a WAF 403, a recovery at L2."""
    store, sid = engine.session.store, engine.session.id
    headers = {
        "content-type": "application/json",
        "x-api-key": SECRET,
        "authorization": f"Bearer {SECRET}",
        "anthropic-version": "2023-06-01",
    }
    base = {
        "session_id": sid,
        "route": "lab",
        "provider": "lab",
        "model": "lab-1",
        "url": "http://127.0.0.1:8765/v1/messages",
        "purpose": "chat",
        "request_headers": headers,
    }
    store.record_request(
        {
            **base,
            "id": "r-0001",
            "created_at": FIXED_NOW - 60,
            "attempt": 0,
            "level": 0,
            "predicted_bytes": 300_000,
            "actual_bytes": 300_000,
            "status": 200,
            "latency_ms": 812.0,
            "outcome": "ok",
            "body_preview": '{"model": "lab-1", "messages": ["…"]}',
            "response_headers": {"content-type": "text/event-stream", "request-id": "req_1"},
        }
    )
    store.record_request(
        {
            **base,
            "id": "r-0002",
            "created_at": FIXED_NOW - 30,
            "attempt": 0,
            "level": 0,
            "predicted_bytes": 422_400,
            "actual_bytes": 422_400,
            "status": 403,
            "latency_ms": 95.0,
            "outcome": "failed",
            "kind": "waf_block",
            "reason": WAF_REASON,
            "evidence": WAF_EVIDENCE,
            "body_preview": '{"model": "lab-1", "messages": ["… 30 more …"]}',
            "response_headers": {
                "content-type": "text/html",
                "cf-ray": "8a1b2c3d4e5f-AMS",
                "server": "cloudflare",
                "set-cookie": f"__cf_bm={SECRET}",
            },
            "error_body": "<html><head><title>Attention Required! | Cloudflare</title></head>"
            "<body>Sorry, you have been blocked</body></html>",
        }
    )
    store.record_event(
        sid,
        "cap_learned",
        {"cap_bytes": 316_800, "rejected_bytes": 422_400, "endpoint": "lab default", "reason": WAF_REASON},
    )
    store.record_request(
        {
            **base,
            "id": "r-0003",
            "created_at": FIXED_NOW - 20,
            "attempt": 2,
            "level": 2,
            "predicted_bytes": 120_000,
            "actual_bytes": 120_000,
            "status": 200,
            "latency_ms": 640.0,
            "outcome": "ok",
            "body_preview": "{}",
            "response_headers": {},
        }
    )


def dispatch_waf_story(inspector: Inspector) -> None:
    inspector.dispatch(RequestStarted("r-0001", "lab", "chat", 300_000))
    inspector.dispatch(finished("r-0001", 300_000, latency=812.0))
    inspector.dispatch(RequestStarted("r-0002", "lab", "chat", 422_400))
    inspector.dispatch(finished("r-0002", 422_400, 403, "waf_block", reason=WAF_REASON, latency=95.0))
    inspector.dispatch(Rejection("waf_block", 422_400, WAF_REASON, 403, tuple(WAF_EVIDENCE), True, True))
    inspector.dispatch(CapLearned(316_800, 422_400, "lab default", WAF_REASON))
    inspector.dispatch(
        RecoveryStep(2, 2, 3, 422_400, 120_000, "sending", "waf_block", "L2: 30 → 11 messages")
    )
    inspector.dispatch(RequestStarted("r-0003", "lab", "chat", 120_000, attempt=2, level=2))
    inspector.dispatch(finished("r-0003", 120_000, level=2, latency=640.0))


async def test_requests_table_and_detail_explain_the_rejection(engine):
    record_waf_story(engine)
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        inspector = app.inspector
        dispatch_waf_story(inspector)
        await settle(pilot)
        panel = inspector.requests
        table = panel.table
        assert table.row_count == 3
        assert [str(c) for c in table.get_row("r-0002")] == [
            "14:01:37",
            "403",
            "waf_block",
            "412.5 KB",
            "412.5 KB",
            "95",
            "0",
            "chat",
            "lab",
        ]
        assert panel.selected_id == "r-0003"  # the cursor follows the newest request
        inspector.show_panel("requests")
        await pilot.pause()
        await pilot.press("up")
        assert panel.selected_id == "r-0002"
        expected = (
            f"{WAF_REASON}, request 412.5 KB; bulkhead learned a 309.4 KB cap and recovered at ladder level 2"
        )
        assert panel.explanation == expected
        detail = panel.detail_text
        for item in WAF_EVIDENCE:
            assert f"  - {item}" in detail
        assert "cf-ray: 8a1b2c3d4e5f-AMS" in detail and "Attention Required! | Cloudflare" in detail
        assert "x-api-key: [redacted]" in detail and "authorization: [redacted]" in detail
        assert "set-cookie: [redacted]" in detail and '"messages": ["… 30 more …"]' in detail
        assert SECRET not in detail
        shown = panel.query_one("#requests-detail-body", ReportLines)
        assert shown.text == detail and SECRET not in app.export_screenshot()

        await pilot.press("alt+c")
        await pilot.press("alt+r")
        assert app.copies == [expected, detail]

        await pilot.press("down")
        assert panel.explanation == (
            "Accepted (HTTP 200): request 117.2 KB in 640 ms; recovery attempt 2 at ladder level 2 succeeded"
        )
        assert not inspector.errors


async def test_requests_live_before_the_store_and_bounded(monkeypatch):
    monkeypatch.setattr(requests_module, "MAX_ROWS", 5)
    app = InspectorApp()
    async with app.run_test(size=(100, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(RequestStarted("r0", "lab", "chat", 1000))
        await pilot.pause()
        panel = inspector.requests
        assert [str(c) for c in panel.table.get_row("r0")][:3] == ["14:02:07", "…", ""]
        assert panel.explanation == "In flight: a request of 1000 B (predicted) is being sent."
        inspector.dispatch(
            finished("r0", 1000, 429, "rate_limit", reason="Rate limited: 429 Too Many Requests")
        )
        inspector.dispatch(RequestStarted("r1", "lab", "chat", 1000))
        inspector.dispatch(finished("r1", 1000))
        await pilot.pause()
        assert panel.records["r0"]["outcome"] == "failed"
        panel.table.move_cursor(row=0)
        await pilot.pause()
        assert panel.explanation == (
            "Rate limited: 429 Too Many Requests, request 1000 B; bulkhead retried once "
            "and the request went through"
        )
        for n in range(2, 9):
            inspector.dispatch(RequestStarted(f"r{n}", "lab", "chat", 1000 + n))
        await pilot.pause()
        assert panel.table.row_count == 5 and list(panel.records) == ["r4", "r5", "r6", "r7", "r8"]
        assert [row.key.value for row in panel.table.ordered_rows] == ["r4", "r5", "r6", "r7", "r8"]


async def test_a_resumed_session_is_read_back_from_the_store(engine):
    record_waf_story(engine)
    compaction = Compaction(
        "recovery", "L2", "applied", 422_400, 120_000, 30, 11, level=2, archive_keys=("e" * 16,)
    )
    engine.session.store.record_event(engine.session.id, "compaction", compaction.to_json())
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        inspector = app.inspector
        assert [(s.bytes, s.kind) for s in inspector.payload.samples] == [
            (300_000, None),
            (422_400, "waf_block"),
            (120_000, None),
        ]
        assert [row.key.value for row in inspector.requests.table.ordered_rows] == [
            "r-0001",
            "r-0002",
            "r-0003",
        ]
        assert inspector.requests.selected_id == "r-0003"
        inspector.requests.table.move_cursor(row=1)
        await pilot.pause()
        assert inspector.requests.explanation.endswith(
            "learned a 309.4 KB cap and recovered at ladder level 2"
        )
        assert inspector.compaction.result == compaction
        assert not inspector.errors


# -- explain.py ----------------------------------------------------------------------------------------------
def _rec(
    request_id, *, level=0, attempt=0, kind=None, status=200, size=1000, outcome=None, reason="", at=0.0
):
    return {
        "id": request_id,
        "level": level,
        "attempt": attempt,
        "kind": kind,
        "status": status,
        "actual_bytes": size,
        "predicted_bytes": size,
        "reason": reason,
        "purpose": "chat",
        "created_at": at,
        "outcome": outcome or ("failed" if kind else "ok"),
        "latency_ms": 10.0,
    }


def test_explain_recovery_outcomes():
    rejected = _rec(
        "a",
        kind="payload_too_large",
        status=413,
        size=131_072,
        reason="Request body too large (nginx): 413 Payload Too Large (HTML page)",
        at=1.0,
    )
    l1_failed = _rec("b", level=1, attempt=1, kind="payload_too_large", status=413, size=120_000, at=2.0)
    l3_ok = _rec("c", level=3, attempt=3, size=40_000, at=3.0)
    records = [rejected, l1_failed, l3_ok]
    assert recovery_after(rejected, records).recovered_level == 3
    assert recovery_after(rejected, records).failed_attempts == 1
    caps = [{"cap_bytes": 98_304, "rejected_bytes": 131_072, "created_at": 1.5}]
    assert explain_request(rejected, records, cap_events=caps) == (
        "Request body too large (nginx): 413 Payload Too Large (HTML page), request 128.0 KB; bulkhead learned a "
        "96.0 KB cap and recovered at ladder level 3"
    )
    assert explain_request(l1_failed, records).endswith(
        "request 117.2 KB; bulkhead recovered at ladder level 3 (recovery attempt 1 at ladder level 1)"
    )
    # every attempt failed, then a new turn began
    exhausted = [
        rejected,
        l1_failed,
        _rec("d", level=2, attempt=2, kind="payload_too_large", status=413, at=3.0),
        _rec("e", at=9.0),
    ]
    assert explain_request(rejected, exhausted, cap_events=caps).endswith(
        "learned a 96.0 KB cap; recovery failed after 2 attempts — the conversation is unchanged"
    )
    # not recoverable: what bulkhead does about it
    auth = _rec("f", kind="auth", status=401, reason="Authentication or permission refused: 401 Unauthorized")
    assert "bulkhead stops here: check your API key" in explain_request(auth, [auth])
    assert explain_request(_rec("g", outcome="cancelled", status=None)).startswith("Cancelled")


def test_request_report_redacts_whatever_it_is_given():
    record = {
        **_rec("x", kind="waf_block", status=403),
        "evidence": ["status 403"],
        "request_headers": {"X-Api-Key": SECRET, "Proxy-Authorization": SECRET, "Accept": "json"},
        "response_headers": {"x-auth-token": SECRET},
        "error_body": "blocked",
        "body_preview": "{}",
    }
    report = request_report(record, "why")
    assert SECRET not in report and "X-Api-Key: [redacted]" in report and "Accept: json" in report
    assert "Why: why" in report and "  - status 403" in report and "Error body:\nblocked" in report


# -- hooks ---------------------------------------------------------------------------------------------------
async def test_hooks_rows_newest_first_and_bounded(monkeypatch):
    monkeypatch.setattr(hooks_module, "MAX_ROWS", 3)
    app = InspectorApp()
    async with app.run_test(size=(100, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(HookRun("SessionStart", "*", "./hooks/start.sh", 12.4, 0, "ok"))
        inspector.dispatch(
            HookRun(
                "PreToolUse",
                "Bash",
                "python3 guard.py --strict",
                48.0,
                2,
                "block",
                output="rm -rf is not allowed here",
            )
        )
        await pilot.pause()
        panel = inspector.hooks
        assert [run.event for run in panel.newest_first] == ["PreToolUse", "SessionStart"]
        assert [str(c) for c in panel.table.get_row("2")] == [
            "2",
            "14:02:07",
            "PreToolUse",
            "python3 guard.py --strict",
            "2",
            "block",
            "48",
        ]
        assert panel.detail_text == (
            "PreToolUse · matcher Bash · exit 2 · block · 48 ms\n"
            "$ python3 guard.py --strict\nrm -rf is not allowed here"
        )
        inspector.dispatch(HookRun("PostToolUse", "*", "./log.sh", 3.0, 1, "error"))
        inspector.dispatch(HookRun("PreCompact", "*", "./slow.sh", 60_000.0, None, "timeout"))
        await pilot.pause()
        assert [run.event for run in panel.newest_first] == ["PreCompact", "PostToolUse", "PreToolUse"]
        assert [str(c) for c in panel.table.get_row("4")][4:6] == ["—", "timeout"]
        assert panel.table.cursor_row == 0 and panel.detail_text.startswith("PreCompact")


async def test_hooks_of_a_resumed_session_come_from_the_store(engine):
    run = HookRun("SessionStart", "*", "./hooks/start.sh", 12.4, 0, "ok")
    engine.session.store.record_event(engine.session.id, "hook", run.to_json())
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        assert app.inspector.hooks.newest_first == [run]


# -- cost ----------------------------------------------------------------------------------------------------
async def test_cost_reads_the_engine_counters(engine):
    app = InspectorApp(engine)
    async with app.run_test(size=(100, 50)) as pilot:
        await settle(pilot)
        panel = app.inspector.cost
        assert panel.values["cost"] == "$0.0000" and panel.values["rejections"] == "none"
        counters = engine.session.counters
        counters.requests, counters.failed_requests, counters.retries = 7, 2, 1
        counters.input_tokens, counters.output_tokens = 12_345, 678
        counters.cache_read_tokens, counters.cache_write_tokens = 9_000, 1_200
        counters.cost_usd = 0.0421
        counters.summarizer_calls, counters.summarizer_input_tokens = 1, 20_000
        counters.summarizer_output_tokens, counters.summarizer_cost_usd = 900, 0.0105
        counters.add_compaction("preflight", 2, 2_000_000)
        counters.add_compaction("recovery", 3, 300_000)
        counters.add_rejection("waf_block")
        counters.add_rejection("payload_too_large")
        counters.recoveries_ok, counters.recoveries_failed = 1, 1
        app.inspector.dispatch(UsageRecorded(100, 10, cost_usd=0.001))
        await pilot.pause()
        values = panel.values
        assert (values["input"], values["output"], values["cache read"], values["cache write"]) == (
            "12,345",
            "678",
            "9,000",
            "1,200",
        )
        assert values["cost"] == "$0.0421" and values["total"] == "$0.0526"
        assert values["summarizer"] == "1 call · 20,000 in / 900 out · $0.0105"
        assert values["requests"] == "7 · 2 failed · 1 retried"
        assert (
            values["compactions"] == "preflight 1 · recovery 1"
            and values["by step"] == "summary 1 · ladder L3 (last 4) 1"
        )
        assert values["last 4 only"] == "1" and values["rejections"] == "payload_too_large 1 · waf_block 1"
        assert values["recoveries"] == "1 ok · 1 failed" and values["bytes saved"] == "2.2 MB"
        counters.unpriced_requests = 2
        app.inspector.dispatch(RequestFinished("r", "lab", "chat", 1, 1, 200, 1.0))
        assert panel.values["cost"] == "$0.0421 + 2 unpriced"


async def test_cost_without_an_engine_counts_events():
    app = InspectorApp()
    async with app.run_test(size=(100, 50)) as pilot:
        inspector = app.inspector
        inspector.dispatch(UsageRecorded(1000, 200, 50, 0, None))
        inspector.dispatch(UsageRecorded(5000, 300, 0, 0, None, purpose="summary"))
        await pilot.pause()
        values = inspector.cost.values
        assert values["input"] == "1,000" and values["cache read"] == "50" and values["cost"] == "unpriced"
        assert values["summarizer"].startswith("1 call · 5,000 in / 300 out")
        inspector.dispatch(CountersChanged({"input_tokens": 42, "cost_usd": 0.5}))
        assert inspector.cost.values["input"] == "42" and inspector.cost.values["cost"] == "$0.5000"


def test_one_age_formatter_says_it_three_ways():
    assert [age(s, compact=True) for s in (5, 75, 7200, 200_000)] == ["5s", "1m", "2h", "2d"]
    assert [age(s) for s in (-3, 75, 7200, 200_000)] == ["0 s", "1 min", "2 h", "2 d"]
    assert [age(s, words=True) for s in (1, 60, 7200, 259_200)] == [
        "1 second",
        "1 minute",
        "2 hours",
        "3 days",
    ]


def test_tables_are_datatables():
    inspector = Inspector()
    assert all(
        isinstance(t, DataTable)
        for t in (inspector.archive.table, inspector.requests.table, inspector.hooks.table)
    )


async def test_a_resumed_session_shows_its_earlier_compactions_read_off_the_ui_loop(lab, tmp_path):
    """The Compaction panel reads the stored compactions of a resumed session in a worker thread."""
    import threading

    from app.engine.bootstrap import open_engine
    from app.ui.headless import ready, until
    from app.ui.widgets.compaction import CompactionPanel
    from tests.ui.conftest import lab_settings
    from tests.ui.test_app import make_app

    settings = lab_settings(lab)
    engine, _choice, _resumed = open_engine(settings, workspace=tmp_path)
    for n in range(3):
        assert (await engine.submit(f"question {n} " + "words " * 400)).outcome == "answered"
    await engine.compact()
    session_id = engine.session.id
    await engine.close()

    app = make_app(settings, tmp_path, resume=session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        panel = app.query_one(CompactionPanel)
        read_in: list[str] = []
        store = panel.reader.store
        original = store.list_events

        def recorded(*args, **kwargs):
            read_in.append(threading.current_thread().name)
            return original(*args, **kwargs)

        store.list_events = recorded
        panel.history.clear()
        panel.on_session_shown()
        await until(pilot, lambda: len(panel.history) == 1, "the stored compaction")
        assert panel.history[0].event.trigger == "manual"
        assert read_in and threading.main_thread().name not in read_in
