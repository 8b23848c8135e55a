"""SQLite store: round trips, archive search, requests and events, file modes, schema version."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import stat

import pytest

from app import store as store_module
from app.engine.session import Session
from app.model.archive import ArchiveEntry, make_entry
from app.model.messages import Image, Message, Meta, Text, ToolCall, ToolResult, View, new_id
from app.store import SCHEMA_VERSION, Store, StoreError, database_path

UNICODE = [
    "emoji 🧪👩🏽‍💻🇧🇷 and a ZWJ family 👨‍👩‍👧‍👦",
    "CJK 日本語の文章、中文句子。한국어 문장",
    "RTL שלום עולם — مرحبا بالعالم \u200f mixed \u202eevil\u202c",
    "controls \x01\x02\x07\x08\x0b\x0c\x1b[31mred\x1b[0m\x7f\x85 tab\tcr\rlf\n",
    "combining e\u0301 a\u0308, BOM \ufeff, line sep \u2028 para sep \u2029, astral 𝔘𝔫𝔦",
    'quotes " \' ` \\ and JSON-ish {"a": [1, 2]} and SQL \'; DROP TABLE messages; --',
]


def sample_messages() -> list[Message]:
    png = base64.b64encode(bytes(range(256)) * 4).decode("ascii")
    return [
        Message.create("system", "You are terse. " + UNICODE[0]),
        Message.create("user", UNICODE[1], turn=1),
        Message.create(
            "assistant",
            [
                Text("Let me look. " + UNICODE[2]),
                ToolCall(
                    "call_1",
                    "read_file",
                    {"path": "src/日本.py", "range": [1, 20], "opts": {"follow": True, "n": None}},
                ),
                ToolCall("call_2", "grep", {}),
            ],
            turn=1,
        ),
        Message.create(
            "tool",
            [
                ToolResult("call_1", UNICODE[3], is_error=False),
                ToolResult("call_2", "grep: bad regex " + UNICODE[4], is_error=True),
            ],
            turn=1,
        ),
        Message.create(
            "user", [Text("what is in this picture? " + UNICODE[5]), Image("image/png", png)], turn=2
        ),
        Message.create("assistant", "half an answer", turn=2, partial=True),
        Message.create("user", "keep me", turn=3, preserve_verbatim=True),
    ]


@pytest.fixture
def store():
    s = Store()
    yield s
    s.close()


def new_session(store: Store, **kw) -> tuple[str, str]:
    session_id, view_id = new_id("s"), new_id("v")
    store.create_session(session_id, initial_view_id=view_id, **kw)
    return session_id, view_id


def test_database_lives_in_data_home(isolated_home, store):
    assert database_path() == isolated_home / "bulkhead.db"
    assert store.path == isolated_home / "bulkhead.db"


def test_session_round_trip(store):
    sid, vid = new_session(
        store,
        title="t",
        route="work",
        provider="anthropic",
        model="m",
        workspace="/w",
        system_prompt=UNICODE[2],
    )
    messages = sample_messages()
    seqs = [store.append_message(sid, m, vid) for m in messages]
    assert seqs == list(range(len(messages)))

    store.close()
    reopened = Store()
    assert reopened.load_master(sid) == messages
    views = reopened.load_views(sid)
    assert len(views) == 1 and views[0].id == vid and views[0].messages == tuple(messages)
    row = reopened.get_session(sid)
    assert (row.title, row.route, row.provider, row.model, row.workspace, row.system_prompt) == (
        "t",
        "work",
        "anthropic",
        "m",
        "/w",
        UNICODE[2],
    )
    assert reopened.list_sessions()[0]["messages"] == len(messages)
    reopened.close()


def test_message_fields_survive_exactly(store):
    sid, vid = new_session(store)
    message = Message(
        id="m_exact",
        role="assistant",
        parts=(Text(""), ToolCall("c", "shell", {"cmd": "echo 'hi' && ls", "env": {"A": "ü"}})),
        meta=Meta(
            turn=7,
            created_at=1234.5,
            partial=True,
            preserve_verbatim=True,
            origin="summary",
            archive_keys=("0123456789abcdef",),
            source_ids=("m_a", "m_b"),
        ),
    )
    store.append_message(sid, message, vid)
    assert store.load_master(sid) == [message]
    assert Message.from_dict(json.loads(json.dumps(message.to_dict()))) == message


@pytest.mark.parametrize("text", UNICODE)
def test_unicode_survives(store, text):
    sid, vid = new_session(store)
    message = Message.create("user", text)
    store.append_message(sid, message, vid)
    assert store.load_master(sid)[0].text == text


def test_lone_surrogates_survive(store):
    """Tool output decoded with surrogateescape carries lone surrogates; they must not break a commit."""
    sid, vid = new_session(store)
    message = Message.create("tool", [ToolResult("c", "bad byte \udcff here")])
    store.append_message(sid, message, vid)
    assert store.load_master(sid) == [message]


def test_a_long_log_loads_exactly_whatever_the_sizes_of_its_messages(store):
    """Loading parses many small rows at once (`_JOINED_JSON` characters a batch) and big ones alone: every
    message comes back equal and in order, across the batches' edges."""
    sid, vid = new_session(store)
    big = "x" * (store_module._JOINED_JSON + 10)
    messages = [*sample_messages()]
    for i in range(300):
        text = big if i % 97 == 5 else f"{UNICODE[i % len(UNICODE)]} #{i}"
        messages.append(Message.create("user" if i % 2 else "assistant", text, turn=i))
    messages.append(Message.create("tool", [ToolResult("c", "bad byte \udcff here")]))
    for message in messages:
        store.append_message(sid, message, vid)
    assert store.load_master(sid) == messages


@pytest.mark.parametrize("damage", ['[{"type": "text", "text": "cut', "[], []"], ids=["cut", "two values"])
def test_a_damaged_row_becomes_a_visible_stub_in_its_place(store, damage):
    """A row that is not one JSON array is a stub saying so (issue 37, item 14), never parts shifted onto its
    neighbours, and never a session that cannot be loaded at all."""
    sid, vid = new_session(store)
    messages = [Message.create("user", f"message {i}", turn=i) for i in range(20)]
    for message in messages:
        store.append_message(sid, message, vid)
    store._conn.execute("UPDATE messages SET parts = ? WHERE id = ?", (damage, messages[7].id))
    with pytest.raises(ValueError):
        json.loads(damage)
    loaded = store.load_master(sid)
    assert [m.id for m in loaded] == [m.id for m in messages]
    assert loaded[:7] == messages[:7] and loaded[8:] == messages[8:]
    assert "could not be read from the database" in loaded[7].text and loaded[7].meta.turn == 7


def test_seq_is_per_session(store):
    a, va = new_session(store)
    b, vb = new_session(store)
    assert store.append_message(a, Message.create("user", "1"), va) == 0
    assert store.append_message(b, Message.create("user", "1"), vb) == 0
    assert store.append_message(a, Message.create("user", "2"), va) == 1


def test_duplicate_message_id_is_refused_and_changes_nothing(store):
    sid, vid = new_session(store)
    message = Message.create("user", "once")
    store.append_message(sid, message, vid)
    with pytest.raises(sqlite3.IntegrityError):
        store.append_message(sid, message, vid)
    assert store.load_master(sid) == [message]
    assert len(store.load_views(sid)[0].messages) == 1


def test_find_and_latest_session(store):
    a, _ = new_session(store)
    b, _ = new_session(store)
    store.update_session(a, title="newest")
    assert store.latest_session().id == a
    assert store.find_session(a[:-2]).id == a
    assert store.find_session("s_") is None  # ambiguous
    assert store.find_session("nope") is None
    assert store.find_session("%") is None
    assert store.find_session("") is None
    assert {r["id"] for r in store.list_sessions()} == {a, b}
    with pytest.raises(ValueError):
        store.update_session(a, id="x")


def test_session_prefix_is_literal(store):
    only, _ = new_session(store)
    assert store.find_session(only[:6]).id == only
    for typed in ("", "_", "%", "s%", "__", only[:3] + "%"):
        assert store.find_session(typed) is None, typed


def test_counters_and_flags_round_trip(store):
    sid, _ = new_session(store)
    store.update_session(
        sid, counters={"requests": 3, "rejections": {"waf_block": 1}}, flags={"notice": True}
    )
    row = store.get_session(sid)
    assert row.counters == {"requests": 3, "rejections": {"waf_block": 1}} and row.flags == {"notice": True}


# --- archive -------------------------------------------------------------------------------------

ARCHIVE_TEXTS = [
    "def compute_payload_size(view):\n    return sum(len(m) for m in view)  # gateway cap",
    "The nginx gateway answered 413 Request Entity Too Large for a 5 MB body.",
    "Cloudflare block page: cf-ray 8a1b2c3d, security policy violation.",
    "日本語のログ出力 with mixed text and the word gateway",
]


def test_archive_keys_are_light_newest_first_and_of_one_session(store):
    sid, _ = new_session(store)
    other, _ = new_session(store)
    entries = [make_entry(text, "microcompact") for text in ARCHIVE_TEXTS]
    for entry in entries:  # one at a time: newest last
        store.archive_put(sid, [entry])
    store.archive_put(other, [make_entry("another session's text", "L2")])

    listed = store.archive_keys(sid)
    assert [row[0] for row in listed] == [e.key for e in reversed(entries)]
    key, reason, size, head = listed[-1]
    assert (reason, size, head) == ("microcompact", len(ARCHIVE_TEXTS[0].encode()), ARCHIVE_TEXTS[0][:60])
    assert store.archive_keys(sid, limit=2) == listed[:2]


def test_archive_round_trip_and_search(store):
    sid, _ = new_session(store)
    other, _ = new_session(store)
    entries = [make_entry(text, "microcompact", (f"m_{i}",)) for i, text in enumerate(ARCHIVE_TEXTS)]
    store.archive_put(sid, entries)
    store.archive_put(sid, entries[:1])  # the same content again: content-addressed, stored once
    store.archive_put(other, [make_entry("another session's gateway text", "L2")])

    got = store.archive_get(entries[0].key)
    assert got.content == ARCHIVE_TEXTS[0] and got.reason == "microcompact" and got.source_ids == ("m_0",)
    assert got.session_id == sid and got.bytes == len(ARCHIVE_TEXTS[0].encode())
    assert store.archive_get("0" * 16) is None
    assert len(store.archive_list(sid)) == 4 and len(store.archive_list()) == 5

    def keys(query, session=None):
        return {e.key for e in store.archive_search(query, session)}

    assert keys("compute_pay") == {entries[0].key}  # prefix of a word
    assert keys("gate") == {entries[0].key, entries[1].key, entries[3].key, store.archive_list(other)[0].key}
    assert keys("gate", sid) == {entries[0].key, entries[1].key, entries[3].key}
    assert keys("nginx 413") == {entries[1].key}  # several words: all must match
    assert keys("nginx cloudflare") == set()
    assert keys("CF-RAY") == {entries[2].key}
    assert keys("日本語") == {entries[3].key}
    assert keys("") == keys("   ") == {e.key for e in store.archive_list()}


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "'",
        "*",
        "gate*",
        "-",
        "NOT",
        "AND OR",
        "NEAR(a b)",
        "a:b",
        "^start",
        "(unbalanced",
        "col:",
        "\\",
        "%_",
        "'; DROP TABLE archive; --",
        "null\x00byte",
        "\x00",
        "émoji 🧪",
        "{}[]",
        "+",
        "content:gateway",
    ],
)
def test_punctuation_in_search_never_crashes(store, query):
    sid, _ = new_session(store)
    store.archive_put(sid, [make_entry(text, "L2") for text in ARCHIVE_TEXTS])
    result = store.archive_search(query)
    assert isinstance(result, list)
    assert len(store.archive_list()) == len(ARCHIVE_TEXTS)


def test_archive_search_punctuation_words_do_not_hide_matches(store):
    sid, _ = new_session(store)
    store.archive_put(sid, [make_entry(ARCHIVE_TEXTS[1], "L2")])
    assert len(store.archive_search("nginx -")) == 1
    assert len(store.archive_search("nginx, 413!")) == 1


def test_archive_rows_need_a_session(store):
    with pytest.raises(sqlite3.IntegrityError):
        store.archive_put("no-such-session", [make_entry("x", "L2")])
    assert store.archive_list() == []


def test_archive_entry_with_a_missing_field_is_refused(store):
    sid, _ = new_session(store)
    bad = ArchiveEntry(key="0123456789abcdef", content="text", reason=None)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):
        store.archive_put(sid, [make_entry("fine", "L2"), bad])
    assert store.archive_list() == []  # all or nothing


# --- requests and events ------------------------------------------------------------------------------


def test_requests_round_trip(store):
    sid, _ = new_session(store)
    record = {
        "id": "r1",
        "session_id": sid,
        "created_at": 100.0,
        "route": "work",
        "provider": "anthropic",
        "model": "m",
        "url": "https://gw/v1/messages",
        "purpose": "chat",
        "attempt": 1,
        "level": 2,
        "predicted_bytes": 1000,
        "actual_bytes": 1004,
        "status": 413,
        "latency_ms": 12.5,
        "kind": "payload_too_large",
        "reason": "413 from nginx",
        "evidence": ["status 413", "phrase"],
        "request_headers": {"content-type": "application/json"},
        "response_headers": {"server": "nginx", "x-ünï": "ç"},
        "body_preview": "{…}",
        "error_body": "<html>413 日本</html>",
        "usage": {"input_tokens": 5},
        "outcome": "rejected",
        "decision": {"action": "learn a cap", "cause": "size", "hop": {"kind": "gateway", "name": "nginx"}},
        "ignored_extra": "x",
    }
    store.record_request(record)
    store.record_request({"id": "r2", "session_id": sid, "created_at": 101.0})
    got = store.list_requests(sid)
    assert [r["id"] for r in got] == ["r1", "r2"]
    expected = {k: v for k, v in record.items() if k != "ignored_extra"}
    assert got[0] == expected
    assert got[1]["evidence"] == [] and got[1]["request_headers"] == {} and got[1]["status"] is None
    assert got[1]["decision"] == {}

    store.record_request(
        {"id": "r2", "session_id": sid, "created_at": 101.0, "status": 200, "actual_bytes": 9}
    )
    assert store.list_requests(sid)[1]["status"] == 200  # an update, not a second row
    assert len(store.list_requests(sid)) == 2

    store.record_request({"id": "probe", "session_id": None, "created_at": 1.0, "purpose": "probe"})
    assert [r["id"] for r in store.list_requests(None)] == ["probe"]


def test_secret_headers_are_redacted_on_record(store):
    sid, _ = new_session(store)
    secret = "sk-ant-api03-SECRETsecretSECRET0123456789"
    store.record_request(
        {
            "id": "r",
            "session_id": sid,
            "created_at": 1.0,
            "request_headers": {
                "x-api-key": secret,
                "Authorization": f"Bearer {secret}",
                "Content-Type": "application/json",
            },
            "response_headers": {"Set-Cookie": f"s={secret}"},
        }
    )
    raw = store.query("SELECT request_headers, response_headers FROM requests")[0]
    assert secret not in raw[0] and secret not in raw[1]
    got = store.list_requests(sid)[0]["request_headers"]
    assert got["Content-Type"] == "application/json" and got["x-api-key"] == "[redacted]"


def test_redaction_keeps_what_the_inspector_needs():
    from app.store import redact_header_values

    headers = {
        "anthropic-ratelimit-tokens-remaining": "5",
        "cf-ray": "8a1b",
        "x-request-id": "req_1",
        "www-authenticate": 'Bearer realm="api"',
        "X-Auth-Token": "t",
        "x-amz-security-token": "t",
        "X-Amz-Credential": "c",
        "api_key": "k",
        "content-length": "12",
        "retry-after": "3",
    }
    got = redact_header_values(headers)
    assert [k for k, v in got.items() if v == "[redacted]"] == [
        "X-Auth-Token",
        "x-amz-security-token",
        "X-Amz-Credential",
        "api_key",
    ]
    assert got["anthropic-ratelimit-tokens-remaining"] == "5" and got["retry-after"] == "3"
    assert redact_header_values(None) is None


def test_events_round_trip(store):
    sid, _ = new_session(store)
    store.record_event(sid, "hook", {"event": "PreToolUse", "exit_code": 2, "output": "blocked 日本"})
    store.record_event(sid, "rejection", {"kind": "waf_block", "evidence": ("status 403", "cf-ray")})
    store.record_event(sid, "odd", {"when": object.__new__(type("When", (), {"__str__": lambda s: "later"}))})
    assert [e["type"] for e in store.list_events(sid)] == ["hook", "rejection", "odd"]
    assert store.list_events(sid, "hook")[0]["data"] == {
        "event": "PreToolUse",
        "exit_code": 2,
        "output": "blocked 日本",
    }
    assert store.list_events(sid, "rejection")[0]["data"]["evidence"] == ["status 403", "cf-ray"]
    assert store.list_events(sid, "odd")[0]["data"] == {"when": "later"}
    assert store.list_events(sid, "none") == []


# --- files, schema, failures ------------------------------------------------------------------------


def test_file_modes(isolated_home):
    old = os.umask(0o022)
    try:
        store = Store()
        sid, vid = new_session(store)
        store.append_message(sid, Message.create("user", "hi"), vid)
        folder = store.session_folder(sid)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(isolated_home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder.parent).st_mode) == 0o700  # the `sessions` folder too
    for name in ("bulkhead.db", "bulkhead.db-wal", "bulkhead.db-shm"):
        path = isolated_home / name
        if path.exists():
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, name
    store.close()


def test_existing_database_with_loose_mode_is_tightened(isolated_home):
    Store().close()
    os.chmod(isolated_home / "bulkhead.db", 0o644)
    Store().close()
    assert stat.S_IMODE(os.stat(isolated_home / "bulkhead.db").st_mode) == 0o600


def test_pragmas(store):
    assert store.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    assert store.query("PRAGMA journal_mode")[0][0] == "wal"
    assert store.query("PRAGMA foreign_keys")[0][0] == 1
    assert store.query("PRAGMA integrity_check")[0][0] == "ok"


def test_reopen_does_not_migrate_again(store):
    sid, _ = new_session(store)
    store.close()
    again = Store()
    assert again.get_session(sid) is not None
    assert again.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    again.close()


def test_newer_schema_is_a_clear_error(isolated_home):
    Store().close()
    conn = sqlite3.connect(isolated_home / "bulkhead.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError) as info:
        Store()
    message = str(info.value)
    assert "bulkhead.db" in message and "newer" in message and str(SCHEMA_VERSION + 1) in message


def test_not_a_database_is_a_clear_error(isolated_home):
    isolated_home.mkdir(parents=True)
    (isolated_home / "bulkhead.db").write_bytes(b"this is not SQLite at all" * 100)
    with pytest.raises(StoreError) as info:
        Store()
    assert "bulkhead.db" in str(info.value)


def test_unwritable_home_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("BULKHEAD_HOME", str(blocker / "sub"))
    with pytest.raises(StoreError, match="BULKHEAD_HOME"):
        Store()


def test_migration_race_with_another_process(isolated_home, monkeypatch):
    """Another bulkhead migrates the fresh database between our version check and our write lock."""
    isolated_home.mkdir(parents=True)
    path = isolated_home / "bulkhead.db"
    real_connect = sqlite3.connect
    raced = []

    def other_process_migrates():
        other = real_connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        for statement in store_module._split_sql(store_module._MIGRATIONS[1]):
            other.execute(statement)
        other.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        other.execute("COMMIT")
        other.close()

    def connect(*args, **kwargs):
        conn = real_connect(*args, **kwargs)

        def trace(sql):
            if sql.strip().upper().startswith("BEGIN IMMEDIATE") and not raced:
                raced.append(sql)
                other_process_migrates()

        conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)
    store = Store()
    monkeypatch.setattr(store_module.sqlite3, "connect", real_connect)
    assert raced
    sid, vid = new_session(store)
    store.append_message(sid, Message.create("user", "fine"), vid)
    assert store.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
    store.close()


def test_session_folder(store, isolated_home):
    sid, _ = new_session(store)
    folder = store.session_folder(sid)
    assert folder == isolated_home / "sessions" / sid and folder.is_dir()
    assert store.session_folder(sid) == folder  # idempotent


def test_store_is_usable_from_threads(store):
    import threading

    sid, vid = new_session(store)
    errors = []

    def worker(n):
        try:
            for i in range(20):
                store.append_message(sid, Message.create("user", f"{n}-{i}"), vid)
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    master = store.load_master(sid)
    assert len(master) == 80 and len(store.load_views(sid)[0].messages) == 80


def test_session_create_and_load_via_engine(store):
    session = Session.create(store, route="work", provider="lab", model="lab-1", system_prompt="sys")
    for message in sample_messages():
        session.append(message)
    again = Session.load(store, session.id)
    assert again.master == session.master and again.view == session.view
    assert isinstance(again.view, View)
