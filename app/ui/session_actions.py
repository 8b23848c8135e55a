"""Handlers of the actions on sessions and routes: /sessions (F5), /new, /rename, /export, the HAR
export and /model (the picker, or a route by name).

Each is `handler(app, arg)` registered in `app.ui.actions`. Opening and switching sessions is the
app's (`app.ui.engine_link`); these decide what to open.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.config import ConfigError
from app.fsutil import atomic_write
from app.ui.actions import Host, handles, module_available
from app.ui.startup import prewarm_in_background

if TYPE_CHECKING:
    from app.engine.api.sessions import Session


@handles("sessions")
def sessions(app: Host, _arg: str) -> None:
    from app.engine.api.sessions import delete_session, rename_session
    from app.model.session_folders import elsewhere, folder_key
    from app.ui.screens.folder import FolderScreen
    from app.ui.screens.sessions import SessionsActions, SessionsScreen

    if app.store is None:
        from app.store import Store

        app.store = Store()
    store = app.store
    current = app.session.info().id if app.session else None

    def rename(session_id: str, title: str) -> str:
        if app.session is not None and session_id == current:
            title = app.session.rename(title)
            app.update_topbar()
            return title
        return rename_session(store, session_id, title)

    def resume(session_id: str | None) -> None:
        if not session_id or (app.session is not None and session_id == current):
            return
        row = store.find_session(session_id)
        if row is None or not app.ask_workspace or not elsewhere(row.workspace, app.workspace):
            app.switch_session(session_id)
            return

        def chosen(choice: str | None) -> None:  # a session of another folder: where do its tools run?
            if choice is None:
                return  # back: the session in use goes on
            if choice == "its":
                app.move_to_workspace(row.workspace)
            app.switch_session(session_id, folder_asked=True)

        app.push_screen(FolderScreen(row.id, row.title, row.workspace, app.workspace), callback=chosen)

    actions = SessionsActions(
        search=store.search_sessions,
        rename=rename,
        delete=lambda session_id: delete_session(store, session_id, current_id=current),
    )
    app.push_screen(
        SessionsScreen(
            store.list_sessions(limit=500),
            current_id=current,
            now=app.clock,
            actions=actions,
            folder=folder_key(app.workspace),
        ),
        callback=resume,
    )


@handles("new")
def new(app: Host, _arg: str) -> None:
    app.switch_session(None)


@handles("rename")
async def rename(app: Host, title: str) -> None:
    try:
        title = app.session.rename(title)
    except ValueError as exc:
        await app.chat.add_notice(str(exc), level="warn", code="rename", title="session")
        return
    app.update_topbar()
    await app.chat.add_notice(f"this session is now “{title}”", code="rename", title="session")


def _stamp(app: Host) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(app.clock()))


def export_paths(workspace: Path, arg: str, stamp: str) -> tuple[Path, Path]:
    """Where `/export [PATH]` writes (Markdown, HAR): the project folder by default; PATH relative to it,
    a folder (the files go in it) or a file name (the HAR beside it, `.har`)."""
    name = f"bulkhead-export-{stamp}"
    if not arg.strip():
        return workspace / f"{name}.md", workspace / f"{name}.har"
    target = Path(arg.strip()).expanduser()
    target = target if target.is_absolute() else workspace / target
    if target.is_dir() or arg.strip().endswith(("/", "\\")):
        return target / f"{name}.md", target / f"{name}.har"
    md = target if target.suffix else target.with_suffix(".md")
    return md, md.with_suffix(".har")


@handles("export")
async def export(app: Host, arg: str) -> None:
    from app.export import to_markdown

    session = app.session.transcript()
    written = []
    md_path, har_path_wanted = export_paths(Path(app.session.info().workspace), arg, _stamp(app))
    text = to_markdown(session)
    try:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(atomic_write, md_path, text, 0o600)
    except OSError as exc:
        await app.chat.add_notice(
            f"could not export to {md_path}: {exc.strerror or exc} — /export PATH writes elsewhere",
            level="error",
            code="export",
            title="export",
        )
        return
    written.append(md_path)
    if module_available("app.har"):
        har_path = await write_har(app, session, har_path_wanted)
        if har_path is not None:
            written.append(har_path)
    names = " and ".join(str(p) for p in written)
    app.notify(f"Exported to {names}", title="export", timeout=8)
    await app.chat.add_notice(f"exported to {names}", code="export", title="export")


async def write_har(app: Host, session: Session, path: Path) -> Path | None:
    """The session's requests as HAR 1.2 (`app.har`: redacted headers, bodies cut to har_body_limit)."""
    from app.textsafe import json_text

    try:
        from app.har import to_har

        data = await asyncio.to_thread(to_har, session, body_limit=app.settings.har_body_limit)
        text = json_text(data, indent=1)
        await asyncio.to_thread(atomic_write, path, text, 0o600)
        return path
    except Exception as exc:  # a HAR failure must not lose the Markdown export
        app.notify(f"HAR export failed: {exc}", severity="error")
    return None


@handles("export_har")
async def export_har(app: Host, _arg: str) -> None:
    session = app.session.transcript()
    path = await write_har(app, session, session.folder / f"requests-{_stamp(app)}.har")
    if path is not None:
        app.notify(f"HAR written to {path}", title="export", timeout=8)
        await app.chat.add_notice(f"requests exported as HAR to {path}", code="export", title="export")


@handles("model")
async def model(app: Host, name: str, chosen_model: str | None = None) -> None:
    """`/model` opens the picker; `/model ROUTE` continues on that route (with the model /model chose
    for it); the picker's choice comes back here with its model, and is remembered for the route."""
    if app.session is None:  # the session could not open: try again on this route
        app.reopen(route_name=name or None)
        return
    if not name:
        _open_model_picker(app)
        return
    try:
        if chosen_model is not None:
            try:
                await app.session.remember_model(name, chosen_model)
            except OSError as exc:
                app.notify(f"could not remember the model: {exc}", severity="warning")
        info = await app.session.switch_route(name)  # its notice says so in the chat
    except ConfigError as exc:
        await app.chat.add_notice(str(exc), level="error", code="model")
        return
    chain = app.session.fallback_chain()
    if chain:
        await app.chat.add_notice(f"fallback chain: {chain}", code="fallback", title="fallback")
    app.show_session_in_inspector()
    app.update_topbar()
    prewarm_in_background(info.provider)


def _open_model_picker(app: Host) -> None:
    from app.ui.screens.models import ModelScreen

    session = app.session
    info = session.info()
    routes = list(app.settings.routes.values()) or [session.route()]

    def picked(choice: tuple[str, str] | None) -> None:
        if not choice or app.session is None:
            return
        route_name, chosen = choice
        now = app.session.info()
        if (route_name, chosen) == (now.route, now.model):
            return
        app.run_worker(
            model(app, route_name, chosen), group="command", exit_on_error=False, name="command model"
        )

    current = (info.route, info.model)
    chain = session.fallback_chain()  # /model shows the chain it starts
    app.push_screen(
        ModelScreen(routes, current=current, load=session.route_models, chain=chain), callback=picked
    )
