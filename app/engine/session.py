"""Session: the master log, the view stack, counters, flags and the event bus.

The master log is append-only and lossless. The active view (top of the stack) is what
the provider is sent. A compaction commits a new view together with its archive
entries, or nothing; `/rewind compact` pops back to the previous view, keeping every
message appended since.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from app.engine.head_later import HeadLater, plan_head_later
from app.engine.receipts import write_receipt
from app.engine.writer import SessionWriter
from app.lease import Holder, SessionReadOnly, this_process
from app.model.archive import ArchiveEntry
from app.model.costs import Counters
from app.model.events import Event, EventBus, MessageAdded
from app.model.messages import Message, View, new_id
from app.redact import clip_redacted, redact_value
from app.store import SessionRow, Store

TITLE_MAX_CHARS = 120  # a title set with /rename or the sessions screen


class CommitGuard(Protocol):
    def before_commit(
        self, active: View, messages: tuple[Message, ...], reason: str
    ) -> Callable[[View], None] | None: ...


class SessionNotFound(Exception):
    pass


def clean_title(title: str) -> str:
    """A title — one line, at most TITLE_MAX_CHARS, valid UTF-8; ValueError when nothing is left of it."""
    cleaned = " ".join(title.split())[:TITLE_MAX_CHARS]
    cleaned = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in cleaned)
    if not cleaned:
        raise ValueError("a title needs some text: /rename TITLE")
    return cleaned


def rename_session(store: Store, session_id: str, title: str) -> str:
    """Set a session's title (see `clean_title`) without loading it; returns the title stored."""
    cleaned = clean_title(title)
    store.update_session(session_id, title=cleaned)
    return cleaned


class Session:
    def __init__(
        self,
        store: Store,
        row: SessionRow,
        master: list[Message],
        views: list[View],
        later: HeadLater | None = None,
    ) -> None:
        """`later`: opened from its end (`app.engine.head_later`): `master` is its decoded tail, `views` empty
        until `complete()`."""
        self.store = store
        self.id = row.id
        self.title = row.title
        self.route = row.route
        self.provider = row.provider
        self.model = row.model
        self.workspace = row.workspace
        self.system_prompt = row.system_prompt
        self.created_at = row.created_at
        self._master: list[Message] = master
        self._views: list[View] = views
        self._later = later
        self.head_count = later.start if later is not None else 0  # master messages opened undecoded
        self._completing = threading.Lock()
        self._opened: tuple[View, HeadLater] | None = None  # the active view `complete` made, and `later`
        ids = later.ids if later is not None else [m.id for m in master]
        self._seq: dict[str, int] = {message_id: i for i, message_id in enumerate(ids)}
        self.counters = Counters.from_dict(row.counters)
        self.flags: dict[str, Any] = dict(row.flags)
        self.bus = EventBus()
        # the latest user turn (turns only grow along the log: a tail has it; `complete` makes sure)
        self.turn = max((m.meta.turn for m in master), default=0)
        self.lease: Holder | None = None  # this process's lease, while it holds one (`app.lease`)
        self.read_only = False  # opened to look at while another bulkhead writes it
        self.holder: Holder | None = None  # …that other bulkhead
        # Every write of this session goes through its writer: inline until an engine starts it, then in
        # order on a thread of its own (`app.engine.writer`: where the engine waits for it, what a failure does).
        self.writer = SessionWriter(row.id)
        # Told before every view commit, with what the view becomes (app.engine.memory: the segment a compaction
        # takes out goes to the memory queue first); what it returns is called once the commit is done.
        self.commit_guard: CommitGuard | None = None
        # Told what was archived once it is committed (`/recall`'s keys, kept by `app.engine.api.ui_session`).
        self.archive_watchers: list[Callable[[Sequence[ArchiveEntry]], None]] = []

    # -- opening -------------------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        store: Store,
        *,
        route: str = "",
        provider: str = "",
        model: str = "",
        workspace: str = "",
        system_prompt: str = "",
        title: str = "",
    ) -> Session:
        session_id = new_id("s")
        view_id = new_id("v")
        store.create_session(
            session_id,
            title=title,
            route=route,
            provider=provider,
            model=model,
            workspace=workspace,
            system_prompt=system_prompt,
            initial_view_id=view_id,
        )
        return cls.load(store, session_id)

    @classmethod
    def load(cls, store: Store, session_id: str, *, head_later: bool = False) -> Session:
        """`head_later`: a long session opens from its end (`app.engine.head_later`; `complete()` decodes the rest)."""
        row = store.find_session(session_id)
        if row is None:
            raise SessionNotFound(f"no session {session_id!r}; `bulkhead sessions list` shows them")
        later = plan_head_later(store, row.id) if head_later else None
        if later is not None:
            return cls(store, row, list(later.tail), [], later)
        master = store.load_master(row.id)
        views = store.load_views(row.id, {m.id: m for m in master})
        if not views:  # a database edited by hand: rebuild a view from the master log
            views = [View(id=new_id("v"), messages=tuple(master), reason="rebuilt", created_at=time.time())]
            store.commit_view(row.id, views[0], {m.id for m in master})
        return cls(store, row, master, views)

    @classmethod
    def latest(cls, store: Store) -> Session | None:
        row = store.latest_session()
        return cls.load(store, row.id) if row else None

    # -- the lease: one writer per session -----------------------------------------------------------
    def take_lease(self, what: str = "") -> Holder | None:
        """Hold this session for writing; None when it is ours, else the other bulkhead that holds it."""
        me = this_process(what)
        holder: Holder | None = self.store.acquire_lease(self.id, me)
        if holder is None:
            self.lease = me
        return holder

    def release_lease(self) -> None:
        lease, self.lease = self.lease, None
        if lease is not None:
            with contextlib.suppress(
                Exception
            ):  # closing must not fail on a full disk; a dead pid frees it anyway
                self.store.release_lease(self.id, lease)

    def open_read_only(self, holder: Holder | None) -> None:
        """Look, do not touch: every write raises `SessionReadOnly` (naming `holder`)."""
        self.read_only, self.holder = True, holder

    def _check_writable(self) -> None:
        if self.read_only:
            raise SessionReadOnly(self.id, self.holder)

    def _take_in(self, newer: list[Message]) -> None:
        """Master messages another process appended (found while committing a view): now ours too."""
        for message in newer:
            self._seq[message.id] = len(self.master)
            self.master.append(message)
            self.turn = max(self.turn, message.meta.turn)

    # -- the log and its views (a session opened from its end decodes its head first) ----------------
    @property
    def master(self) -> list[Message]:
        if self._later is not None:
            self.complete()
        return self._master

    @property
    def views(self) -> list[View]:
        if self._later is not None:
            self.complete()
        return self._views

    @property
    def head_waiting(self) -> bool:
        """Opened from its end, its older messages not decoded yet (`complete`)."""
        return self._later is not None

    def complete(self) -> list[Message]:
        """Decode the master log's head and the views, if the session was opened from its end (any thread; the
        first caller does it, the others wait). Returns the messages it decoded (the head; [] when none was
        left). A failure (a damaged row) raises, and the next caller tries again."""
        with self._completing:
            later = self._later
            if later is None:
                return []
            head = self.store.load_master(self.id, 0, later.start)
            master = [*head, *self._master]
            views = self.store.load_views(self.id, {m.id: m for m in master})
            if [m.id for m in master] != later.ids or not views:
                raise ValueError(
                    f"session {self.id}: its log changed while it was being read; open it again "
                    f"(`bulkhead --resume {self.id}`)"
                )
            self._master[0:0] = head
            self._views = views
            self._opened = views[-1], later
            self.turn = max(self.turn, max((m.meta.turn for m in head), default=0))
            self._later = None  # last: a reader that sees it None finds everything in place
            return head

    def decoded(self) -> list[Message]:
        """The master messages decoded so far: the whole log, or the tail while the head waits (it starts
        with a prompt of the user's, and the active view ends with it)."""
        return self._master

    def master_len(self) -> int:
        later = self._later
        return len(later.ids) if later is not None else len(self._master)

    def view_id(self) -> str:
        later = self._later
        return later.view_id if later is not None else self._views[-1].id

    def view_len(self) -> int:
        later = self._later
        return len(later.view_ids) if later is not None else len(self._views[-1])

    def views_len(self) -> int:
        later = self._later
        return later.views if later is not None else len(self._views)

    def view_ids(self) -> list[str]:
        later = self._later
        return later.view_ids if later is not None else [m.id for m in self._views[-1].messages]

    def view_ref(self) -> object:
        """What is the same object for as long as the active view does not change (a cache's key) — also
        when `complete` decodes it (an append, a compaction or a rewind make a new one)."""
        later = self._later
        if later is not None:
            return later
        active, opened = self._views[-1], self._opened
        return opened[1] if opened is not None and active is opened[0] else active

    def view_end(self) -> Sequence[Message]:
        """The active view, or while the head waits the decoded tail it ends with (which starts with a prompt of the
        user's): enough to look back to the last prompt without decoding anything."""
        return self._master if self._later is not None else self.view.messages

    # -- reading ---------------------------------------------------------------------------------
    @property
    def view(self) -> View:
        return self.views[-1]

    @property
    def folder(self) -> Path:
        return self.store.session_folder(self.id)

    @property
    def transcript_path(self) -> Path:
        return self.folder / "transcript.jsonl"

    @property
    def receipts_path(self) -> Path:
        return self.folder / "compaction.jsonl"

    def is_master(self, message: Message) -> bool:
        return message.id in self._seq

    def is_master_id(self, message_id: str) -> bool:
        return message_id in self._seq

    def seq_of(self, message_id: str) -> int | None:
        """The master message's place in the log (0 first), None for a derived message."""
        return self._seq.get(message_id)

    def master_ids(self) -> set[str]:
        return set(self._seq)

    # -- writing ---------------------------------------------------------------------------------
    def append(self, message: Message) -> Message:
        """Commit `message` to the master log and the active view."""
        self._check_writable()
        self._write(
            functools.partial(self.store.append_message, self.id, message, self.view.id), "save a message"
        )
        self._seq[message.id] = len(self.master)
        self.master.append(message)
        self.turn = max(self.turn, message.meta.turn)
        active = self.view
        self.views[-1] = View(
            id=active.id,
            messages=active.messages + (message,),
            parent_id=active.parent_id,
            reason=active.reason,
            created_at=active.created_at,
        )
        self.writer.submit(
            functools.partial(self._append_transcript, message), what="transcript", required=False
        )
        if not self.title and message.role == "user" and message.meta.origin == "user":
            first_line = message.text.strip().splitlines()[0] if message.text.strip() else ""
            first_line = clip_redacted(first_line, 80, marker="")  # redacted before the cut: no key prefix
            # undecodable bytes (lone surrogates) become U+FFFD: a title is plain UTF-8 text
            self.title = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in first_line)
            self._write(
                functools.partial(self.store.update_session, self.id, title=self.title), "save the title"
            )
        self.emit(
            MessageAdded(
                message_id=message.id,
                role=message.role,
                origin=message.meta.origin,
                text=message.text,
                partial=message.meta.partial,
            )
        )
        return message

    def commit_view(
        self, messages: Iterable[Message], archive_entries: Iterable[ArchiveEntry], reason: str
    ) -> View:
        """Make a new view active, storing it with its archive entries in one transaction.

        Raises (and changes nothing, in memory or on disk) if the store refuses.
        """
        self._check_writable()
        self.writer.flush()  # it reads the database for messages another process appended: ours first
        messages = tuple(messages)
        committed = (
            self.commit_guard.before_commit(self.view, messages, reason) if self.commit_guard else None
        )
        view = self.view.with_messages(messages, reason)
        entries = list(archive_entries)
        newer = self.store.commit_view(self.id, view, set(self._seq), entries)
        if newer:  # another process appended these since we loaded: kept in the view, never dropped
            self._take_in(newer)
            view = View(
                id=view.id,
                messages=view.messages + tuple(newer),
                parent_id=view.parent_id,
                reason=view.reason,
                created_at=view.created_at,
            )
        self.views.append(view)
        if committed is not None:
            committed(view)
        self._archived(entries)
        return view

    def archive(self, entries: Iterable[ArchiveEntry]) -> None:
        self._check_writable()
        entries = list(entries)
        self._write(functools.partial(self.store.archive_put, self.id, entries), "archive")
        self._archived(entries)

    def _archived(self, entries: Sequence[ArchiveEntry]) -> None:
        for watcher in list(self.archive_watchers) if entries else ():
            watcher(entries)

    def rewind(self) -> View | None:
        """Pop the active view. Messages appended after it was made are kept. None at the bottom."""
        if len(self.views) < 2:
            return None
        self._check_writable()
        popped, parent = self.views[-1], self.views[-2]
        last_seq = max((self._seq[m.id] for m in parent.messages if m.id in self._seq), default=-1)
        newer = [m for m in popped.messages if self._seq.get(m.id, -1) > last_seq]
        restored = View(
            id=parent.id,
            messages=parent.messages + tuple(newer),
            parent_id=parent.parent_id,
            reason=parent.reason,
            created_at=parent.created_at,
        )
        self.writer.flush()  # as in commit_view: our own appends are in the database first
        unknown = self.store.replace_active_view(self.id, restored, set(self._seq))
        if unknown:
            self._take_in(unknown)
            restored = View(
                id=restored.id,
                messages=restored.messages + tuple(unknown),
                parent_id=restored.parent_id,
                reason=restored.reason,
                created_at=restored.created_at,
            )
        self.views.pop()
        self.views[-1] = restored
        return restored

    def save_counters(self) -> None:
        self._check_writable()
        counters = copy.deepcopy(self.counters.to_dict())  # as they are now, not when the writer gets to it
        self._write(
            functools.partial(self.store.update_session, self.id, counters=counters), "save the counters"
        )

    def set_flag(self, key: str, value: Any) -> None:
        self._check_writable()
        self.flags[key] = value
        flags = copy.deepcopy(self.flags)
        self._write(functools.partial(self.store.update_session, self.id, flags=flags), "save a setting")

    def rename(self, title: str) -> str:
        """`/rename TITLE`: the session's title (see `clean_title`); returns it."""
        cleaned = clean_title(title)
        self._write(functools.partial(self.store.update_session, self.id, title=cleaned), "save the title")
        self.title = cleaned
        return self.title

    def set_route(self, route: str, provider: str, model: str) -> None:
        self._check_writable()
        self._write(
            functools.partial(
                self.store.update_session, self.id, route=route, provider=provider, model=model
            ),
            "save the route",
        )
        self.route, self.provider, self.model = route, provider, model

    def write_receipt(self, record: dict[str, Any]) -> None:
        """A compaction receipt in `compaction.jsonl` (best effort, in order with the session's other writes)."""
        path = self.receipts_path
        self.writer.submit(
            functools.partial(write_receipt, path, copy.deepcopy(record)), what="receipt", required=False
        )

    def _write(self, run: Any, what: str) -> None:
        """A write that must not be lost: inline it raises here; queued, a failure is held for the next drain."""
        self.writer.submit(run, what=what)

    # -- the writer ------------------------------------------------------------------------------------
    def start_writer(self) -> None:
        """From now on this session's writes run in order on a thread of their own (`app.engine.writer`)."""
        self.writer.start()

    async def drain(self, *, quiet: bool = False) -> None:
        """Wait (off the event loop) until every write issued so far is on disk; raises a held failure."""
        await self.writer.drain(quiet=quiet)

    def flush(self) -> None:
        """`drain` for synchronous callers: blocks."""
        self.writer.flush()

    async def stop_writer(self) -> None:
        """Write everything queued, then write inline again (`Engine.close`)."""
        await self.writer.stop_async()

    # -- events ----------------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        self.bus.emit(event)

    def record_event(self, event: Event) -> None:
        """Emit and store (for events worth keeping: hooks, rejections, compactions).

        Storing is best effort: a full disk must not hide the event from the front ends.
        """
        self.emit(event)
        if self.read_only:
            return
        with contextlib.suppress(Exception):  # to_json itself must not fail a turn either
            data = event.to_json()
            self.writer.submit(
                functools.partial(self.store.record_event, self.id, event.type, data),
                what="event",
                required=False,
            )

    def _append_transcript(self, message: Message) -> None:
        """Keep transcript.jsonl (what hooks read as transcript_path) current; best effort."""
        record = redact_value(message.to_dict(), urls=False)  # known secrets never reach the disk
        line = json.dumps(record, ensure_ascii=False)
        try:
            data = (line + "\n").encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates from undecodable tool output: escape them
            data = (json.dumps(record) + "\n").encode("ascii")
        with contextlib.suppress(OSError):
            fd = os.open(self.transcript_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)  # one write: concurrent appenders never interleave a line
            finally:
                os.close(fd)
