"""The fault soak (issue 10, reliability): many turns through the lab under seeded random faults.

Every ~20 turns a seeded RNG picks a new segment: a provider (all three take turns), a
gateway profile and cap (nginx 413s, Cloudflare/Akamai/AWS-WAF/ModSecurity 403s, resets,
API Gateway 413s, the provider's own 413), a lab context window (overflows, some that
bulkhead knows about and some it has to learn), and a fault mix (429, 529, 500, 503,
drops, timeouts, cuts and in-stream errors). The sessions grow with `!big` answers, big
prompts and tool reads; now and then the user asks `/retry`, `/compact` or `/rewind`.

After EVERY turn `helpers.invariants.audit_turn` checks, from a fresh `Session.load`:
nothing committed or received is lost, the view starts with a user message with valid
tool pairing and resolvable markers, no request was retried after visible output, the
counters match the request rows, predicted request sizes are within 1% of the bytes sent,
the payload notice is in the view at most once; the soak adds that a learned cap only
tightens (until `/cap reset`) and, at the end, that every receipt line parses. The report counts, per provider:
recovered / clean / failed-with-diagnosis / partial (kept) / lost — lost must be 0.

    python3 -m pytest tests/reliability/test_soak.py -q -s                  # CI: 200 turns
    BULKHEAD_SOAK_TURNS=5000 python3 -m pytest tests/reliability/test_soak.py -q -s
    BULKHEAD_SOAK_SEED=7 …                                                  # another schedule
"""

from __future__ import annotations

import json
import os
import random
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from app.config import Settings
from app.engine.session import Session
from app.engine.turn import Engine
from app.model.events import Event
from app.providers.factory import make_provider
from app.sizes import KIB, format_size
from app.state import State
from app.store import Store
from tests.reliability.conftest import FAKE_KEY, PROVIDERS, RecordedSleep, route_for
from tests.reliability.helpers.invariants import audit_turn

TURNS = int(os.environ.get("BULKHEAD_SOAK_TURNS", "200"))
SEED = int(os.environ.get("BULKHEAD_SOAK_SEED", "2024"))
SEGMENT_TURNS = 20
REQUEST_TIMEOUT = 2.0  # seconds: what a `timeout` fault costs, so its rate stays low
REPORT_PATH = os.environ.get("BULKHEAD_SOAK_REPORT")  # optional: write the report as JSON here

GATEWAYS = (
    "none",
    "nginx",
    "cloudflare",
    "akamai",
    "aws-waf",
    "modsecurity",
    "reset",
    "apigw",
    "apigw-waf",
    "header-431",
    "html-200",
)
CAPS_KB = (16, 24, 32, 48, 64, 96, 128)
TOO_SMALL_CAP = 4 * KIB  # below the request base (system prompt + tool schemas ≈ 4.7 KB): fails fast
LAB_WINDOWS = (6_000, 10_000, 16_000, 24_000, 40_000)
FAULT_RATES = {
    "429": (0.03, 0.10),
    "529": (0.02, 0.06),
    "500": (0.02, 0.06),
    "503": (0.01, 0.04),
    "drop": (0.01, 0.03),
    "cut": (0.03, 0.08),
    "stream-error": (0.03, 0.08),
    "timeout": (0.004, 0.01),
}


@dataclass(frozen=True)
class Segment:
    provider: str
    gateway: str
    cap: int | None
    lab_window: int | None
    believed_window: int
    faults: str
    seed: int

    def describe(self) -> str:
        cap = format_size(self.cap) if self.cap else "no cap"
        window = f"{self.lab_window:,} tokens" if self.lab_window else "default window"
        return (
            f"{self.provider}: gateway {self.gateway} ({cap}), lab window {window}, bulkhead believes "
            f"{self.believed_window:,}, faults {self.faults or 'none'}"
        )


def choose_segment(rng: random.Random, index: int) -> Segment:
    provider = PROVIDERS[index % len(PROVIDERS)]
    gateway = rng.choice(GATEWAYS)
    cap = rng.choice(CAPS_KB) * KIB if gateway != "none" or rng.random() < 0.5 else None
    lab_window = rng.choice(LAB_WINDOWS) if cap is None or rng.random() < 0.5 else None
    believed = (
        lab_window if lab_window and rng.random() < 0.5 else 200_000
    )  # known, or learned from the error
    kinds = rng.sample(sorted(FAULT_RATES), rng.randint(2, 6))
    faults = ",".join(f"{k}:{rng.uniform(*FAULT_RATES[k]):.3f}" for k in sorted(kinds))
    if index % 7 == 3:  # now and then a gateway too strict for anything: every turn fails, with a diagnosis
        gateway, cap = "nginx", TOO_SMALL_CAP
    if index % 5 == 1:  # now and then a small window bulkhead does not know about, and no cap: overflows
        gateway, cap, lab_window, believed = "none", None, LAB_WINDOWS[0], 200_000
    return Segment(provider, gateway, cap, lab_window, believed, faults, rng.randrange(1 << 30))


@dataclass
class Tally:
    turns: int = 0
    clean: int = 0
    recovered: int = 0
    failed_with_diagnosis: int = 0
    partial_kept: int = 0
    lost: int = 0
    commands: Counter = field(default_factory=Counter)
    failure_kinds: Counter = field(default_factory=Counter)

    def row(self, name: str) -> str:
        return (
            f"{name:10} {self.turns:6} {self.recovered:10} {self.clean:6} {self.failed_with_diagnosis:12} "
            f"{self.partial_kept:8} {self.lost:5}"
        )


@dataclass
class ProviderState:
    session_id: str | None = None
    last_outcome: str = "answered"
    keys: list[str] = field(default_factory=list)


def make_workspace(root: Path, rng: random.Random) -> list[str]:
    """Text files of about 1–40 KB for `!read` and `!grep`."""
    (root / "notes").mkdir(parents=True, exist_ok=True)
    names = []
    for n in range(8):
        lines = [
            f"note {n} line {i}: {'alpha beta gamma delta ' * rng.randint(1, 6)}"
            for i in range(rng.randint(20, 300))
        ]
        path = root / "notes" / f"file_{n}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        names.append(f"notes/file_{n}.txt")
    return names


def next_action(
    rng: random.Random, turn: int, state: ProviderState, files: list[str]
) -> tuple[str, str | None]:
    """(kind, prompt): what the user does this turn."""
    tag = f"soak-{turn}"
    roll = rng.random()
    if state.last_outcome in ("failed", "partial") and roll < 0.5:
        return "retry", None
    if roll < 0.30:
        words = rng.choices(
            ["cap", "waf", "view", "log", "café", "naïve", "日本語", "🚀", "ß", "\u200b"], k=6
        )
        return "chat", f"{tag}: how is it going? {' '.join(words)}"
    if roll < 0.42:
        line = rng.choice(["pasted line of text, ", "ligne collée — ", "貼り付けた行、", "🧪 "])
        return "big_prompt", f"{tag}: please look at this paste\n" + line * rng.randint(100, 1200)
    if roll < 0.60:
        return "big_answer", f"{tag}\n!big {rng.randint(2, 40)}KB"
    if roll < 0.72:
        picks = rng.sample(files, rng.choice((1, 1, 2)))
        return "read", f"{tag}\n" + "\n".join(f"!read {p}" for p in picks)
    if roll < 0.77:
        return "grep", f"{tag}\n!grep gamma notes"
    if roll < 0.83:
        return "cut", f"{tag}\n!cut"
    if roll < 0.89 and state.keys:
        return "recall", f"{tag}\n!recall <<ccr:{rng.choice(state.keys)}>>"
    if roll < 0.93:
        return "compact", None
    if roll < 0.95:
        return "rewind", None
    return "chat", f"{tag}: one more question about turn {turn}"


def settings_for(route) -> Settings:
    return Settings(
        routes={"t": route},
        default_route="t",
        retry_base_delay=0.01,
        retry_max_delay=0.05,
        request_timeout=REQUEST_TIMEOUT,
        connect_timeout=5.0,
        drop_payload_min_bytes=32_000,
        memory="off",  # the audit counts each turn's own requests; the memory worker has its own tests
    )


async def test_fault_soak(reliability_lab, tmp_path, aws_env, capsys):
    rng = random.Random(SEED)
    lab = reliability_lab
    store = Store()
    state = State()
    workspace = tmp_path / "ws"
    files = make_workspace(workspace, rng)
    tallies = {p: Tally() for p in PROVIDERS}
    providers = {p: ProviderState() for p in PROVIDERS}
    committed: dict[str, set[str]] = {p: set() for p in PROVIDERS}
    problems: list[str] = []
    segments: list[str] = []
    events: list[Event] = []
    turn = 0
    segment_index = 0

    while turn < TURNS:
        segment = choose_segment(rng, segment_index)
        segment_index += 1
        segments.append(segment.describe())
        lab.configure(
            gateway=segment.gateway,
            cap=segment.cap,
            window=segment.lab_window,
            faults=segment.faults,
            seed=segment.seed,
        )
        ps = providers[segment.provider]
        route = route_for(segment.provider, lab.url, context_window=segment.believed_window)
        settings = settings_for(route)
        if ps.session_id is None:
            session = Session.create(
                store, route="t", provider=segment.provider, model=route.model, workspace=str(workspace)
            )
            ps.session_id = session.id
        else:
            session = Session.load(store, ps.session_id)  # resumed, as `--resume` would
        engine = Engine(
            settings,
            session,
            route,
            make_provider(route, settings, FAKE_KEY),
            state=state,
            sleep=RecordedSleep(),
            workspace=workspace,
            rng=random.Random(segment.seed),
        )
        if state.learned_cap(route.endpoint_id) is not None:
            engine.reset_cap()  # a different gateway now: `/cap reset`, as a user would
        unsubscribe = session.bus.subscribe(events.append)
        await engine.start(resumed=True)
        tally = tallies[segment.provider]
        cap_before = None

        for _ in range(min(SEGMENT_TURNS, TURNS - turn)):
            turn += 1
            kind, prompt = next_action(rng, turn, ps, files)
            events.clear()
            tally.commands[kind] += 1
            result = None
            try:
                if kind == "retry":
                    result = await engine.retry()
                elif kind == "compact":
                    await engine.compact()
                elif kind == "rewind":
                    engine.rewind()
                else:
                    result = await engine.submit(prompt)
            except Exception:  # the engine must never raise for a turn: report it, go on
                problems.append(
                    f"turn {turn} ({segment.describe()}): {kind} raised\n{traceback.format_exc()}"
                )
                ps.last_outcome = "failed"
            audit, fresh = audit_turn(
                session,
                list(events),
                prompt=prompt if kind not in ("retry",) else None,
                committed_before=committed[segment.provider],
            )
            ps.keys = [e.key for e in store.archive_list(session.id, limit=50)]
            learned = state.learned_cap(route.endpoint_id)
            if cap_before is not None and (learned is None or learned.cap_bytes > cap_before):
                problems.append(
                    f"turn {turn} [{segment.provider}]: the learned cap grew or vanished "
                    f"({cap_before} -> {learned.cap_bytes if learned else None}) without /cap reset"
                )
            cap_before = learned.cap_bytes if learned else None
            tally.lost += audit.lost
            problems += [
                f"turn {turn} [{segment.provider} {kind}] ({segment.describe()}): {p}" for p in audit.problems
            ]
            if result is None:
                continue
            tally.turns += 1
            ps.last_outcome = result.outcome
            if result.outcome == "answered":
                if audit.had_failure:
                    tally.recovered += 1
                    tally.failure_kinds.update(s.kind for s in audit.spans if s.failed)
                else:
                    tally.clean += 1
            elif result.outcome == "failed":
                if result.error.strip():
                    tally.failed_with_diagnosis += 1
                    tally.failure_kinds.update(s.kind for s in audit.spans if s.failed)
                elif kind == "retry" and not audit.spans:
                    pass
                else:
                    problems.append(f"turn {turn} [{segment.provider} {kind}]: failed without a diagnosis")
            elif result.outcome == "partial":
                last = fresh.master[-1] if fresh.master else None
                if last is not None and last.role == "assistant" and last.meta.partial:
                    tally.partial_kept += 1
                else:
                    problems.append(
                        f"turn {turn} [{segment.provider} {kind}]: partial outcome but no partial "
                        f"answer at the end of the master log"
                    )
            else:
                problems.append(
                    f"turn {turn} [{segment.provider} {kind}]: unexpected outcome {result.outcome}"
                )
        unsubscribe()
        await engine.close()

    for ps in (p for p in providers.values() if p.session_id):  # every receipt is one JSON object per line
        receipts = store.session_folder(ps.session_id) / "compaction.jsonl"
        for number, line in enumerate(
            receipts.read_text(encoding="utf-8").splitlines() if receipts.exists() else []
        ):
            try:
                assert isinstance(json.loads(line), dict)
            except (ValueError, AssertionError):
                problems.append(f"{receipts}:{number + 1}: not a JSON object: {line[:80]!r}")

    total = Tally()
    for t in tallies.values():
        for name in ("turns", "clean", "recovered", "failed_with_diagnosis", "partial_kept", "lost"):
            setattr(total, name, getattr(total, name) + getattr(t, name))
        total.failure_kinds.update(t.failure_kinds)
        total.commands.update(t.commands)
    lines = [
        f"fault soak: {TURNS} turns, seed {SEED}, {len(segments)} segments",
        f"{'provider':10} {'turns':>6} {'recovered':>10} {'clean':>6} {'failed+diag':>12} {'partial':>8} "
        f"{'lost':>5}",
    ]
    lines += [tallies[p].row(p) for p in PROVIDERS] + [total.row("total")]
    lines.append(f"failures met: {dict(total.failure_kinds.most_common())}")
    lines.append(f"user actions: {dict(total.commands.most_common())}")
    lines.append(f"invariant problems: {len(problems)}")
    report = "\n".join(lines)
    with capsys.disabled():
        print("\n" + report)
        for problem in problems[:15]:
            print("  ✖ " + problem.replace("\n", "\n    "))
    if REPORT_PATH:
        Path(REPORT_PATH).write_text(
            json.dumps(
                {
                    "turns": TURNS,
                    "seed": SEED,
                    "segments": segments,
                    "problems": problems,
                    "providers": {
                        p: {
                            k: getattr(t, k)
                            for k in (
                                "turns",
                                "recovered",
                                "clean",
                                "failed_with_diagnosis",
                                "partial_kept",
                                "lost",
                            )
                        }
                        for p, t in tallies.items()
                    },
                },
                indent=1,
            ),
            encoding="utf-8",
        )

    assert total.lost == 0, report
    assert not problems, report + "\n" + "\n".join(problems[:30])
    assert all(tallies[p].turns for p in PROVIDERS), "every provider took turns"
    assert total.recovered and total.partial_kept and total.failed_with_diagnosis, report
    if TURNS >= 100:  # the CI run meets each family of failure at least once
        met = set(total.failure_kinds)
        assert {"payload_too_large", "waf_block", "context_overflow"} <= met, report
        assert met & {"rate_limit", "overloaded", "server_error"}, report


# -- the auditor is not blind: each broken promise, staged by hand, is reported -----------------------


def _staged_session() -> Session:
    from app.model.messages import Message

    session = Session.create(Store(), route="t", provider="anthropic", model="m")
    session.append(Message.create("user", "hello", turn=1))
    return session


def _request(request_id: str, kind: str | None = None, text: str = "") -> list[Event]:
    from app.model.events import RequestFinished, RequestStarted, TextDelta

    events: list[Event] = [
        RequestStarted(request_id=request_id, route="t", purpose="chat", predicted_bytes=10)
    ]
    if text:
        events.append(TextDelta(text))
    events.append(
        RequestFinished(
            request_id=request_id,
            route="t",
            purpose="chat",
            predicted_bytes=10,
            bytes=10,
            status=200 if kind is None else 500,
            latency_ms=1.0,
            kind=kind,
        )
    )
    return events


def test_the_auditor_reports_an_answer_received_but_not_stored():
    session = _staged_session()
    audit, _ = audit_turn(
        session, _request("r1", text="an answer nobody kept"), prompt=None, committed_before=set()
    )
    assert audit.lost == 1 and "answers received" in audit.problems[0]


def test_the_auditor_reports_a_retry_after_visible_output():
    from app.model.events import TurnStarted

    session = _staged_session()
    events = [
        TurnStarted(turn=1, prompt="hello"),
        *_request("r1", "connection_drop", "half an ans"),
        *_request("r2"),
    ]
    audit, _ = audit_turn(session, events, prompt=None, committed_before=set())
    assert any("started after r1 failed with visible output" in p for p in audit.problems)


def test_the_auditor_reports_a_vanished_message_a_dangling_marker_and_wrong_counters():
    from app.model.messages import Message

    session = _staged_session()
    session.append(Message.create("assistant", "see <<ccr:0123456789abcdef>>", turn=1))
    session.counters.requests = 3
    session.save_counters()
    audit, _ = audit_turn(session, [], prompt="a prompt never sent", committed_before={"m_gone"})
    assert audit.lost == 2  # the vanished message and the missing prompt
    assert any("does not resolve" in p for p in audit.problems)
    assert any("counters.requests = 3 but 0 request rows" in p for p in audit.problems)


def test_the_auditor_reports_a_view_that_opens_with_an_answer():
    from app.model.messages import Message

    session = Session.create(Store(), route="t", provider="anthropic", model="m")
    session.append(Message.create("assistant", "I speak first", turn=1))
    audit, _ = audit_turn(session, [], prompt=None, committed_before=set())
    assert any("view starts with an 'assistant' message" in p for p in audit.problems)
