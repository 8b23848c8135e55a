"""`bulkhead archive list|search QUERY|show KEY [--raw]` — everything compaction took out of a view.

`show` prints the segment as UTF-8 whatever the terminal's encoding, control characters shown as
visible escapes (app/textsafe.py); `--raw` gives the stored bytes unchanged.
"""

from __future__ import annotations

import sys
from datetime import datetime

from app.model.archive import parse_recall_keys
from app.sizes import format_size
from app.store import Store
from app.textsafe import display


def _line(entry) -> str:
    when = datetime.fromtimestamp(entry.created_at).strftime("%Y-%m-%d %H:%M")
    preview = " ".join(entry.content.split())[:70]
    return f"{entry.key}  {when}  {entry.reason:12} {format_size(entry.bytes):>9}  {entry.session_id[:14]:14}  {preview}"


def run(args) -> int:
    store = Store()
    if args.action in ("list", "search"):
        entries = (
            store.archive_list(args.session)
            if args.action == "list"
            else store.archive_search(args.query, args.session)
        )
        if not entries:
            print(
                "nothing archived yet"
                if args.action == "list"
                else f"no archived segment matches {args.query!r}"
            )
        for entry in entries:
            print(_line(entry))
        return 0
    keys = parse_recall_keys(args.key)
    if not keys:
        print(
            f"bulkhead: {args.key!r} is not an archive key (16 hex digits, e.g. <<ccr:3f2a9c0d1e4b5a67>>)",
            file=sys.stderr,
        )
        return 2
    status = 0
    for key in keys:
        entry = store.archive_get(key)
        if entry is None:
            print(f"bulkhead: no archived segment {key}", file=sys.stderr)
            status = 1
            continue
        _write_exact(entry.content if getattr(args, "raw", False) else display(entry.content))
    return status


def _write_exact(content: str) -> None:
    """The text as UTF-8 bytes, whatever the terminal's encoding or newline translation. (Written
    to the byte buffer, under the CLI's SafeStream: the caller decides what is made safe.)"""
    try:
        data = content.encode("utf-8", "surrogateescape")  # undecodable bytes go back out as they came
    except UnicodeEncodeError:
        data = content.encode("utf-8", "replace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stdout (some test harnesses): the best it can take
        sys.stdout.write(content)
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()
