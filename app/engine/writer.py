"""One writer per open session: the session's disk writes run in order on a thread of their own.

SQLite appends, events, counters and flags, transcript.jsonl, compaction receipts and the streaming
draft are all writes the user does not need to wait for: what they show is already in memory
(`Session.master`, the views, the events). An engine hands them to its session's `SessionWriter`, a
FIFO queue served by ONE thread, so they reach the disk exactly in the order they were issued (a
draft's appends, then the answer's commit, then the draft's removal) and never on the TUI's event
loop.

Where the engine waits for the queue to empty (`drain`, `flush`) — what is written before what:
- before a request is sent (`Sender`): what the request carries is on disk first;
- before a view is committed or popped (`Session.commit_view`, `Session.rewind`): they read the
  database for messages another process appended, so our own appends must be there first;
- before a hook runs: the hook reads `transcript_path`;
- at the end of each engine operation (`Engine.start`, `submit`, `retry`, `compact`, `undo`,
  `rewind_to`) and at `Engine.close` (which stops the thread); and at process exit (`atexit`) for
  a writer still holding writes: nothing queued is dropped.

Failures: a best-effort write (an event, the transcript, a receipt, a draft append) that fails is
dropped, as it was before. A required write (a message, counters, flags, the title) that fails is
KEPT at the head of the queue with everything after it, in order, and the thread stops; the next
drain tries again from that write and, when it fails again, raises the store's own sentence (a
full disk, a read-only home…) with how many writes wait. The conversation in memory is untouched,
so once the cause is fixed the next drain writes everything.

Until `start()` (and after `stop()`), a writer is inline: each write runs at once on the caller's
thread and a required write's failure raises there — what CLI sub-commands and tests that use a
`Session` directly get.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass

from app.store import StoreError

IDLE_SECONDS = 2.0  # the thread waits this long for more work before it ends (the next write starts one)


@dataclass(frozen=True)
class _Write:
    run: Callable[[], object]
    what: str  # for the thread's name in a traceback and the error (e.g. "save a message")
    required: bool


class SessionWriter:
    def __init__(self, name: str = "session") -> None:
        self.name = name
        self._cond = threading.Condition()
        self._queue: deque[_Write] = deque()  # the head stays until it has run (or failed, if required)
        self._waiters: list[Future[None]] = []
        self._failure: BaseException | None = None  # a required write failed: the queue waits for a drain
        self._thread: threading.Thread | None = None
        self._threaded = False

    # -- state -------------------------------------------------------------------------------------
    @property
    def threaded(self) -> bool:
        return self._threaded

    @property
    def pending(self) -> int:
        """Writes queued or running (held ones included)."""
        with self._cond:
            return len(self._queue)

    @property
    def failure(self) -> BaseException | None:
        """The required write's failure that holds the queue, if any (raised again at the next drain)."""
        with self._cond:
            return self._failure

    def on_writer_thread(self) -> bool:
        return self._thread is not None and threading.current_thread() is self._thread

    # -- life --------------------------------------------------------------------------------------
    def start(self) -> None:
        """From now on writes are queued and run on the writer's thread."""
        with self._cond:
            self._threaded = True
        _live.add(self)

    def stop(self) -> None:
        """Write everything queued (raises like `flush`), then go back to inline writes."""
        self.flush()
        with self._cond:
            self._threaded = False
        _live.discard(self)

    async def stop_async(self) -> None:
        """`stop` for async callers: the wait happens off the event loop."""
        await self.drain()
        self.stop()  # anything written meanwhile is a short, blocking flush

    # -- writing -----------------------------------------------------------------------------------
    def submit(self, run: Callable[[], object], *, what: str, required: bool = True) -> None:
        """Write: now (inline; a required write's failure raises here) or in order on the thread."""
        if not self._threaded:
            if required:
                run()
            else:
                try:
                    run()
                except Exception:  # best effort by contract (events, transcript, drafts)
                    pass
            return
        with self._cond:
            self._queue.append(_Write(run, what, required))
            if self._failure is None:
                self._ensure_thread()
            self._cond.notify()

    def _ensure_thread(self) -> None:
        """Start the one thread if none runs (called with the lock held)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name=f"bulkhead-writer-{self.name}", daemon=True
            )
            self._thread.start()

    def _serve(self) -> None:
        while True:
            with self._cond:
                if not self._queue and self._failure is None:
                    self._cond.wait(IDLE_SECONDS)
                if not self._queue or self._failure is not None:
                    self._thread = None  # the next write (or drain, after a failure) starts another
                    return
                item = self._queue[0]
            try:
                item.run()
            except BaseException as exc:  # kept for the next drain (required) or dropped
                if item.required:
                    with self._cond:
                        self._failure = exc
                        self._thread = None
                        waiters, self._waiters = self._waiters, []
                        held = len(self._queue)
                    for waiter in waiters:
                        _settle(waiter, _held_error(exc, held))
                    return
            with self._cond:
                self._queue.popleft()
                if self._queue:
                    continue
                waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                _settle(waiter, None)

    # -- waiting -----------------------------------------------------------------------------------
    def _waiter(self) -> Future[None]:
        """A future done once everything queued now is written (or a required write failed again)."""
        if self.on_writer_thread():
            raise RuntimeError(
                "a session write cannot wait for the session's writer (it would wait for itself)"
            )
        future: Future[None] = Future()
        with self._cond:
            if self._failure is not None:  # try the held writes again, from the one that failed
                self._failure = None
                if self._queue:
                    self._ensure_thread()
            if not self._queue:
                future.set_result(None)
            else:
                self._waiters.append(future)
                self._cond.notify()
        return future

    def flush(self) -> None:
        """Block until everything queued is written; raises the failure of a required write."""
        self._waiter().result()

    async def drain(self, *, quiet: bool = False) -> None:
        """Wait, without blocking the event loop, until everything queued is written. Raises the failure of a
        required write (which stays queued, with what follows it, for the next drain) unless `quiet`."""
        future = self._waiter()
        if future.done() and future.exception() is None:
            return
        try:
            await asyncio.wrap_future(future)
        except Exception:
            if not quiet:
                raise


def _settle(future: Future[None], error: BaseException | None) -> None:
    try:
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
    except InvalidStateError:  # the drain that waited was cancelled: nothing to tell
        pass


def _held_error(exc: BaseException, held: int) -> BaseException:
    """The store's sentence, plus what waits: the writes are kept in order, not lost."""
    waiting = (
        f" bulkhead keeps the last {held} unsaved {'change' if held == 1 else 'changes'} of this session in "
        f"memory, in order, and saves them at the next request once this is fixed (quitting before that "
        f"loses them)."
    )
    if isinstance(exc, StoreError):
        try:
            return type(exc)(f"{exc}{waiting}")
        except TypeError:  # a StoreError that takes other arguments: the base class says the same
            return StoreError(f"{exc}{waiting}")
    return StoreError(f"bulkhead could not save this session: {type(exc).__name__}: {exc}.{waiting}")


_live: weakref.WeakSet[SessionWriter] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    """A process ending with writes still queued (an engine never closed, a close cut short) writes them first."""
    for writer in list(_live):
        try:
            writer.flush()
        except Exception:  # nothing more can be done at exit; the store said why
            pass
