"""`bulkhead sessions list [--json] | show ID | export ID --format md|json|har | rename ID TITLE | rm ID [--yes]`."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from app.engine.api.sessions import Session, SessionNotFound, load_session
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


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _list(store: Store, args) -> int:
    from app.commands.sessions_filter import AgeError, chosen
    from app.model.session_folders import shown_folder

    as_json = getattr(args, "sessions_json", False)
    try:
        filters = chosen(args, time.time())
    except AgeError as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 2
    rows = store.list_sessions(**filters)  # type: ignore[arg-type]
    if as_json:
        from app.engine.api.sessions import session_holder

        listed = [
            {
                "id": row["id"],
                "title": row["title"],
                "route": row["route"],
                "provider": row["provider"],
                "model": row["model"],
                "workspace": row["workspace"],
                "created_at": _iso(row["created_at"]),
                "updated_at": _iso(row["updated_at"]),
                "messages": row["messages"],
                "held_by": session_holder(store, row["id"]),
            }
            for row in rows
        ]
        sys.stdout.write(json.dumps(listed, ensure_ascii=False, indent=2) + "\n")
        return 0
    if not rows and filters:
        print("no session matches (`bulkhead sessions list` without filters shows every one)")
    elif not rows:
        print('no sessions yet — start one with `bulkhead` or `bulkhead -p "hello"`')
    for row in rows:
        when = datetime.fromtimestamp(row["updated_at"]).strftime("%Y-%m-%d %H:%M")
        print(
            f"{row['id']}  {when}  {row['messages']:5} msgs  {row['route'] or '-':10}  "
            f"{shown_folder(row['workspace'] or '', 30):30}  {row['title'][:60]}"
        )
    return 0


def _prune(store: Store, args) -> int:
    """`sessions prune --older-than AGE`: delete what was not used since, after one confirmation."""
    from app.commands.sessions_filter import AgeError, chosen
    from app.engine.api.sessions import SessionBusy, delete_session, session_holder

    try:
        filters = chosen(args, time.time())
    except AgeError as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 2
    rows = store.list_sessions(limit=1_000_000, **filters)  # type: ignore[arg-type]
    held = [row for row in rows if session_holder(store, row["id"])]
    doomed = [row for row in rows if row not in held]
    for row in held:
        print(f"keeping {row['id']}: open in another bulkhead", file=sys.stderr)
    if not doomed:
        print(f"no session last used more than {args.older_than} ago", file=sys.stderr)
        return 0
    count = sum(row["messages"] for row in doomed)
    what = f"{len(doomed)} session{'s' if len(doomed) != 1 else ''} ({count:,} messages)"
    for row in doomed[:20]:
        print(f"  {row['id']}  {row['title'][:60] or '(untitled)'}", file=sys.stderr)
    if len(doomed) > 20:
        print(f"  … and {len(doomed) - 20} more", file=sys.stderr)
    if args.dry_run:
        print(f"would delete {what} (--dry-run: nothing deleted)", file=sys.stderr)
        return 0
    if not args.rm_yes:
        answer = _confirm(f"delete {what}, with their archives, requests and folders?")
        if answer is None:
            print(
                "bulkhead: pruning needs a confirmation: run it in a terminal, or add --yes", file=sys.stderr
            )
            return 2
        if not answer:
            print("kept them", file=sys.stderr)
            return 1
    deleted = 0
    for row in doomed:
        try:
            delete_session(store, row["id"])
            deleted += 1
        except SessionBusy as exc:  # opened since it was listed
            print(f"keeping {row['id']}: {exc}", file=sys.stderr)
    print(f"deleted {deleted} session{'s' if deleted != 1 else ''}", file=sys.stderr)
    return 0


def _confirm(question: str) -> bool | None:
    """Ask on the terminal; None when there is none to ask on."""
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")  # closed below
    except OSError:
        return None
    with tty:
        if not os.isatty(tty.fileno()):
            return None
        tty.write(f"{question} [y/N] ")
        tty.flush()
        return tty.readline().strip().lower() in ("y", "yes")


def _remove(store: Store, args) -> int:
    from app.engine.api.sessions import SessionBusy, delete_session, session_holder

    row = store.find_session(args.id)
    if row is None:
        print(
            f"bulkhead: no session {args.id!r} (or the prefix names several); `bulkhead sessions list` shows them",
            file=sys.stderr,
        )
        return 1
    holder = session_holder(store, row.id)
    if holder:
        print(
            f"bulkhead: {row.id} is open in another bulkhead ({holder}); close it there, then delete it",
            file=sys.stderr,
        )
        return 1
    count = len(store.master_ids(row.id))  # counted, not decoded: a session with a damaged row can go too
    what = f"{row.id} “{row.title or '(untitled)'}” ({count} messages, its archive, requests and folder)"
    if not args.rm_yes:
        answer = _confirm(f"delete session {what}?")
        if answer is None:
            print(
                f"bulkhead: deleting {row.id} needs a confirmation: run it in a terminal, or add --yes",
                file=sys.stderr,
            )
            return 2
        if not answer:
            print("kept it", file=sys.stderr)
            return 1
    try:
        delete_session(store, row.id)
    except SessionBusy as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 1
    print(f"deleted session {what}", file=sys.stderr)
    return 0


def _unlock(store: Store, args) -> int:
    """`sessions unlock ID`: free a lease whose bulkhead is gone. A live process on this machine is never
    overruled (close it instead); one on another machine cannot be checked, so the user decides."""
    from app.model.ages import age

    row = store.find_session(args.id)
    if row is None:
        print(f"bulkhead: no session {args.id!r}; `bulkhead sessions list` shows them", file=sys.stderr)
        return 1
    holder = store.lease_row(row.id)
    if holder is None:
        print(f"session {row.id} is not held by any bulkhead: nothing to unlock", file=sys.stderr)
        return 0
    if not holder.foreign and holder.alive():
        print(
            f"bulkhead: session {row.id} is open in a running bulkhead on this machine, {holder.describe()}: "
            f"close that one (or use --fork / --read-only); unlock frees only a lease whose bulkhead is gone",
            file=sys.stderr,
        )
        return 1
    if not holder.foreign:  # its process is gone: the next open takes it over anyway; free it now
        store.break_lease(row.id, holder)
        print(
            f"freed session {row.id} (its bulkhead, {holder.describe()}, is no longer running)",
            file=sys.stderr,
        )
        return 0
    question = (
        f"session {row.id} is held by {holder.describe()}, taken {age(holder.age(), words=True)} ago. bulkhead cannot "
        f"check a process on {holder.host}: free it only if that bulkhead is gone (two writers would lose turns). "
        f"Free it?"
    )
    if not getattr(args, "unlock_yes", False):
        answer = _confirm(question)
        if answer is None:
            print(f"bulkhead: {question} — run it in a terminal to answer, or add --yes", file=sys.stderr)
            return 2
        if not answer:
            print("left it held", file=sys.stderr)
            return 1
    if not store.break_lease(row.id, holder):
        print(f"bulkhead: the lease of {row.id} changed meanwhile; nothing was freed", file=sys.stderr)
        return 1
    print(f"freed session {row.id} (was held by {holder.describe()})", file=sys.stderr)
    return 0


def _rename(store: Store, args) -> int:
    from app.engine.api.sessions import rename_session

    row = store.find_session(args.id)
    if row is None:
        print(f"bulkhead: no session {args.id!r}; `bulkhead sessions list` shows them", file=sys.stderr)
        return 1
    try:
        title = rename_session(store, row.id, " ".join(args.title))
    except ValueError as exc:
        print(f"bulkhead: {exc}", file=sys.stderr)
        return 2
    print(f"{row.id} is now “{title}”", file=sys.stderr)
    return 0


def run(args) -> int:
    store = Store()
    if args.action == "list":
        return _list(store, args)
    if args.action == "prune":
        return _prune(store, args)
    if args.action == "rm":
        return _remove(store, args)
    if args.action == "rename":
        return _rename(store, args)
    if args.action == "unlock":
        return _unlock(store, args)
    try:
        session = load_session(store, args.id)
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
