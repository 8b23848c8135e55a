"""Issue 41, part 2, from the real entry point: `python3 -m app -p --continue --json` with the built-in lab.

A one-shot run compacts before its request (a 24 KB cap); the segment it drops is queued first (the event comes
before the compaction's, the receipts say `memory: queued` then `view committed`), and `-p` reads the queue before
it exits: the `remember:` lines of the dropped messages become facts to review — nothing is written to the
workspace. With `memory = "auto"` the facts go to the memory file under BULKHEAD_HOME and the next run's request
carries them (the floor says how many bytes).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


def _run(tmp_path: Path, prompt: str, config: str) -> list[dict]:
    (tmp_path / "config.toml").write_text(config)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "app", "-p", prompt, "--continue", "--json"],
        capture_output=True,
        text=True,
        cwd=workspace,
        env={**os.environ, "BULKHEAD_CONFIG": str(tmp_path / "config.toml"), "PYTHONPATH": os.getcwd()},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_p_queues_before_it_compacts_and_reads_the_queue_before_it_exits(tmp_path, isolated_home):
    config = 'max_payload = "24KB"\n'
    events: list[dict] = []
    for i in range(4):
        events += _run(tmp_path, f"remember: rule {i} of the house\n!big 12KB", config)

    types = [e["type"] for e in events]
    queued = [e for e in events if e["type"] == "memory_queued"]
    assert queued, "no compaction queued anything"
    first = types.index("memory_queued")
    assert types.index("compaction", first) > first  # the queue, then the compaction's view commit
    distilled = [e for e in events if e["type"] == "memory_distilled"]
    facts = [f for e in distilled for f in e["facts"]]
    assert "rule 0 of the house" in facts and all(e["mode"] == "suggest" for e in distilled)

    receipts = [
        json.loads(line)
        for path in (isolated_home / "sessions").glob("*/compaction.jsonl")
        for line in path.read_text().splitlines()
    ]
    memory = [(r["event"], r["queue_id"]) for r in receipts if r.get("method") == "memory"]
    assert memory[0][0].startswith("memory: queued") and memory[1] == ("view committed", memory[0][1])
    db = sqlite3.connect(isolated_home / "bulkhead.db")
    try:
        assert db.execute("SELECT COUNT(*) FROM memory_queue WHERE state = 'queued'").fetchone()[0] == 0
        pending = {row[0] for row in db.execute("SELECT text FROM memory_facts WHERE state = 'pending'")}
    finally:
        db.close()
    assert "rule 0 of the house" in pending
    assert not list((tmp_path / "ws").iterdir())  # suggest: nothing written to the workspace


def test_auto_memory_joins_the_next_request_and_its_floor(tmp_path, isolated_home):
    config = 'max_payload = "24KB"\nmemory = "auto"\n'
    for i in range(4):
        _run(tmp_path, f"remember: auto rule {i}\n!big 12KB", config)

    files = list((isolated_home / "memory").glob("*.md"))
    assert len(files) == 1 and "- auto rule 0" in files[0].read_text()
    events = _run(tmp_path, "what do you know?", config)
    view = next(e for e in events if e["type"] == "view")
    floor = {part["label"]: part["bytes"] for part in view["floor"]}
    facts_bytes = sum(
        len(line.encode()) for line in files[0].read_text().splitlines() if line.startswith("- ")
    )
    assert floor.get("memory", 0) >= facts_bytes  # every request carries the memory file's facts
