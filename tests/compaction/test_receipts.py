"""Receipts: one JSON line per compaction; concurrent writers (threads, processes); best effort."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

from app.engine.receipts import RECEIPTS_FILE, make_receipt, read_receipts, write_receipt

FIELDS = {
    "timestamp",
    "trigger",
    "method",
    "level",
    "messages",
    "bytes",
    "tokens",
    "provider_bytes",
    "archive_keys",
    "elapsed_seconds",
    "retry_success",
    "outcome",
}


def receipt(**kw):
    base = dict(
        trigger="recovery",
        method="L2",
        level=2,
        messages_before=40,
        messages_after=11,
        bytes_before=400_000,
        bytes_after=90_001,
        outcome="applied",
        elapsed_seconds=0.25,
        archive_keys=["0123456789abcdef"],
        provider_bytes_before=401_000,
        provider_bytes_after=91_000,
        retry_success=True,
        timestamp=1_700_000_000.0,
    )
    base.update(kw)
    return make_receipt(**base)


def test_make_receipt_has_the_design_fields():
    record = receipt()
    assert set(record) == FIELDS
    assert record["messages"] == {"before": 40, "after": 11}
    assert record["bytes"] == {"before": 400_000, "after": 90_001}
    assert record["tokens"] == {"before_estimated": 100_000, "after_estimated": 22_501}
    assert record["provider_bytes"] == {"before": 401_000, "after": 91_000}
    assert record["timestamp"] == "2023-11-14T22:13:20.000Z"
    assert record["retry_success"] is True and record["outcome"] == "applied"
    assert (
        make_receipt(
            trigger="auto",
            method="none",
            level=0,
            messages_before=1,
            messages_after=1,
            bytes_before=1,
            bytes_after=1,
            outcome="skipped",
            elapsed_seconds=0,
            session_id="s_1",
        )["session_id"]
        == "s_1"
    )


def test_write_appends_one_line_to_a_private_file(tmp_path: Path):
    assert write_receipt(tmp_path, receipt())  # a folder: compaction.jsonl inside
    assert write_receipt(tmp_path / RECEIPTS_FILE, receipt(outcome="skipped"))
    path = tmp_path / RECEIPTS_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert [json.loads(line)["outcome"] for line in lines] == ["applied", "skipped"]
    assert [r["outcome"] for r in read_receipts(tmp_path)] == ["applied", "skipped"]


def test_a_failed_write_returns_false_and_never_raises(tmp_path: Path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    assert write_receipt(blocker / "compaction.jsonl", receipt()) is False
    assert write_receipt(Path("/proc/definitely/not/here.jsonl"), receipt()) is False
    # odd values are written as text rather than failing
    assert write_receipt(tmp_path / "r.jsonl", receipt(extra=object()))


def test_concurrent_threads_produce_valid_jsonl(tmp_path: Path):
    path = tmp_path / RECEIPTS_FILE
    payload = "x" * 50_000  # big lines, so interleaving would show

    def writer(n: int) -> None:
        for i in range(25):
            assert write_receipt(path, receipt(writer=n, seq=i, payload=payload))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 200
    records = [json.loads(line) for line in lines]
    assert {(r["writer"], r["seq"]) for r in records} == {(n, i) for n in range(8) for i in range(25)}


WRITER = """
import sys
from pathlib import Path
from app.engine.receipts import make_receipt, write_receipt
path, n = Path(sys.argv[1]), int(sys.argv[2])
for i in range(60):
    record = make_receipt(trigger="auto", method="trim", level=0, messages_before=1, messages_after=1,
                          bytes_before=1, bytes_after=1, outcome="applied", elapsed_seconds=0,
                          writer=n, seq=i, payload="y" * 200_000)
    assert write_receipt(path, record)
"""


def test_two_processes_produce_valid_jsonl(tmp_path: Path):
    path = tmp_path / RECEIPTS_FILE
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n)]) for n in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 120
    assert {(r["writer"], r["seq"]) for r in records} == {(n, i) for n in range(2) for i in range(60)}
