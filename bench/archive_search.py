"""Benchmark: FTS5 search over 50,000 archive entries in a real SQLite file.

    python3 bench/archive_search.py             # build 50k entries once, then time the queries
    python3 bench/archive_search.py --json      # one JSON line per query, then the headline
    python3 bench/archive_search.py --quick     # 10,000 entries, fewer runs
    python3 bench/archive_search.py --keep DIR  # build into DIR/bulkhead.db (or reuse it when it is there)

The database is bulkhead's own (`app.store.Store`: WAL, the `archive` table and its external-content
FTS5 index kept by triggers), in a temporary BULKHEAD_HOME. Entries are spread over 50 sessions
(1,000 each) and are what compaction archives: source code (Python with varied identifiers),
logs (timestamped lines from services, HTTP statuses, tracebacks) and prose (assistant answers,
notes) — sizes from 200 B to 16 KB, median ≈ 900 B, a few large ones; generated from a seeded
vocabulary, so every run builds the same archive. They are inserted with `Store.archive_put` in
batches of 50 (about what one compaction commits), and the insert time of all of them is
reported once.

Queries go through `Store.archive_search` (each word a quoted prefix term, AND, ORDER BY rank,
LIMIT 100 — what `bulkhead archive search` and the Archive panel run), globally and scoped to one
session (the panel's search). Each is timed `--runs` times after one untimed warm-up; medians.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (
    Output,
    fmt_bytes,
    fmt_ms,
    fmt_ratio,
    machine_note,
    median,
    parser,
    ratio,
    temp_home,
)

ENTRIES = 50_000
SESSIONS = 50
BATCH = 50
RARE_EVERY = 2_500  # "quokka" is planted in 1 entry out of 2,500 (20 in 50k)

IDENTS = [
    "request",
    "response",
    "session",
    "payload",
    "archive",
    "handler",
    "config",
    "router",
    "cache",
    "token",
    "stream",
    "buffer",
    "socket",
    "client",
    "server",
    "message",
    "parser",
    "encoder",
    "serializer",
    "validator",
    "gateway",
    "retry",
    "backoff",
    "compact",
    "summary",
    "ledger",
    "invoice",
    "account",
    "widget",
    "screen",
    "render",
    "layout",
    "queue",
    "worker",
    "scheduler",
    "metric",
]
VERBS = [
    "get",
    "set",
    "load",
    "save",
    "build",
    "parse",
    "render",
    "send",
    "fetch",
    "update",
    "delete",
    "serialize",
    "validate",
    "compact",
    "measure",
    "flush",
    "open",
    "close",
    "retry",
    "resolve",
]
SERVICES = ["api-gateway", "auth", "billing", "search", "ingest", "scheduler", "proxy", "nginx", "worker"]
LOG_MESSAGES = [
    "connection reset by peer",
    "upstream timed out while reading response header",
    "request entity too large",
    "retrying after backoff",
    "cache miss for key",
    "user authenticated",
    "rate limit exceeded for client",
    "payload accepted",
    "TLS handshake failed",
    "health check passed",
    "deadlock detected, rolling back",
    "serialization error in field",
    "queue depth above threshold",
    "worker restarted",
]
PROSE_WORDS = (
    "the of and to in that is for it with as was on be by this are from or have an they which "
    "one you were all we when there can an your more if will about would so what up out them "
    "some other into time could these two may first then do any like my now over such our man "
    "me even most made after also did many before must through back years where much way well "
    "gateway proxy session context window compaction archive summary recovery cap payload "
    "request answer model tool result file test failure fix refactor module function class "
    "performance latency memory stream render terminal keyboard database index query"
).split()


def code_entry(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        ident = rng.choice(IDENTS)
        verb = rng.choice(VERBS)
        name = f"{verb}_{ident}"
        lines.append(f"def {name}(self, {ident}: {ident.title()}, timeout: float = {rng.randint(1, 60)}.0):")
        lines.append(f'    """{verb.title()} the {ident} and return the {rng.choice(IDENTS)}."""')
        for _ in range(rng.randint(2, 6)):
            other = rng.choice(IDENTS)
            lines.append(
                f"    {other} = self.{rng.choice(VERBS)}_{other}({ident}, retries={rng.randint(0, 5)})"
            )
        lines.append(f"    return {rng.choice(IDENTS)}")
        lines.append("")
    return "\n".join(lines)[:size]


def log_entry(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
        level = rng.choice(["INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG"])
        service = rng.choice(SERVICES)
        status = rng.choice([200, 200, 200, 201, 304, 403, 413, 429, 500, 502, 503])
        lines.append(
            f"2026-05-{rng.randint(1, 28):02d}T{hour:02d}:{minute:02d}:{second:02d}Z {level:<5} "
            f"[{service}] {rng.choice(LOG_MESSAGES)} status={status} "
            f"latency_ms={rng.randint(1, 9000)} req_id={rng.getrandbits(48):012x}"
        )
        if level == "ERROR" and rng.random() < 0.3:
            lines.append("Traceback (most recent call last):")
            lines.append(
                f'  File "app/{rng.choice(IDENTS)}.py", line {rng.randint(1, 900)}, in '
                f"{rng.choice(VERBS)}_{rng.choice(IDENTS)}"
            )
            lines.append(
                f"{rng.choice(['TimeoutError', 'ConnectionResetError', 'ValueError'])}: "
                f"{rng.choice(LOG_MESSAGES)}"
            )
    return "\n".join(lines)[:size]


def prose_entry(rng: random.Random, size: int) -> str:
    words: list[str] = []
    total = 0
    while total < size:
        sentence = [rng.choice(PROSE_WORDS) for _ in range(rng.randint(6, 18))]
        sentence[0] = sentence[0].capitalize()
        text = " ".join(sentence) + rng.choice([".", ".", ".", "?", " — ✓.", "; ünïcødé ok."])
        words.append(text)
        total += len(text) + 1
    return " ".join(words)[:size]


def entry_size(rng: random.Random) -> int:
    if rng.random() < 0.02:
        return rng.randint(8_000, 16_000)  # a few whole tool results
    return int(min(16_000, max(200, rng.lognormvariate(6.8, 0.6))))


def make_content(i: int, rng: random.Random) -> str:
    kind = rng.random()
    size = entry_size(rng)
    if kind < 0.40:
        text = code_entry(rng, size)
    elif kind < 0.75:
        text = log_entry(rng, size)
    else:
        text = prose_entry(rng, size)
    if i % RARE_EVERY == 0:
        text += "\n# note: the quokka fixture reproduces it"
    return f"[entry {i}] " + text  # unique: the archive is content-addressed


def build(store, entries: int, out: Output) -> tuple[float, int, list[str]]:
    """Insert `entries` entries over SESSIONS sessions; returns (seconds, content bytes, session ids)."""
    from app.model.archive import make_entry

    rng = random.Random(10)
    session_ids = [f"s_bench_{n:03d}" for n in range(SESSIONS)]
    for session_id in session_ids:
        store.create_session(session_id, title=f"bench {session_id}", initial_view_id=f"v_{session_id}")
    per_session = entries // SESSIONS
    total_bytes = 0
    elapsed = 0.0
    reasons = ("microcompact", "dedup", "budget", "L2", "L3", "summary")
    for s, session_id in enumerate(session_ids):
        for first in range(0, per_session, BATCH):
            batch = []
            for j in range(first, min(per_session, first + BATCH)):
                index = s * per_session + j
                entry = make_entry(make_content(index, rng), reasons[index % len(reasons)], (f"m_{index}",))
                batch.append(entry)
                total_bytes += entry.bytes
            start = time.perf_counter()
            store.archive_put(session_id, batch)
            elapsed += time.perf_counter() - start
        if not out.as_json and (s + 1) % 10 == 0:
            print(
                f"  … {(s + 1) * per_session:,} entries inserted ({elapsed:.1f} s in archive_put)", flush=True
            )
    return elapsed, total_bytes, session_ids


QUERIES = (
    ("single word, common", "timeout"),
    ("single word, rare", "quokka"),
    ("single word, very common", "return"),
    ("multi-word", "connection reset peer"),
    ("multi-word, code", "serialize payload retries"),
    ("prefix", "serial"),
    ("no hit", "xylophonequartz"),
)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.split("\n\n")[0], runs=15)
    p.add_argument("--entries", type=int, default=None, help=f"entries to insert (default {ENTRIES:,})")
    p.add_argument("--keep", metavar="DIR", help="build into DIR (kept), or reuse the archive already there")
    args = p.parse_args(argv)
    entries = args.entries or (10_000 if args.quick else ENTRIES)
    runs = args.runs or (5 if args.quick else 15)
    out = Output("archive_search", args.json)

    import contextlib
    import os

    with contextlib.ExitStack() as stack:
        if args.keep:
            home = Path(args.keep).resolve()
            home.mkdir(parents=True, exist_ok=True)
            os.environ["BULKHEAD_HOME"] = str(home)
        else:
            home = stack.enter_context(temp_home())
        from app.store import Store

        store = Store()
        existing = store.query("SELECT count(*) FROM archive")[0][0]
        out.text(f"archive search: FTS5 in {store.path}; {machine_note()}")
        if existing:
            insert_s, content_bytes = float("nan"), store.query("SELECT sum(bytes) FROM archive")[0][0]
            session_ids = [r[0] for r in store.query("SELECT id FROM sessions ORDER BY id")]
            entries = existing
            out.text(f"reusing {existing:,} entries already in {store.path}")
        else:
            out.text(f"inserting {entries:,} entries in {SESSIONS} sessions (batches of {BATCH}) …")
            insert_s, content_bytes, session_ids = build(store, entries, out)
        db_bytes = sum(f.stat().st_size for f in store.path.parent.glob(store.path.name + "*"))
        out.record(
            {
                "kind": "insert",
                "entries": entries,
                "seconds": round(insert_s, 2),
                "entries_per_s": round(entries / insert_s) if insert_s == insert_s else None,
                "content_bytes": content_bytes,
                "db_bytes": db_bytes,
            },
            f"insert: {entries:,} entries ({fmt_bytes(content_bytes)} of content) in {insert_s:.1f} s "
            f"= {entries / insert_s:,.0f} entries/s; database {fmt_bytes(db_bytes)}",
        )
        scoped = session_ids[len(session_ids) // 2]
        out.text(
            f"\n{'query':<28} {'terms':<28} {'hits':>6} {'global ms':>10} {'session ms':>11} "
            f"{'scoped/global':>14}"
        )
        medians: dict[str, float] = {}
        session_by: dict[str, float] = {}
        matches_by: dict[str, int] = {}
        for label, query in QUERIES:
            timings = {}
            hits = {}
            for where, session_id in (("global", None), ("session", scoped)):
                store.archive_search(query, session_id)  # warm-up
                samples = []
                for _ in range(runs):
                    start = time.perf_counter()
                    found = store.archive_search(query, session_id)
                    samples.append((time.perf_counter() - start) * 1000)
                timings[where] = median(samples)
                hits[where] = len(found)
            matches = store.query(
                "SELECT count(*) FROM archive_fts WHERE archive_fts MATCH ?",
                (" ".join(f'"{w}"*' for w in query.split()),),
            )[0][0]
            medians[label] = timings["global"]
            session_by[label] = timings["session"]
            matches_by[label] = matches
            out.record(
                {
                    "kind": "query",
                    "query": label,
                    "terms": query,
                    "matches": matches,
                    "returned_global": hits["global"],
                    "returned_session": hits["session"],
                    "global_ms": round(timings["global"], 3),
                    "session_ms": round(timings["session"], 3),
                },
                f"{label:<28} {query:<28} {matches:>6} {fmt_ms(timings['global']):>10} "
                f"{fmt_ms(timings['session']):>11} {fmt_ratio(ratio(timings['session'], timings['global'])):>14}",
            )
        store.close()
    hitting = [k for k, _ in QUERIES if matches_by[k] >= 1000]
    low = min(medians[k] for k in hitting)
    high = max(medians[k] for k in hitting)
    scoped = [ratio(session_by[k], medians[k]) for k in hitting]
    figure = (
        f"{fmt_ms(low)}–{fmt_ms(high)} ms for queries with {min(matches_by[k] for k in hitting):,}–"
        f"{max(matches_by[k] for k in hitting):,} matches; rare word {fmt_ms(medians['single word, rare'])} ms, "
        f"no hit {fmt_ms(medians['no hit'])} ms"
    )
    if insert_s == insert_s:
        figure += f"; insert {entries / insert_s:,.0f} entries/s"
    out.headline(
        f"archive search, {entries:,} entries (FTS5, ranked)",
        figure,
        f"session-scoped / global {fmt_ratio(min(scoped))}–{fmt_ratio(max(scoped))}",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
