"""`bulkhead sessions list|show ID|export ID --format md|json|har`."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from app.engine.session import Session, SessionNotFound
from app.fsutil import WriteFailed, atomic_write
from app.store import Store
from app.textsafe import json_text


class _ExportFailed(Exception):
    pass


def _write(text: str, output: str | None) -> None:
    if output:
        try:
            atomic_write(Path(output), text)
        except WriteFailed as exc:
            raise _ExportFailed(f"cannot write {output}: {exc.reason} — {exc.unchanged}") from None
        print(f"wrote {output}", file=sys.stderr)
    else:
        sys.stdout.write(text)


def run(args) -> int:
    store = Store()
    if args.action == "list":
        rows = store.list_sessions()
        if not rows:
            print("no sessions yet — start one with `bulkhead` or `bulkhead -p \"hello\"`")
        for row in rows:
            when = datetime.fromtimestamp(row["updated_at"]).strftime("%Y-%m-%d %H:%M")
            print(f"{row['id']}  {when}  {row['messages']:5} msgs  {row['route'] or '-':10}  {row['title'][:60]}")
        return 0
    try:
        session = Session.load(store, args.id)
    except SessionNotFound as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 1
    if args.action == "show":
        from app.export import to_markdown

        sys.stdout.write(to_markdown(session))
        return 0
    try:
        _export(session, args)
    except _ExportFailed as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 1
    return 0


def _export(session: Session, args) -> None:
    if args.format == "md":
        from app.export import to_markdown

        _write(to_markdown(session), args.output)
    elif args.format == "json":
        from app.export import to_json

        _write(json_text(to_json(session), indent=2) + "\n", args.output)
    else:
        from app.config import load_settings
        from app.har import to_har

        har = to_har(session, body_limit=load_settings().har_body_limit)
        _write(json_text(har, indent=2) + "\n", args.output)
