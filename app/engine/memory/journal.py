"""The memory worker's durable state, in the session database (schema 3): its queue, its journal, its progress.

- `memory_queue`: segments a compaction took out of the view before the worker had read them — written in a
  transaction of their own *before* the view changes (`queue`), so a crash between the two loses nothing; each
  entry names master messages (the log keeps them verbatim) and becomes `distilled` once read.
- `memory_facts`: the session memory journal — every fact distilled, with where it came from and its fate
  (`pending` review, `accepted` into the instructions file, `rejected`, or `kept` in the memory file).
- `memory_progress`: how far along the master log the worker has read the live conversation (a seq); every
  master message at or below it was read, or queued when a compaction took it away first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.model.memory import FactState, fact_key

if TYPE_CHECKING:
    from app.store import Store


@dataclass(frozen=True)
class QueueEntry:
    id: int
    session_id: str
    reason: str
    message_ids: tuple[str, ...]
    bytes: int
    attempts: int
    error: str


@dataclass(frozen=True)
class Fact:
    id: int
    session_id: str
    project: str
    text: str
    source: str
    state: FactState
    created_at: float
    written_to: str = ""


class MemoryJournal:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- the queue ------------------------------------------------------------------------------
    def queue(self, session_id: str, reason: str, message_ids: Sequence[str], size: int) -> int:
        """Queue a segment (one transaction, committed when this returns); its id."""
        with self.store.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO memory_queue (session_id, created_at, reason, message_ids, bytes) VALUES (?,?,?,?,?)",
                (session_id, time.time(), reason, json.dumps(list(message_ids)), size),
            )
            return int(cursor.lastrowid or 0)

    def queued_ids(self, session_id: str) -> set[str]:
        """Every master message id in this session's queue, read or not."""
        ids: set[str] = set()
        for row in self.store.query(
            "SELECT message_ids FROM memory_queue WHERE session_id = ?", (session_id,)
        ):
            ids.update(json.loads(row["message_ids"]))
        return ids

    def waiting(self, session_ids: Iterable[str], limit: int = 20) -> list[QueueEntry]:
        """Queued segments not read yet, oldest first."""
        ids = list(session_ids)
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.store.query(
            f"SELECT * FROM memory_queue WHERE state = 'queued' AND session_id IN ({marks}) ORDER BY id LIMIT ?",
            (*ids, limit),
        )
        return [
            QueueEntry(
                id=row["id"],
                session_id=row["session_id"],
                reason=row["reason"],
                message_ids=tuple(json.loads(row["message_ids"])),
                bytes=row["bytes"],
                attempts=row["attempts"],
                error=row["error"],
            )
            for row in rows
        ]

    def failed(self, queue_id: int, error: str) -> None:
        """A try at reading the entry failed: it stays queued (the next try may work), the reason kept."""
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE memory_queue SET attempts = attempts + 1, error = ? WHERE id = ?",
                (error[:500], queue_id),
            )

    # -- facts and progress ----------------------------------------------------------------------------
    def distilled(
        self,
        session_id: str,
        project: str,
        facts: Sequence[str],
        *,
        source: str,
        state: FactState,
        queue_id: int | None = None,
        progress: int | None = None,
        written_to: str = "",
    ) -> list[Fact]:
        """Record what a read found — the facts (those the project does not have yet) and the entry read or the
        progress made — in one transaction. Returns the facts recorded."""
        now = time.time()
        recorded: list[Fact] = []
        with self.store.transaction() as conn:
            known = {
                fact_key(row[0])
                for row in conn.execute("SELECT text FROM memory_facts WHERE project = ?", (project,))
            }
            for text in facts:
                key = fact_key(text)
                if key in known:
                    continue
                known.add(key)
                cursor = conn.execute(
                    "INSERT INTO memory_facts (session_id, project, created_at, text, source, state, decided_at, "
                    "written_to) VALUES (?,?,?,?,?,?,?,?)",
                    (
                        session_id,
                        project,
                        now,
                        text,
                        source,
                        state,
                        now if state != "pending" else None,
                        written_to,
                    ),
                )
                recorded.append(
                    Fact(
                        int(cursor.lastrowid or 0), session_id, project, text, source, state, now, written_to
                    )
                )
            if queue_id is not None:
                conn.execute(
                    "UPDATE memory_queue SET state = 'distilled', distilled_at = ?, error = '' WHERE id = ?",
                    (now, queue_id),
                )
            if progress is not None:
                conn.execute(
                    "INSERT INTO memory_progress (session_id, distilled_seq) VALUES (?, ?) "
                    "ON CONFLICT(session_id) DO UPDATE SET distilled_seq = MAX(distilled_seq, excluded.distilled_seq)",
                    (session_id, progress),
                )
        return recorded

    def begin(self, session_id: str, last_seq: int) -> None:
        """The first time the worker sees a session, it starts reading after `last_seq` (-1 for a new session):
        a session older than the memory worker is not read back to its beginning at a cost nobody asked for."""
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO memory_progress (session_id, distilled_seq) VALUES (?, ?)",
                (session_id, last_seq),
            )

    def progress(self, session_id: str) -> int:
        """The highest master seq the worker has read live (-1: none)."""
        rows = self.store.query(
            "SELECT distilled_seq FROM memory_progress WHERE session_id = ?", (session_id,)
        )
        return int(rows[0][0]) if rows else -1

    def facts(self, project: str, state: FactState | None = None) -> list[Fact]:
        sql = "SELECT * FROM memory_facts WHERE project = ?"
        params: list[object] = [project]
        if state is not None:
            sql += " AND state = ?"
            params.append(state)
        return [
            Fact(
                id=row["id"],
                session_id=row["session_id"],
                project=row["project"],
                text=row["text"],
                source=row["source"],
                state=row["state"],
                created_at=row["created_at"],
                written_to=row["written_to"],
            )
            for row in self.store.query(sql + " ORDER BY id", params)
        ]

    def decide(
        self, fact_id: int, state: FactState, *, text: str | None = None, written_to: str = ""
    ) -> None:
        """A reviewed fact: accepted (perhaps edited: `text`), rejected."""
        with self.store.transaction() as conn:
            if text is not None:
                conn.execute("UPDATE memory_facts SET text = ? WHERE id = ?", (text, fact_id))
            conn.execute(
                "UPDATE memory_facts SET state = ?, decided_at = ?, written_to = ? WHERE id = ?",
                (state, time.time(), written_to, fact_id),
            )

    def sessions_of(self, workspace: str) -> list[str]:
        """The sessions opened in `workspace` (their queues are this project's)."""
        return [
            row[0] for row in self.store.query("SELECT id FROM sessions WHERE workspace = ?", (workspace,))
        ]
