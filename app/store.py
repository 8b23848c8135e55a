"""SQLite persistence: sessions, the master log, views, the CCR archive, requests, events.

One database file (WAL, foreign keys, `PRAGMA user_version` migrations, mode 0600) under
`data_home()`, plus a folder per session (0700) for receipts and spilled tool outputs.

Transactions follow the engine's rules: appending a message writes it to the master log
and the active view together; committing a view writes the view, its derived messages
and its archive entries together — or nothing at all.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config import data_home
from app.model.archive import ArchiveEntry
from app.model.messages import (
    Message,
    Meta,
    Role,
    Text,
    ToolCall,
    ToolResult,
    View,
    meta_from_dict,
    meta_to_dict,
    part_from_dict,
    part_to_dict,
)
from app.processes import Holder
from app.redact import redact_headers, redact_known, redact_value

SCHEMA_VERSION = 4

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        route TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        workspace TEXT NOT NULL DEFAULT '',
        system_prompt TEXT NOT NULL DEFAULT '',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        counters TEXT NOT NULL DEFAULT '{}',
        flags TEXT NOT NULL DEFAULT '{}'
    );
    CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER,                      -- position in the master log; NULL for derived messages
        role TEXT NOT NULL,
        parts TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE UNIQUE INDEX messages_master ON messages(session_id, seq) WHERE seq IS NOT NULL;
    CREATE TABLE views (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        parent_id TEXT,
        reason TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('active', 'stacked', 'popped')),
        created_at REAL NOT NULL
    );
    CREATE INDEX views_session ON views(session_id, state);
    CREATE TABLE view_entries (
        view_id TEXT NOT NULL REFERENCES views(id) ON DELETE CASCADE,
        pos INTEGER NOT NULL,
        message_id TEXT NOT NULL REFERENCES messages(id),
        PRIMARY KEY (view_id, pos)
    );
    CREATE TABLE archive (
        rowid INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        reason TEXT NOT NULL,
        bytes INTEGER NOT NULL,
        created_at REAL NOT NULL,
        source_ids TEXT NOT NULL DEFAULT '[]',
        content TEXT NOT NULL,
        UNIQUE (session_id, key)
    );
    CREATE INDEX archive_key ON archive(key);
    CREATE VIRTUAL TABLE archive_fts USING fts5(content, content='archive', content_rowid='rowid');
    CREATE TRIGGER archive_ai AFTER INSERT ON archive BEGIN
        INSERT INTO archive_fts(rowid, content) VALUES (new.rowid, new.content);
    END;
    CREATE TRIGGER archive_ad AFTER DELETE ON archive BEGIN
        INSERT INTO archive_fts(archive_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    END;
    CREATE TABLE requests (
        id TEXT PRIMARY KEY,
        session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        created_at REAL NOT NULL,
        route TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        url TEXT NOT NULL DEFAULT '',
        purpose TEXT NOT NULL DEFAULT 'chat',
        attempt INTEGER NOT NULL DEFAULT 0,
        level INTEGER NOT NULL DEFAULT 0,
        predicted_bytes INTEGER,
        actual_bytes INTEGER,
        status INTEGER,
        latency_ms REAL,
        kind TEXT,
        reason TEXT NOT NULL DEFAULT '',
        evidence TEXT NOT NULL DEFAULT '[]',
        request_headers TEXT NOT NULL DEFAULT '{}',
        response_headers TEXT NOT NULL DEFAULT '{}',
        body_preview TEXT NOT NULL DEFAULT '',
        error_body TEXT NOT NULL DEFAULT '',
        usage TEXT NOT NULL DEFAULT '{}',
        outcome TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX requests_session ON requests(session_id, created_at);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
        created_at REAL NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE INDEX events_session ON events(session_id, type);
    """,
    2: """
    CREATE TABLE leases (                 -- one writer per session (app.lease)
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        pid INTEGER NOT NULL,
        started TEXT NOT NULL DEFAULT '', -- the process's start time: a reused pid is not its holder
        host TEXT NOT NULL DEFAULT '',
        acquired_at REAL NOT NULL,
        what TEXT NOT NULL DEFAULT ''
    );
    """,
    3: """
    -- a refused request's decision, as the engine made it (app.engine.failure_words.decision_of): the
    -- rule's own action, the judged cause, the block page's incident ID, the hop that answered
    ALTER TABLE requests ADD COLUMN decision TEXT NOT NULL DEFAULT '{}';
    """,
    4: """
    CREATE TABLE memory_queue (           -- segments a compaction took out of the view, for the memory worker
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        created_at REAL NOT NULL,
        reason TEXT NOT NULL,             -- the view change that followed: "auto:summary", "recovery:L2", …
        message_ids TEXT NOT NULL,        -- JSON list of the master messages, in order (the log keeps them)
        bytes INTEGER NOT NULL,
        state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'distilled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        error TEXT NOT NULL DEFAULT '',
        distilled_at REAL
    );
    CREATE INDEX memory_queue_session ON memory_queue(session_id, state);
    CREATE TABLE memory_facts (           -- the session memory journal: what the worker distilled, and its fate
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        project TEXT NOT NULL,            -- the project folder the facts belong to
        created_at REAL NOT NULL,
        text TEXT NOT NULL,
        source TEXT NOT NULL,             -- "queue N" or "conversation"
        state TEXT NOT NULL CHECK (state IN ('pending', 'accepted', 'rejected', 'kept')),
        decided_at REAL,
        written_to TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX memory_facts_project ON memory_facts(project, state);
    CREATE TABLE memory_progress (        -- the master log the worker has read live: up to this seq
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        distilled_seq INTEGER NOT NULL DEFAULT -1
    );
    """,
}

REQUEST_FIELDS = (
    "id",
    "session_id",
    "created_at",
    "route",
    "provider",
    "model",
    "url",
    "purpose",
    "attempt",
    "level",
    "predicted_bytes",
    "actual_bytes",
    "status",
    "latency_ms",
    "kind",
    "reason",
    "evidence",
    "request_headers",
    "response_headers",
    "body_preview",
    "error_body",
    "usage",
    "outcome",
    "decision",
)
_JSON_REQUEST_FIELDS = {"evidence", "request_headers", "response_headers", "usage", "decision"}
_HEADER_FIELDS = ("request_headers", "response_headers")
_TEXT_REQUEST_FIELDS = {"url", "reason", "evidence", "body_preview", "error_body", "decision"}


def redact_header_values(headers: Any) -> Any:
    """Headers safe to store (`app.redact`), whatever the adapter forgot; other values pass through."""
    return redact_headers(headers) if isinstance(headers, Mapping) else headers


class StoreError(Exception):
    """The database cannot be used; the message names the file, what happened and what to do."""

    exit_code = 2  # bulkhead's exit code when it stops for this (2: fix the setup, then run again)


class DiskFull(StoreError):
    exit_code = 1


class DatabaseDamaged(StoreError):
    exit_code = 1


class ReadOnlyHome(StoreError):
    exit_code = 1


class DatabaseIOError(StoreError):
    exit_code = 1


def database_error(exc: sqlite3.Error, path: Path, doing: str = "save") -> StoreError | None:
    """A sentence for a database failure a person can act on (a full disk, damaged pages, a read-only
    folder, an I/O error), or None for an error that is a bug to report as it is."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    lowered = text.lower()
    io_error = name.startswith("SQLITE_IOERR") or "disk i/o error" in lowered
    if (
        name == "SQLITE_FULL"
        or "disk is full" in lowered
        or (io_error and _free_bytes(path.parent) < LOW_SPACE_BYTES)
    ):
        return DiskFull(
            f"the disk holding {path} is full: bulkhead could not {doing} (SQLite: {text}). Nothing "
            f"saved before is lost. Free some space — or set BULKHEAD_HOME to a folder on another "
            f"disk — and go on."
        )
    if (
        name in ("SQLITE_CORRUPT", "SQLITE_NOTADB")
        or "disk image is malformed" in lowered
        or "file is not a database" in lowered
    ):
        return DatabaseDamaged(
            f"the database {path} is damaged (SQLite: {text}). Do not delete it: quit bulkhead, copy it somewhere "
            f"safe, and recover what it holds with `sqlite3 {path} .recover | sqlite3 recovered.db` (then move "
            f"recovered.db into its place). To keep working meanwhile, set BULKHEAD_HOME to a new folder."
        )
    if name.startswith("SQLITE_READONLY") or "readonly" in lowered or "read-only" in lowered:
        return ReadOnlyHome(_read_only_message(path, text))
    if io_error:
        return DatabaseIOError(
            f"bulkhead could not {doing}: reading or writing {path} failed (SQLite: {text}). Check the "
            f"disk (free space, a network share that went away), then go on."
        )
    return None


LOW_SPACE_BYTES = 256 * 1024  # an I/O error with less free space than this is a full disk


def _free_bytes(folder: Path) -> int:
    try:
        info = os.statvfs(folder)
    except OSError:
        return 1 << 62
    return info.f_bavail * info.f_frsize


def _read_only_message(path: Path, detail: str) -> str:
    return (
        f"{path} is read-only ({detail}): bulkhead can read your sessions but cannot save anything there. The "
        f"database itself is fine — do not move it away. Make {path.parent} writable, or set BULKHEAD_HOME to a "
        f"writable folder."
    )


def _writable(path: Path) -> bool:
    """Whether `path` (and its folder, for SQLite's -wal/-shm files) can be written — as the kernel sees it,
    so a read-only mount counts even for root."""
    try:
        if os.statvfs(path.parent).f_flag & os.ST_RDONLY:
            return False
    except OSError:
        pass
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


@dataclass(frozen=True)
class SessionRow:
    id: str
    title: str
    route: str
    provider: str
    model: str
    workspace: str
    system_prompt: str
    created_at: float
    updated_at: float
    counters: dict[str, Any]
    flags: dict[str, Any]


# A session with at least one message of its master log (an empty one is a start that said nothing).
_HAS_MESSAGES = "EXISTS (SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.seq IS NOT NULL)"


def database_path() -> Path:
    return data_home() / "bulkhead.db"


def _dumps(obj: Any, **options: Any) -> str:
    """JSON for a TEXT column: UTF-8 as is, but lone surrogates (from undecodable tool output)
    escaped, since SQLite only stores valid UTF-8 and `json.loads` restores them exactly."""
    text = json.dumps(obj, ensure_ascii=False, **options)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, **options)
    return text


def _message_row(session_id: str, message: Message, seq: int | None) -> tuple:
    # Known secrets never reach the disk (`app.redact`): a key pasted in a prompt, echoed by a tool.
    return (
        message.id,
        session_id,
        seq,
        message.role,
        _dumps(redact_value([part_to_dict(p) for p in message.parts], urls=False)),
        _dumps(redact_value(meta_to_dict(message.meta), urls=False)),
        message.meta.created_at or time.time(),
    )


_INSERT_MESSAGE = (
    "INSERT INTO messages (id, session_id, seq, role, parts, meta, created_at) VALUES (?,?,?,?,?,?,?)"
)
# A derived message already stored (a view reused it) is kept; any other constraint still fails.
_INSERT_DERIVED = _INSERT_MESSAGE + " ON CONFLICT(id) DO NOTHING"


DAMAGED_ROW = (
    "[bulkhead: this message could not be read from the database — its stored row is damaged ({why}); the "
    "rest of the session is intact]"
)
_CALL_ID_RE = re.compile(r'"call_id"\s*:\s*"([^"\\]{1,200})"')
_TOOL_CALL_RE = re.compile(
    r'"type"\s*:\s*"tool_call"\s*,\s*"id"\s*:\s*"([^"\\]{1,200})"\s*,\s*"name"\s*:\s*"([^"\\]{1,200})"'
)


def _message_from_row(row: sqlite3.Row) -> Message:
    """The message of one row; a row that cannot be decoded becomes a visible stub in its place (one
    damaged row must not make the whole session unreadable: `-c`, `sessions show`, exports)."""
    try:
        return _message(row, json.loads(row["parts"]), json.loads(row["meta"]))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return _damaged(row, exc)


def _damaged(row: sqlite3.Row, exc: Exception) -> Message:
    why = f"{type(exc).__name__}: {str(exc)[:120]}"
    text = DAMAGED_ROW.format(why=why)
    role: Role = row["role"] if row["role"] in ("user", "assistant", "tool", "system") else "user"
    raw = str(row["parts"] or "")
    parts: tuple[Any, ...] = (Text(text),)
    # Keep the pairing where the ids survive: a damaged answer still made its calls, a damaged result
    # still answers them (a provider refuses a conversation whose calls and results do not pair).
    if role == "tool":
        ids = list(dict.fromkeys(_CALL_ID_RE.findall(raw)))
        parts = tuple(ToolResult(call_id, text, is_error=True) for call_id in ids) or parts
        role = "tool" if ids else "user"
    elif role == "assistant":
        calls = [ToolCall(call_id, name) for call_id, name in _TOOL_CALL_RE.findall(raw)]
        parts = (Text(text), *calls)
    try:
        meta = meta_from_dict(json.loads(row["meta"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        meta = Meta()
    return Message(id=row["id"], role=role, parts=parts, meta=meta)


def _message(row: sqlite3.Row, parts: list[dict[str, Any]], meta: dict[str, Any]) -> Message:
    """A message from its row and its parts and meta as parsed."""
    return Message(
        id=row["id"], role=row["role"], parts=tuple(map(part_from_dict, parts)), meta=meta_from_dict(meta)
    )


_JOINED_JSON = 1 << 16  # characters of parts parsed in one `json.loads` when a long log loads


def _messages_from_rows(rows: Sequence[sqlite3.Row]) -> list[Message]:
    """`_message_from_row` for many rows: small rows' parts and metas are parsed as JSON arrays of up to
    `_JOINED_JSON` characters (a resumed session of thousands of short messages spent a fifth of its
    loading in per-call `json.loads`; one array of a whole 10 MB session was slower than row by row)."""
    messages: list[Message] = []
    batch: list[sqlite3.Row] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += len(row["parts"])
        if size >= _JOINED_JSON:
            messages.extend(_parse_batch(batch))
            batch, size = [], 0
    messages.extend(_parse_batch(batch))
    return messages


def _parse_batch(rows: list[sqlite3.Row]) -> list[Message]:
    """Messages of `rows`, their parts and metas each parsed as one JSON array."""
    if len(rows) < 2:
        return [_message_from_row(row) for row in rows]
    try:
        parts = json.loads("[" + ",".join([row["parts"] for row in rows]) + "]")
        metas = json.loads("[" + ",".join([row["meta"] for row in rows]) + "]")
    except (ValueError, TypeError):  # a damaged row: each parsed alone, the damaged one a stub
        return [_message_from_row(row) for row in rows]
    if len(parts) != len(rows) or len(metas) != len(rows):  # a row that was not one JSON value
        return [_message_from_row(row) for row in rows]
    try:
        return [_message(row, p, m) for row, p, m in zip(rows, parts, metas, strict=True)]
    except (ValueError, TypeError, KeyError, AttributeError):  # valid JSON, not a message: row by row
        return [_message_from_row(row) for row in rows]


class Store:
    """Thread-safe access to the database (one connection, one lock)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else database_path()
        self.home = self.path.parent
        self.read_only = self.path.exists() and not _writable(self.path)
        if self.read_only:  # sessions can still be listed, shown and exported; any write says why not
            self._open_read_only()
            return
        try:
            self.home.mkdir(parents=True, exist_ok=True, mode=0o700)
            if not self.path.exists():
                os.close(os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600))
            _tighten(self.path, 0o600)
            self._conn = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30.0
            )
        except (OSError, sqlite3.Error) as exc:
            if isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise ReadOnlyHome(_read_only_message(self.path, exc.strerror or str(exc))) from None
            if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise DiskFull(
                    f"the disk holding {self.path} is full: bulkhead cannot create its database. Free "
                    f"some space, or set BULKHEAD_HOME to a folder on another disk."
                ) from None
            raise StoreError(
                f"cannot open the database {self.path}: {exc}. "
                "Check the folder's permissions or set BULKHEAD_HOME."
            ) from None
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise database_error(exc, self.path, "open its database") or StoreError(
                f"cannot use the database {self.path}: {exc}. Set BULKHEAD_HOME to another folder to start "
                f"afresh there; keep this file, it may still hold your sessions."
            ) from None
        except StoreError:
            self._conn.close()
            raise

    def _open_read_only(self) -> None:
        self._lock = threading.RLock()
        conn = None
        for uri in (f"file:{self.path}?mode=ro", f"file:{self.path}?immutable=1"):
            try:
                conn = sqlite3.connect(
                    uri, uri=True, check_same_thread=False, isolation_level=None, timeout=30.0
                )
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                break
            except sqlite3.Error as exc:
                if conn is not None:
                    conn.close()
                conn = None
                if "immutable" in uri:
                    raise database_error(exc, self.path, "read it") or ReadOnlyHome(
                        _read_only_message(self.path, f"and SQLite cannot read it there: {exc}")
                    ) from None
        assert conn is not None
        if version != SCHEMA_VERSION:
            conn.close()
            raise ReadOnlyHome(
                _read_only_message(
                    self.path,
                    f"schema {version}, this bulkhead needs {SCHEMA_VERSION} and cannot upgrade it there",
                )
            )
        conn.row_factory = sqlite3.Row
        self._conn = conn

    # -- plumbing ------------------------------------------------------------------------------
    def _migrate(self) -> None:
        with self._lock:
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer bulkhead (schema {version}); upgrade bulkhead"
                )
            for target in range(version + 1, SCHEMA_VERSION + 1):
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    # Another process may have migrated while we waited for the write lock.
                    if self._conn.execute("PRAGMA user_version").fetchone()[0] >= target:
                        self._conn.execute("COMMIT")
                        continue
                    for statement in _split_sql(_MIGRATIONS[target]):
                        self._conn.execute(statement)
                    self._conn.execute(f"PRAGMA user_version = {target}")
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write, all or nothing. A full disk, damaged pages or a read-only home raise a StoreError
        that says what happened and what to do (nothing of the failed write is kept)."""
        if self.read_only:
            raise ReadOnlyHome(_read_only_message(self.path, "no write permission or a read-only filesystem"))
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    if self._conn.in_transaction:  # some errors (SQLITE_FULL, …) already rolled back
                        with suppress(sqlite3.Error):
                            self._conn.execute("ROLLBACK")
                    raise
                else:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                translated = database_error(exc, self.path)
                if translated is None:
                    raise
                raise translated from None

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return self._read(sql, params, sqlite3.Cursor.fetchall)

    def column(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """The first column of every row `sql` returns (a long log's ids, without a list of rows)."""
        return self._read(sql, params, lambda cursor: [row[0] for row in cursor])

    def _read(self, sql: str, params: Iterable[Any], take: Callable[[sqlite3.Cursor], Any]) -> Any:
        with self._lock:
            try:
                return take(self._conn.execute(sql, tuple(params)))
            except sqlite3.Error as exc:
                translated = database_error(exc, self.path, "read it")
                if translated is None:
                    raise
                raise translated from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def session_folder(self, session_id: str) -> Path:
        sessions = self.home / "sessions"
        sessions.mkdir(exist_ok=True, mode=0o700)
        folder = sessions / session_id
        folder.mkdir(exist_ok=True, mode=0o700)
        return folder

    # -- sessions ------------------------------------------------------------------------------
    def create_session(
        self,
        session_id: str,
        *,
        title: str = "",
        route: str = "",
        provider: str = "",
        model: str = "",
        workspace: str = "",
        system_prompt: str = "",
        initial_view_id: str,
    ) -> None:
        now = time.time()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO sessions (id, title, route, provider, model, workspace, system_prompt, "
                "created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    session_id,
                    redact_known(title),
                    route,
                    provider,
                    model,
                    workspace,
                    redact_known(system_prompt),
                    now,
                    now,
                ),
            )
            conn.execute(
                "INSERT INTO views (id, session_id, parent_id, reason, state, created_at) "
                "VALUES (?,?,NULL,'initial','active',?)",
                (initial_view_id, session_id, now),
            )

    def get_session(self, session_id: str) -> SessionRow | None:
        rows = self.query("SELECT * FROM sessions WHERE id = ?", (session_id,))
        return self._session_row(rows[0]) if rows else None

    def find_session(self, prefix: str) -> SessionRow | None:
        """A session by id or unique id prefix."""
        exact = self.get_session(prefix)
        if exact or not prefix:
            return exact
        # substr, not LIKE: `_` and `%` in what the user typed are plain characters
        rows = self.query(
            "SELECT * FROM sessions WHERE substr(id, 1, ?) = ? ORDER BY updated_at DESC LIMIT 2",
            (len(prefix), prefix),
        )
        return self._session_row(rows[0]) if len(rows) == 1 else None

    def latest_session(self, workspace: str | None = None) -> SessionRow | None:
        """The newest session (of the folder `workspace`, when given, with at least one message)."""
        if workspace is None:
            rows = self.query("SELECT * FROM sessions ORDER BY updated_at DESC, created_at DESC LIMIT 1")
        else:
            rows = self.query(
                f"SELECT * FROM sessions s WHERE s.workspace = ? AND {_HAS_MESSAGES} "
                "ORDER BY s.updated_at DESC, s.created_at DESC LIMIT 1",
                (workspace,),
            )
        return self._session_row(rows[0]) if rows else None

    def folder_sessions(self, workspace: str, limit: int = 50) -> list[sqlite3.Row]:
        """(id, title) of the sessions of the folder `workspace` that have a message, newest first (`-c`)."""
        return self.query(
            f"SELECT s.id, s.title FROM sessions s WHERE s.workspace = ? AND s.provider != 'proxy' AND {_HAS_MESSAGES} "
            "ORDER BY s.updated_at DESC, s.created_at DESC LIMIT ?",
            (workspace, limit),
        )

    def list_sessions(
        self,
        limit: int = 100,
        *,
        workspace: str | None = None,
        updated_before: float | None = None,
        updated_after: float | None = None,
    ) -> list[dict[str, Any]]:
        """The sessions, newest first: of one folder (`workspace`), last updated before / after a time."""
        where, params = [], []
        for clause, value in (
            ("s.workspace = ?", workspace),
            ("s.updated_at < ?", updated_before),
            ("s.updated_at >= ?", updated_after),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        rows = self.query(
            "SELECT s.id, s.title, s.route, s.provider, s.model, s.workspace, s.created_at, s.updated_at, "
            "(SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.seq IS NOT NULL) AS messages "
            f"FROM sessions s {'WHERE ' + ' AND '.join(where) if where else ''} "
            "ORDER BY s.updated_at DESC LIMIT ?",
            (*params, limit),
        )
        return [dict(r) for r in rows]

    def session_count(self) -> int:
        return int(self.column("SELECT COUNT(*) FROM sessions")[0])

    def search_sessions(self, text: str, limit: int = 100) -> list[str]:
        """Ids of the sessions whose title or any message holds `text` (case-insensitive), newest first."""
        needle = text.strip().lower()
        if not needle:
            return []
        rows = self.query(
            "SELECT s.id FROM sessions s WHERE instr(lower(s.title), ?) > 0 OR EXISTS (SELECT 1 FROM messages m "
            "WHERE m.session_id = s.id AND m.seq IS NOT NULL AND instr(lower(m.parts), ?) > 0) "
            "ORDER BY s.updated_at DESC LIMIT ?",
            (needle, needle, limit),
        )
        return [row["id"] for row in rows]

    def delete_session(self, session_id: str) -> bool:
        """Remove a session and everything it owns — messages, views, archive, requests, events, and its
        folder — in one transaction (the folder after it commits). False when there is no such session."""
        with self.transaction() as conn:
            if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
                return False
            conn.execute(
                "DELETE FROM view_entries WHERE view_id IN (SELECT id FROM views WHERE session_id = ?)",
                (session_id,),
            )
            for table in ("views", "archive", "requests", "events", "messages"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        folder = self.home / "sessions" / session_id
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
        return True

    def update_session(self, session_id: str, **fields_: Any) -> None:
        allowed = {"title", "route", "provider", "model", "workspace", "counters", "flags", "system_prompt"}
        unknown = set(fields_) - allowed
        if unknown:
            raise ValueError(f"cannot update session fields {unknown}")
        values: dict[str, Any] = {
            k: json.dumps(v) if k in ("counters", "flags") else redact_known(v) for k, v in fields_.items()
        }
        values["updated_at"] = time.time()
        assignments = ", ".join(f"{k} = ?" for k in values)
        with self.transaction() as conn:
            conn.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", (*values.values(), session_id))

    @staticmethod
    def _session_row(row: sqlite3.Row) -> SessionRow:
        data = dict(row)
        data["counters"] = json.loads(data["counters"] or "{}")
        data["flags"] = json.loads(data["flags"] or "{}")
        return SessionRow(**data)

    # -- leases: one writer per session (app.lease) -------------------------------------------
    def acquire_lease(self, session_id: str, me):
        """Take `session_id`'s lease for `me` (an `app.processes.Holder`); None when taken (or already ours),
        else the live process that holds it. A stale lease (dead process, reused pid) is taken over."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM leases WHERE session_id = ?", (session_id,)).fetchone()
            if row is not None:
                holder = Holder(
                    pid=row["pid"],
                    started=row["started"],
                    host=row["host"],
                    acquired_at=row["acquired_at"],
                    what=row["what"],
                )
                if not holder.same_process(me) and holder.alive():
                    return holder
            conn.execute(
                "INSERT INTO leases (session_id, pid, started, host, acquired_at, what) VALUES (?,?,?,?,?,?) "
                "ON CONFLICT(session_id) DO UPDATE SET pid = excluded.pid, started = excluded.started, "
                "host = excluded.host, acquired_at = excluded.acquired_at, what = excluded.what",
                (session_id, me.pid, me.started, me.host, me.acquired_at, me.what),
            )
        return None

    def lease_holder(self, session_id: str):
        """The live process holding `session_id` (an `app.processes.Holder`), or None."""
        rows = self.query("SELECT * FROM leases WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        holder = Holder(
            pid=rows[0]["pid"],
            started=rows[0]["started"],
            host=rows[0]["host"],
            acquired_at=rows[0]["acquired_at"],
            what=rows[0]["what"],
        )
        return holder if holder.alive() else None

    def lease_row(self, session_id: str):
        """Whoever holds `session_id`'s lease as recorded (an `app.processes.Holder`), alive or not; None."""
        rows = self.query("SELECT * FROM leases WHERE session_id = ?", (session_id,))
        if not rows:
            return None
        row = rows[0]
        return Holder(
            pid=row["pid"],
            started=row["started"],
            host=row["host"],
            acquired_at=row["acquired_at"],
            what=row["what"],
        )

    def break_lease(self, session_id: str, holder) -> bool:
        """Remove `holder`'s lease on `session_id` (the user said that bulkhead is gone); False when the lease
        changed meanwhile (someone else took it: nothing is removed)."""
        with self.transaction() as conn:
            done = conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND pid = ? AND started = ? AND host = ?",
                (session_id, holder.pid, holder.started, holder.host),
            )
            return done.rowcount > 0

    def release_lease(self, session_id: str, me) -> None:
        """Drop `me`'s lease on `session_id` (someone else's is left alone)."""
        with self.transaction() as conn:
            conn.execute(
                "DELETE FROM leases WHERE session_id = ? AND pid = ? AND started = ? AND host = ?",
                (session_id, me.pid, me.started, me.host),
            )

    def fork_session(self, source_id: str) -> str:
        """A new session holding a copy of `source_id`'s master log, active view and archive; its id."""
        from app.model.messages import new_id

        fork_id = new_id("s")
        view_id = new_id("v")
        now = time.time()
        with self.transaction() as conn:
            source = conn.execute("SELECT * FROM sessions WHERE id = ?", (source_id,)).fetchone()
            if source is None:
                raise StoreError(f"no session {source_id!r} to fork")
            title = f"{source['title']} (fork)" if source["title"] else ""
            conn.execute(
                "INSERT INTO sessions (id, title, route, provider, model, workspace, system_prompt, "
                "created_at, updated_at, counters, flags) VALUES (?,?,?,?,?,?,?,?,?,'{}',?)",
                (
                    fork_id,
                    title,
                    source["route"],
                    source["provider"],
                    source["model"],
                    source["workspace"],
                    source["system_prompt"],
                    now,
                    now,
                    source["flags"],
                ),
            )
            rows = conn.execute("SELECT * FROM messages WHERE session_id = ?", (source_id,)).fetchall()
            mapping = {row["id"]: new_id("m") for row in rows}

            def remap(ids: list[str]) -> list[str]:
                return [mapping.get(i, i) for i in ids]

            for row in rows:
                meta = json.loads(row["meta"])
                if meta.get("source_ids"):
                    meta["source_ids"] = remap(meta["source_ids"])
                conn.execute(
                    _INSERT_MESSAGE,
                    (
                        mapping[row["id"]],
                        fork_id,
                        row["seq"],
                        row["role"],
                        row["parts"],
                        json.dumps(meta, ensure_ascii=False),
                        row["created_at"],
                    ),
                )
            for entry in conn.execute("SELECT * FROM archive WHERE session_id = ?", (source_id,)).fetchall():
                conn.execute(
                    "INSERT INTO archive (key, session_id, reason, bytes, created_at, source_ids, content) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        entry["key"],
                        fork_id,
                        entry["reason"],
                        entry["bytes"],
                        entry["created_at"],
                        json.dumps(remap(json.loads(entry["source_ids"]))),
                        entry["content"],
                    ),
                )
            active = conn.execute(
                "SELECT id FROM views WHERE session_id = ? AND state = 'active'", (source_id,)
            ).fetchone()
            conn.execute(
                "INSERT INTO views (id, session_id, parent_id, reason, state, created_at) "
                "VALUES (?,?,NULL,'fork','active',?)",
                (view_id, fork_id, now),
            )
            if active is not None:
                entries = conn.execute(
                    "SELECT pos, message_id FROM view_entries WHERE view_id = ? ORDER BY pos", (active["id"],)
                ).fetchall()
                conn.executemany(
                    "INSERT INTO view_entries (view_id, pos, message_id) VALUES (?,?,?)",
                    [
                        (view_id, e["pos"], mapping[e["message_id"]])
                        for e in entries
                        if e["message_id"] in mapping
                    ],
                )
        return fork_id

    # -- master log and views ----------------------------------------------------------------
    def append_message(self, session_id: str, message: Message, view_id: str) -> int:
        """Add `message` to the master log and to the end of the active view, atomically."""
        with self.transaction() as conn:
            seq = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            conn.execute(_INSERT_MESSAGE, _message_row(session_id, message, seq))
            pos = conn.execute(
                "SELECT COALESCE(MAX(pos), -1) + 1 FROM view_entries WHERE view_id = ?", (view_id,)
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO view_entries (view_id, pos, message_id) VALUES (?,?,?)",
                (view_id, pos, message.id),
            )
            conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))
        return seq

    def commit_view(
        self, session_id: str, view: View, master_ids: set[str], archive_entries: Iterable[ArchiveEntry] = ()
    ) -> list[Message]:
        """Make `view` the active one, with its derived messages and archive entries — all or nothing.

        Master messages the caller does not know of (another process appended them after this one
        loaded the session) are kept at the end of the new view, never dropped unarchived; they are
        returned so the caller can take them in.
        """
        with self.transaction() as conn:
            newer = self._unknown_master(conn, session_id, master_ids)
            for message in view.messages:
                if message.id not in master_ids:
                    conn.execute(_INSERT_DERIVED, _message_row(session_id, message, None))
            self._insert_archive(conn, session_id, archive_entries)
            conn.execute(
                "UPDATE views SET state = 'stacked' WHERE session_id = ? AND state = 'active'", (session_id,)
            )
            conn.execute(
                "INSERT INTO views (id, session_id, parent_id, reason, state, created_at) "
                "VALUES (?,?,?,?,'active',?)",
                (view.id, session_id, view.parent_id, view.reason, view.created_at or time.time()),
            )
            conn.executemany(
                "INSERT INTO view_entries (view_id, pos, message_id) VALUES (?,?,?)",
                [(view.id, pos, m.id) for pos, m in enumerate([*view.messages, *newer])],
            )
        return newer

    def replace_active_view(self, session_id: str, view: View, master_ids: set[str]) -> list[Message]:
        """Pop the active view and activate `view` (used by `/rewind compact`); like `commit_view`, master
        messages the caller does not know of are kept at its end, and returned."""
        with self.transaction() as conn:
            newer = self._unknown_master(conn, session_id, master_ids)
            for message in view.messages:
                if message.id not in master_ids:
                    conn.execute(_INSERT_DERIVED, _message_row(session_id, message, None))
            conn.execute(
                "UPDATE views SET state = 'popped' WHERE session_id = ? AND state = 'active'", (session_id,)
            )
            conn.execute("DELETE FROM view_entries WHERE view_id = ?", (view.id,))
            conn.execute("UPDATE views SET state = 'active' WHERE id = ?", (view.id,))
            conn.executemany(
                "INSERT INTO view_entries (view_id, pos, message_id) VALUES (?,?,?)",
                [(view.id, pos, m.id) for pos, m in enumerate([*view.messages, *newer])],
            )
        return newer

    @staticmethod
    def _unknown_master(conn: sqlite3.Connection, session_id: str, master_ids: set[str]) -> list[Message]:
        """Master messages appended after the caller's copy was loaded (seq numbers are dense from 0)."""
        rows = conn.execute(
            "SELECT * FROM messages WHERE session_id = ? AND seq >= ? ORDER BY seq",
            (session_id, len(master_ids)),
        ).fetchall()
        return [_message_from_row(row) for row in rows if row["id"] not in master_ids]

    def load_master(self, session_id: str, start: int = 0, stop: int | None = None) -> list[Message]:
        """The master log, or its messages at positions `start` up to `stop` (seq numbers are dense from 0)."""
        rows = self.query(
            "SELECT id, role, parts, meta FROM messages WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (session_id, start, (1 << 62) if stop is None else stop),
        )
        return _messages_from_rows(rows)

    def master_ids(self, session_id: str) -> list[str]:
        """The master log's message ids in order, nothing decoded."""
        return self.column(
            "SELECT id FROM messages WHERE session_id = ? AND seq IS NOT NULL ORDER BY seq", (session_id,)
        )

    def view_index(self, session_id: str) -> tuple[str, list[str], int] | None:
        """(the active view's id, its message ids in order, how many views are stacked with it), nothing
        decoded; None for a session without views."""
        views = self._stacked_views(session_id)
        if not views:
            return None
        active = views[-1]["id"]
        return active, self._view_message_ids(active), len(views)

    def _stacked_views(self, session_id: str) -> list[sqlite3.Row]:
        """The view stack's rows, oldest first, the active one last (rowid = push order)."""
        return self.query(
            "SELECT * FROM views WHERE session_id = ? AND state IN ('stacked', 'active') "
            "ORDER BY state = 'active', rowid",
            (session_id,),
        )

    def _view_message_ids(self, view_id: str) -> list[str]:
        return self.column("SELECT message_id FROM view_entries WHERE view_id = ? ORDER BY pos", (view_id,))

    def load_views(self, session_id: str, known: Mapping[str, Message] | None = None) -> list[View]:
        """The view stack, oldest first, active last (popped views are gone).

        Messages are decoded once and shared: those in `known` (the master log, usually) and
        every message that several stacked views hold are the same objects.
        """
        cache: dict[str, Message] = dict(known or {})
        result: list[View] = []
        for view in self._stacked_views(session_id):
            ids = self._view_message_ids(view["id"])
            missing = [i for i in dict.fromkeys(ids) if i not in cache]
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                placeholders = ",".join("?" for _ in chunk)
                for row in self.query(f"SELECT * FROM messages WHERE id IN ({placeholders})", chunk):
                    cache[row["id"]] = _message_from_row(row)
            result.append(
                View(
                    id=view["id"],
                    messages=tuple(cache[i] for i in ids),
                    parent_id=view["parent_id"],
                    reason=view["reason"],
                    created_at=view["created_at"],
                )
            )
        return result

    # -- archive -----------------------------------------------------------------------------
    @staticmethod
    def _insert_archive(conn: sqlite3.Connection, session_id: str, entries: Iterable[ArchiveEntry]) -> None:
        for entry in entries:
            # Content-addressed: the same key twice in a session is one entry. Any other
            # constraint (missing field, unknown session) fails the whole transaction.
            conn.execute(
                "INSERT INTO archive (key, session_id, reason, bytes, created_at, "
                "source_ids, content) VALUES (?,?,?,?,?,?,?) "
                "ON CONFLICT(session_id, key) DO NOTHING",
                (
                    entry.key,
                    session_id,
                    entry.reason,
                    entry.bytes,
                    entry.created_at,
                    json.dumps(list(entry.source_ids)),
                    redact_known(entry.content),
                ),
            )

    def archive_put(self, session_id: str, entries: Iterable[ArchiveEntry]) -> None:
        with self.transaction() as conn:
            self._insert_archive(conn, session_id, entries)

    def archive_get(
        self, key: str, session_id: str | None = None, *, strict: bool = False
    ) -> ArchiveEntry | None:
        """The entry for `key`, this session's first; with `strict`, only this session's (what the
        model may recall: never another conversation's content)."""
        if strict:
            rows = self.query(
                "SELECT * FROM archive WHERE key = ? AND session_id = ? LIMIT 1", (key, session_id)
            )
        else:
            rows = self.query(
                "SELECT * FROM archive WHERE key = ? ORDER BY session_id = ? DESC LIMIT 1",
                (key, session_id or ""),
            )
        return self._entry(rows[0]) if rows else None

    def archive_list(self, session_id: str | None = None, limit: int = 500) -> list[ArchiveEntry]:
        if session_id:
            rows = self.query(
                "SELECT * FROM archive WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
                (session_id, limit),
            )
        else:
            rows = self.query("SELECT * FROM archive ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,))
        return [self._entry(r) for r in rows]

    def archive_keys(self, session_id: str, limit: int = 200) -> list[tuple[str, str, int, str]]:
        """A session's newest archive keys, read light (the content stays on disk):
        (key, reason, bytes, the first 60 characters)."""
        rows = self.query(
            "SELECT key, reason, bytes, substr(content, 1, 60) AS head FROM archive "
            "WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (session_id, limit),
        )
        return [(row["key"], row["reason"], row["bytes"], row["head"]) for row in rows]

    def archive_search(
        self, query: str, session_id: str | None = None, limit: int = 100
    ) -> list[ArchiveEntry]:
        """Full-text search; every word of the query must start a word of the entry (prefix match)."""
        # Each word becomes a quoted FTS5 string (no operator survives quoting); NUL and other
        # control characters, which FTS5 strings cannot hold, separate words.
        cleaned = "".join(" " if ord(c) < 32 or ord(c) == 127 else c for c in query)
        words = [w.replace('"', '""') for w in cleaned.split() if w.strip()]
        if not words:
            return self.archive_list(session_id, limit)
        match = " ".join(f'"{w}"*' for w in words)
        sql = (
            "SELECT a.* FROM archive_fts f JOIN archive a ON a.rowid = f.rowid WHERE archive_fts MATCH ? "
            + ("AND a.session_id = ? " if session_id else "")
            + "ORDER BY rank LIMIT ?"
        )
        params = (match, session_id, limit) if session_id else (match, limit)
        try:
            return [self._entry(r) for r in self.query(sql, params)]
        except sqlite3.OperationalError:  # a query FTS5 still cannot parse matches nothing
            return []

    @staticmethod
    def _entry(row: sqlite3.Row) -> ArchiveEntry:
        return ArchiveEntry(
            key=row["key"],
            content=row["content"],
            reason=row["reason"],
            source_ids=tuple(json.loads(row["source_ids"])),
            created_at=row["created_at"],
            session_id=row["session_id"],
        )

    # -- requests and events -------------------------------------------------------------------
    def record_request(self, record: dict[str, Any]) -> None:
        values = {k: record.get(k) for k in REQUEST_FIELDS if k in record}
        for key in _HEADER_FIELDS:
            if key in values:
                values[key] = redact_header_values(values[key])
        for key in _TEXT_REQUEST_FIELDS & values.keys():  # a key echoed in an error body, a URL password
            values[key] = redact_value(values[key])
        for key in _JSON_REQUEST_FIELDS & values.keys():
            values[key] = _dumps(values[key])
        columns = ", ".join(values)
        placeholders = ", ".join("?" for _ in values)
        updates = ", ".join(f"{k} = excluded.{k}" for k in values if k != "id")
        with self.transaction() as conn:
            conn.execute(
                f"INSERT INTO requests ({columns}) VALUES ({placeholders}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                tuple(values.values()),
            )

    def route_sizes(self, session_id: str, route: str, provider: str) -> tuple[int | None, int | None]:
        """What this session's requests on `route` showed about body sizes: the largest body that got an
        answer, and the smallest refused for its size (a reset, a 413 or a block judged by size)."""
        rows = self.query(
            "SELECT MAX(CASE WHEN outcome = 'ok' THEN COALESCE(actual_bytes, predicted_bytes) END), "
            "MIN(CASE WHEN kind IN ('payload_too_large', 'waf_block', 'connection_drop') "
            "THEN COALESCE(actual_bytes, predicted_bytes) END) "
            "FROM requests WHERE session_id = ? AND route = ? AND provider = ?",
            (session_id, route, provider),
        )
        if not rows:
            return None, None
        accepted, refused = rows[0][0], rows[0][1]
        return (int(accepted) if accepted else None), (int(refused) if refused else None)

    def list_requests(self, session_id: str | None, limit: int = 10_000) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT * FROM requests WHERE session_id IS ? ORDER BY created_at, rowid LIMIT ?",
            (session_id, limit),
        )
        return [_request_data(row) for row in rows]

    def get_request(self, request_id: str) -> dict[str, Any] | None:
        """One request's whole record (headers, bodies, evidence decoded), or None."""
        rows = self.query("SELECT * FROM requests WHERE id = ?", (request_id,))
        return _request_data(rows[0]) if rows else None

    def request_sizes(self, session_id: str, limit: int = 240) -> list[sqlite3.Row]:
        """The newest `limit` requests of a session, oldest first, read light: id, predicted and actual bytes,
        kind, purpose, outcome (no headers, no bodies)."""
        rows = self.query(
            "SELECT id, predicted_bytes, actual_bytes, kind, purpose, outcome FROM requests "
            "WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (session_id, limit),
        )
        return rows[::-1]

    def record_event(self, session_id: str | None, type_: str, data: dict[str, Any]) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO events (session_id, created_at, type, data) VALUES (?,?,?,?)",
                (session_id, time.time(), type_, _dumps(redact_value(data), default=str)),
            )

    def list_events(self, session_id: str, type_: str | None = None) -> list[dict[str, Any]]:
        if type_:
            rows = self.query(
                "SELECT * FROM events WHERE session_id = ? AND type = ? ORDER BY id", (session_id, type_)
            )
        else:
            rows = self.query("SELECT * FROM events WHERE session_id = ? ORDER BY id", (session_id,))
        return [{**dict(r), "data": json.loads(r["data"])} for r in rows]


def _request_data(row: sqlite3.Row) -> dict[str, Any]:
    """A request's row with its JSON columns decoded (a damaged one: empty)."""
    data = dict(row)
    for key in _JSON_REQUEST_FIELDS:
        empty = "[]" if key == "evidence" else "{}"
        try:
            data[key] = json.loads(data[key] or empty)
        except (TypeError, ValueError):
            data[key] = json.loads(empty)
    return data


def _tighten(path: Path, mode: int) -> None:
    """Make `path` no more open than `mode` (a database copied in with 0644 becomes 0600)."""
    with suppress(OSError):  # someone else's file: leave it, opening it will say what is wrong
        current = path.stat().st_mode & 0o777
        if current & ~mode:
            path.chmod(current & mode)


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies (BEGIN … END;) whole."""
    statements: list[str] = []
    current: list[str] = []
    depth = 0
    for line in script.splitlines():
        stripped = line.split("--", 1)[0].strip()
        if not stripped:
            continue
        current.append(line)
        upper = stripped.upper()
        if upper.endswith("BEGIN"):
            depth += 1
        if upper.startswith("END;"):
            depth -= 1
        if stripped.endswith(";") and depth == 0:
            statements.append("\n".join(current))
            current = []
    if current:
        statements.append("\n".join(current))
    return statements
