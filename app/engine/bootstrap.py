"""Opening an engine: pick the route (or the embedded lab), find the key, open or resume the session.

With no route configured: a key in the environment (or keyring) gives an implicit route
for that provider; with no key at all, bulkhead runs its built-in lab model in-process
and says so — a newcomer gets a working client with no key and no network.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.config import Route, Settings
from app.engine.route_choice import IMPLICIT_MODELS, RouteChoice, choose_route, with_model
from app.engine.session import Session
from app.lease import SessionHeld, this_process
from app.model.session_folders import elsewhere, folder_key, no_session_here, tools_run_in
from app.providers.factory import make_provider
from app.state import State
from app.store import Store

if TYPE_CHECKING:
    from app.engine.turn import Engine
    from app.mcp.manager import McpManager


def open_session(
    store: Store,
    route: Route,
    *,
    resume: str | None,
    continue_: bool,
    workspace: Path,
    read_only: bool = False,
    fork: bool = False,
    what: str = "",
    notices: list[str] | None = None,
    head_later: bool = False,
    foreign_max_age: float | None = None,
) -> tuple[Session, bool]:
    """(session, resumed): the one asked for, the newest one no other bulkhead holds (`--continue`), or a
    new one — holding its lease (`app.lease`). A session another bulkhead holds raises `SessionHeld`,
    unless `read_only` (look without writing) or `fork` (go on in a copy) says what to do instead.
    `head_later`: a long session held for writing opens from its end (`app.engine.head_later`)."""
    notices = notices if notices is not None else []
    head_later = head_later and not (read_only or fork or store.read_only)
    folder = folder_key(workspace)
    if resume:
        session = Session.load(store, resume, head_later=head_later)
        if read_only or store.read_only:  # asked for, or a read-only home: look without writing
            session.open_read_only(store.lease_holder(session.id))
            return session, True
        if fork:
            return _in_folder(_forked(store, session, what, notices), folder, notices), True
        holder = session.take_lease(what)
        if holder is not None:
            raise SessionHeld(session.id, session.title, holder, foreign_max_age=foreign_max_age)
        return _in_folder(session, folder, notices), True
    if continue_:  # the newest session of this folder (sessions belong to the folder their tools run in)
        me = this_process(what)
        rows = store.folder_sessions(folder)
        for row in rows:
            if fork:
                return _in_folder(
                    _forked(store, Session.load(store, row["id"]), what, notices), folder, notices
                ), True
            holder = store.acquire_lease(row["id"], me)
            if holder is None:  # ours now (loaded only then: a held session is never read whole here)
                session = Session.load(store, row["id"], head_later=head_later)
                session.lease = me
                return session, True
            title = f" “{row['title']}”" if row["title"] else ""
            notices.append(
                f"session {row['id']}{title} is open in "
                f"another bulkhead, {holder.describe()}: -c goes on with the newest session of this folder "
                f"nobody holds, or a new one"
            )
        if not rows:
            notices.append(no_session_here(folder, others=len(store.list_sessions(limit=1))))
    session = Session.create(
        store, route=route.name, provider=route.provider, model=route.model, workspace=folder
    )
    session.take_lease(what)
    return session, False


def _in_folder(session: Session, folder: str, notices: list[str]) -> Session:
    """A session held for writing goes on in `folder`: a session of another folder says so and belongs to
    this one from now on (its tools run here); one that never recorded its folder records it."""
    if session.workspace != folder:
        if elsewhere(session.workspace, folder):
            notices.append(tools_run_in(session.id, session.workspace, folder))
        session.store.update_session(session.id, workspace=folder)
        session.workspace = folder
    return session


def _forked(store: Store, source: Session, what: str, notices: list[str]) -> Session:
    session = Session.load(store, store.fork_session(source.id))
    session.take_lease(what)
    notices.append(
        f"forked session {source.id} into {session.id}: the conversation so far is copied, what you "
        f"add goes to the new session only"
    )
    return session


def open_mcp(settings: Settings, workspace: Path, session: Session, state: State) -> McpManager | None:
    """The session's MCP servers (not started), or None when neither config.toml nor the workspace's
    `.mcp.json` names any — then nothing MCP is even imported."""
    from app.config_mcp import PROJECT_FILE

    if not settings.mcp_servers and not (Path(workspace) / PROJECT_FILE).exists():
        return None
    from app.mcp.manager import McpManager, log_folder_for

    return McpManager.from_settings(
        settings, workspace, log_folder=log_folder_for(session.folder), state=state
    )


def open_engine(
    settings: Settings,
    *,
    route_name: str | None = None,
    resume: str | None = None,
    continue_: bool = False,
    workspace: Path | None = None,
    approver: Callable[[str, dict[str, Any], str], Awaitable[bool | str]] | None = None,
    store: Store | None = None,
    state: State | None = None,
    read_only: bool = False,
    fork: bool = False,
    what: str = "",
    model: str | None = None,
    head_later: bool = False,
) -> tuple[Engine, RouteChoice, bool]:
    """An Engine ready for `start()`, plus the route choice (for the notices to show).

    The session is held for writing (`app.lease`) until `engine.close()`; see `open_session` for
    `read_only`, `fork`, `head_later` and what happens when another bulkhead holds it. `model` (`--model`)
    overrides the route's model for this run."""
    from app.engine.turn import Engine

    store = store or Store()
    state = state or State()
    workspace = Path(workspace or settings.workspace or os.getcwd()).expanduser().resolve()
    gone_route = ""  # the resumed session's route, no longer in config.toml
    if (resume or continue_) and route_name is None:
        latest = (  # the row is enough here
            store.find_session(resume) if resume else store.latest_session(folder_key(workspace))
        )
        if latest is not None and (latest.route in settings.routes or not settings.routes):
            route_name = latest.route or None
            if not settings.routes and route_name not in (None, "lab", *IMPLICIT_MODELS):
                route_name = None
        elif latest is not None and latest.route:
            gone_route = latest.route
    choice = with_model(choose_route(settings, route_name), state, model)
    notices: list[str] = []
    if gone_route and gone_route != choice.route.name:
        notices.append(
            f"this session used route {gone_route!r}, which config.toml no longer has — it goes on with "
            f"{choice.route.name!r} ({choice.route.model}); /model (or --route) picks another"
        )
    session, resumed = open_session(
        store,
        choice.route,
        resume=resume,
        continue_=continue_,
        workspace=workspace,
        read_only=read_only,
        fork=fork,
        what=what,
        notices=notices,
        head_later=head_later,
        foreign_max_age=settings.lease_foreign_max_age,
    )
    if notices:
        choice = replace(choice, session_notices=(*choice.session_notices, *notices))
    if not session.read_only and (session.route, session.provider, session.model) != (
        choice.route.name,
        choice.route.provider,
        choice.route.model,
    ):
        session.set_route(choice.route.name, choice.route.provider, choice.route.model)
    provider = make_provider(choice.route, settings, choice.api_key)
    engine = Engine(
        settings,
        session,
        choice.route,
        provider,
        state=state,
        approver=approver,
        workspace=workspace,
        mcp=open_mcp(settings, workspace, session, state),
    )
    try:
        state.set("last_route", choice.route.name)
    except OSError:
        pass
    return engine, choice, resumed
