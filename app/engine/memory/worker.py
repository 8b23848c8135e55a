"""The memory worker: durable facts distilled from the conversation, and nothing lost to a compaction.

    worker = MemoryWorker(engine)        # installs itself as the session's commit guard (memory != "off")
    worker.after_turn()                  # the TUI: read what is `memory_lag_turns` behind, in the background
    await worker.drain_queue()           # `-p`: read what compactions queued, before exiting

Two ways in, one way out:

1. **Behind the conversation.** Every `memory_lag_turns` turns the worker reads the master messages still in the
   view that are at least that many turns old (`memory_progress` says how far it got) and asks the summarizer
   route (`compact_model`, else the session's) for durable facts.
2. **Before a compaction.** Every view commit of a compaction — auto, pre-flight, `/compact` with or without
   instructions, each recovery level, the provider's own compaction and context edits, in the TUI and in `-p` —
   first passes here (`Session.commit_guard`): the master messages the new view no longer holds that the worker
   has not read go into the durable queue (`memory_queue`, its own SQLite transaction) *before* the view is
   written; the receipt file says so in that order (`memory: queued N messages`, then `view committed`). A crash
   between the two leaves the segment queued and the old view active: nothing is lost, at most read twice.

What it finds goes to the session memory journal (`memory_facts`) and then, by `memory`:
- `suggest`: the facts wait for `/memory review` (accept → the project's instructions file through `/memory`'s
  own door, with its link and confinement checks; edit; reject) — never written to the repository unasked;
- `auto`: appended to a file of bulkhead's outside the repository (`app.engine.memory.memory_file`) that joins
  the system prompt like the instruction files, is measured in the floor and kept within `memory_max_bytes`.

Every request it makes (app.engine.memory.distil) is fitted under the summarizer route's effective cap (the sender
refuses anything over it) and its window; a size refusal teaches the cap and the segment is read again in smaller
parts, like any request is recovered. A request that fails otherwise leaves the segment queued for the next try.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from app.engine.failpoints import reached
from app.engine.memory.distil import DistilHost, Distiller, MemoryFailed
from app.engine.memory.journal import Fact, MemoryJournal, QueueEntry
from app.engine.memory.memory_file import append_facts, memory_path, project_key, prompt_section
from app.engine.notice_words import notice
from app.model.events import MemoryDistilled, MemoryQueued
from app.model.messages import Message, View
from app.model.notice_facts.memory import (
    MemoryFileFull,
    MemoryFileUnwritable,
    MemoryOff,
    MemoryStillQueued,
    MemoryStopped,
)

if TYPE_CHECKING:
    from app.config import Route
    from app.model.events import ViewChanged

# The view changes that are compactions (their reason's first word): what they take out is queued first. A
# `/retry`, `/rewind`, an image stub or withheld text is the user's own choice and reaches no memory.
COMPACTION_REASONS = ("auto", "preflight", "manual", "recovery", "provider", "provider-edit")
SKIPPED_ORIGINS = ("notice", "summary", "stub")  # bulkhead's own words, never facts of the project
QUEUE_BATCH = 20  # queued segments read in one go


class MemoryHost(DistilHost, Protocol):
    """What the worker uses of the engine (app.engine.turn.Engine satisfies it)."""

    workspace: Path
    route: Route

    def load_instructions(self) -> Any: ...

    def remember(self, text: str) -> Path: ...

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged: ...


@dataclass(frozen=True)
class Queued:
    queue_id: int
    messages: int
    bytes: int


def compaction_reason(reason: str) -> bool:
    return reason.split(":", 1)[0] in COMPACTION_REASONS


def _worth_reading(message: Message) -> bool:
    return message.role != "system" and message.meta.origin not in SKIPPED_ORIGINS


class MemoryWorker:
    def __init__(self, engine: MemoryHost) -> None:
        self.engine = engine
        self.mode = engine.settings.memory
        self.journal = MemoryJournal(engine.session.store)
        self.project = project_key(engine.workspace)
        self.background = True  # the TUI reads behind the conversation after each turn; `-p` only drains
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self.distiller = Distiller(engine)
        self._reading = (
            asyncio.Lock()
        )  # one read at a time: the background one and `-p`'s drain never overlap
        if self.enabled:
            engine.session.commit_guard = self
            try:  # a session it has not seen is read from here on (a new one: from its start)
                self.journal.begin(engine.session.id, engine.session.master_len() - 1)
            except Exception as exc:  # a full disk: no memory this time, said once
                self.mode = "off"
                engine.session.commit_guard = None
                engine.emit(notice(MemoryOff(error=str(exc))))

    @property
    def enabled(self) -> bool:
        return self.mode != "off" and not self.engine.session.read_only

    @property
    def path(self) -> Path:
        return memory_path(self.engine.workspace)

    # -- the system prompt (auto) ------------------------------------------------------------------
    def prompt_section(self) -> str:
        """The memory file's facts for the system prompt (memory = "auto"), within memory_max_bytes."""
        if self.mode != "auto":
            return ""
        try:
            return prompt_section(self.path, self.engine.settings.memory_max_bytes)
        except OSError:
            return ""

    # -- before a compaction's view commit (Session.commit_guard) ----------------------------------------
    def before_commit(
        self, active: View, messages: tuple[Message, ...], reason: str
    ) -> Callable[[View], None] | None:
        """Queue what this compaction takes out of the view that the worker has not read, durably, now."""
        if not self.enabled or not compaction_reason(reason):
            return None
        session = self.engine.session
        staying = {m.id for m in messages}
        leaving = [m for m in active.messages if m.id not in staying and session.is_master(m)]
        if not leaving:
            return None
        read_up_to = self.journal.progress(session.id)
        queued = self.journal.queued_ids(session.id)
        unread = [
            m
            for m in leaving
            if m.id not in queued and (session.seq_of(m.id) or 0) > read_up_to and _worth_reading(m)
        ]
        if not unread:
            return None
        size = sum(len(m.all_text().encode("utf-8", "surrogatepass")) for m in unread)
        queue_id = self.journal.queue(session.id, reason, [m.id for m in unread], size)
        reached("memory.queued")  # the reliability tests crash here: the segment is queued, the view not yet
        trigger = reason.split(":", 1)[0]
        session.write_receipt(
            _receipt(
                trigger,
                f"memory: queued {len(unread)} messages",
                queue_id=queue_id,
                reason=reason,
                bytes=size,
            )
        )
        self.engine.emit(MemoryQueued(queue_id=queue_id, messages=len(unread), bytes=size, reason=reason))

        def committed(view: View) -> None:
            reached("memory.committed")
            session.write_receipt(
                _receipt(trigger, "view committed", queue_id=queue_id, reason=reason, view_id=view.id)
            )

        return committed

    # -- scheduling ---------------------------------------------------------------------------------------
    def after_turn(self) -> None:
        """After a turn (or a compaction): read what waits, in the background (not in `-p`: see `drain_queue`)."""
        if not self.enabled or not self.background:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = loop.create_task(self._run(), name="memory worker")

    async def _run(self) -> None:
        while True:
            self._again = False
            try:
                await self.catch_up(live=True)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the worker never breaks a session; it says why once
                self.engine.emit(notice(MemoryStopped(error=str(exc))))
                return
            if not self._again:
                return

    async def drain_queue(self) -> None:
        """Read every queued segment of this project now (`-p` before it exits); failures are said, kept queued."""
        if not self.enabled:
            return
        try:
            await self.catch_up(live=False)
        except Exception as exc:  # the segment stays queued: the next session reads it
            self.engine.emit(notice(MemoryStillQueued(error=str(exc))))

    async def yield_to_turn(self) -> None:
        """A turn starts: a background read in flight stops (it never competes with the turn for the gateway;
        what it had not recorded is read again after the turn)."""
        await self.close()

    async def close(self) -> None:
        """Stop a background read (what it had not finished stays queued, or unread: the next session reads it)."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- reading --------------------------------------------------------------------------------------------
    async def catch_up(self, *, live: bool) -> None:
        """Read the queued segments (this project's, oldest first), then — `live` — the conversation behind."""
        async with self._reading:
            await self._catch_up(live=live)

    async def _catch_up(self, *, live: bool) -> None:
        session = self.engine.session
        sessions = self.journal.sessions_of(session.workspace) if session.workspace else []
        sessions = list(dict.fromkeys([session.id, *sessions]))
        for entry in self.journal.waiting(sessions, limit=QUEUE_BATCH):
            messages = self._messages(entry)
            try:
                facts = await self.distiller.distil(messages) if messages else []
            except MemoryFailed as failed:
                self.journal.failed(entry.id, str(failed))
                raise
            self._found(facts, source=f"queue {entry.id}", session_id=entry.session_id, queue_id=entry.id)
        if live:
            await self._read_behind()

    def _messages(self, entry: QueueEntry) -> list[Message]:
        """The queued messages, from the master log that keeps them."""
        session = self.engine.session
        if entry.session_id == session.id and not session.head_waiting:
            by_id = {m.id: m for m in session.master}
        else:
            by_id = {m.id: m for m in session.store.load_master(entry.session_id)}
        return [by_id[i] for i in entry.message_ids if i in by_id]

    async def _read_behind(self) -> None:
        session = self.engine.session
        if session.head_waiting:  # a long session opened from its end: read once its head is decoded
            return
        lag = self.engine.settings.memory_lag_turns
        boundary = session.turn - lag
        if boundary < 1:
            return
        read_up_to = self.journal.progress(session.id)
        master = session.master
        in_view = {m.id for m in session.view.messages}
        queued = self.journal.queued_ids(session.id)
        chosen: list[Message] = []
        last = read_up_to
        turns: set[int] = set()
        for seq in range(read_up_to + 1, len(master)):
            message = master[seq]
            if message.meta.turn > boundary:
                break
            last = seq
            turns.add(message.meta.turn)
            if message.id in in_view and message.id not in queued and _worth_reading(message):
                chosen.append(message)
        if last == read_up_to or len(turns) < max(1, lag):  # a few turns at once: a request per `lag` turns
            return
        facts = await self.distiller.distil(chosen) if chosen else []
        self._found(facts, source="conversation", session_id=session.id, progress=last)

    # -- what was found -----------------------------------------------------------------------------------
    def _found(
        self,
        facts: Sequence[str],
        *,
        source: str,
        session_id: str,
        queue_id: int | None = None,
        progress: int | None = None,
    ) -> list[Fact]:
        settings = self.engine.settings
        path = ""
        state = "pending"
        if self.mode == "auto":
            state = "kept"
            path = str(self.path)
        recorded = self.journal.distilled(
            session_id,
            self.project,
            facts,
            source=source,
            state="kept" if state == "kept" else "pending",
            queue_id=queue_id,
            progress=progress,
            written_to=path,
        )
        if not recorded:
            return recorded
        if self.mode == "auto":
            try:
                _added, dropped = append_facts(
                    self.path, [f.text for f in recorded], settings.memory_max_bytes
                )
            except OSError as exc:
                self.engine.emit(notice(MemoryFileUnwritable(path=str(self.path), error=str(exc))))
                return recorded
            if dropped:
                self.engine.emit(notice(MemoryFileFull(max_bytes=settings.memory_max_bytes, dropped=dropped)))
            self.engine.load_instructions()  # the file joins the system prompt: the floor grows
            self.engine.view_changed("memory")
        pending = len(self.journal.facts(self.project, "pending")) if self.mode == "suggest" else 0
        self.engine.emit(
            MemoryDistilled(
                facts=tuple(f.text for f in recorded),
                mode=self.mode,
                source=source,
                pending=pending,
                path=path,
            )
        )
        return recorded

    # -- review (memory = "suggest") ------------------------------------------------------------------------
    def pending(self) -> list[Fact]:
        return self.journal.facts(self.project, "pending")

    def reject(self, fact: Fact) -> None:
        self.journal.decide(fact.id, "rejected")

    def accept(self, fact: Fact, text: str | None = None) -> Path:
        """Write the fact (or its edited `text`) to the project's instructions file through `/memory`'s own door —
        never through a link, never outside the project — then mark it accepted. OSError: it stays pending."""
        edited = " ".join((text if text is not None else fact.text).split())
        if not edited:
            raise ValueError("an empty fact: reject it instead")
        path = self.engine.remember(edited)
        self.journal.decide(
            fact.id, "accepted", text=edited if edited != fact.text else None, written_to=str(path)
        )
        return path


def _receipt(trigger: str, event: str, **fields: Any) -> dict[str, Any]:
    """A line of the compaction receipts file recording the memory flush and the commit, in their order."""
    stamp = datetime.fromtimestamp(time.time(), UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"timestamp": stamp, "trigger": trigger, "method": "memory", "event": event, **fields}
