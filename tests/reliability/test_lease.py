"""One writer per session (issue 14, item 5).

A second bulkhead never writes a session another one holds: `--resume HELD -p` exits 2 naming the
holder and the two ways on (`--fork`, `--read-only`); `-c` picks the newest session nobody holds;
a lease whose process is gone (or whose pid was reused) is taken over. And whatever happens, a
compaction never drops from the view a master message it does not know about unarchived.

The holder is a real second process (`python -c …` opening the session through `open_engine`, as
the TUI does, and waiting); the CLI runs as users run it (`python -m app`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from app.engine.session import Session
from app.lease import Holder, SessionHeld, SessionReadOnly, process_start, this_process
from app.model.messages import Message
from app.model.session_folders import folder_key
from app.store import Store

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent("""
    import sys
    from app.config import load_settings
    from app.engine.bootstrap import open_engine
    engine, choice, resumed = open_engine(load_settings(), resume=sys.argv[1], what="the TUI")
    print("held", engine.session.id, flush=True)
    sys.stdin.read()          # until the test closes our stdin
    import asyncio
    asyncio.run(engine.close())
""")


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BULKHEAD_", "ANTHROPIC", "OPENAI"))}
    config = (
        home.parent / f"{home.name}-config.toml"
    )  # an empty config: a BULKHEAD_CONFIG naming no file is an error
    config.parent.mkdir(parents=True, exist_ok=True)
    config.touch()
    env.update({"PYTHONPATH": str(REPO), "BULKHEAD_HOME": str(home), "BULKHEAD_CONFIG": str(config)})
    return env


@pytest.fixture
def home(isolated_home: Path) -> Path:
    isolated_home.mkdir(parents=True, exist_ok=True)
    return isolated_home


def new_session(store: Store, title: str, folder: Path) -> Session:
    """A session of `folder` (where `run_app` runs bulkhead: `-c` continues that folder's sessions)."""
    session = Session.create(store, route="lab", provider="lab", model="lab-1", workspace=folder_key(folder))
    session.append(Message.create("user", title, turn=1))
    session.append(Message.create("assistant", f"answer to {title}", turn=1))
    return session


@pytest.fixture
def held(home: Path):
    """(store, the newest session — held by a second process, an older session — free, the holder's pid)."""
    store = Store()
    older = new_session(store, "older and free", home)
    time.sleep(0.01)  # updated_at orders them (a clock tick, not a wait for anything)
    newest = new_session(store, "newest and held", home)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, newest.id],
        env=env_for(home),
        cwd=str(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    assert line.startswith("held"), proc.stderr.read()
    try:
        yield store, newest, older, proc.pid
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def run_app(home: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "app", *argv],
        env=env_for(home),
        cwd=str(home),
        text=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )


def test_resume_of_a_held_session_with_p_exits_2_naming_the_holder_and_the_flags(held, home):
    store, newest, _older, pid = held

    done = run_app(home, "--resume", newest.id, "-p", "write into it")

    assert done.returncode == 2, done.stderr
    assert f"pid {pid}" in done.stderr and "the TUI" in done.stderr
    assert "--fork" in done.stderr and "--read-only" in done.stderr
    assert len(Session.load(store, newest.id).master) == 2  # nothing was written


def test_continue_picks_the_newest_session_nobody_holds(held, home):
    store, newest, older, _pid = held

    done = run_app(home, "-c", "-p", "continue please")

    assert done.returncode == 0, done.stderr
    assert "is open in another bulkhead" in done.stderr
    assert len(Session.load(store, newest.id).master) == 2
    assert [m.text for m in Session.load(store, older.id).master][2] == "continue please"


def test_fork_goes_on_in_a_copy(held, home):
    store, newest, _older, _pid = held

    done = run_app(home, "--resume", newest.id, "--fork", "-p", "in the fork")

    assert done.returncode == 0, done.stderr
    assert "forked session" in done.stderr
    fork = next(row for row in store.list_sessions() if row["id"] not in (newest.id, _older.id))
    copied = [m.text for m in Session.load(store, fork["id"]).master]
    assert copied[:2] == ["newest and held", "answer to newest and held"] and copied[2] == "in the fork"
    assert len(Session.load(store, newest.id).master) == 2
    assert fork["title"].endswith("(fork)")


def test_read_only_with_p_is_refused(held, home):
    _store, newest, _older, _pid = held
    done = run_app(home, "--resume", newest.id, "--read-only", "-p", "x")
    assert done.returncode == 2 and "--fork" in done.stderr


def test_the_lease_is_released_on_close_and_a_dead_holder_is_taken_over(home):
    store = Store()
    session = new_session(store, "s", home)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    gone = Holder(pid=int(dead.stdout), started="boot:1", host=this_process().host, acquired_at=1.0, what="x")
    assert store.acquire_lease(session.id, gone) is None  # (written as if that process had taken it)

    assert session.take_lease("me") is None  # its process is dead: taken over
    assert store.lease_holder(session.id).pid == os.getpid()
    session.release_lease()
    assert store.lease_holder(session.id) is None


def test_a_reused_pid_is_not_taken_for_the_holder(home):
    store = Store()
    session = new_session(store, "s", home)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        live = Holder(
            pid=sleeper.pid, started=process_start(sleeper.pid), host=this_process().host, what="other"
        )
        reused = Holder(pid=sleeper.pid, started="another-boot:42", host=live.host, what="other")
        store.acquire_lease(session.id, reused)
        assert session.take_lease() is None  # same pid, other start time: a stale lease
        session.release_lease()
        store.acquire_lease(session.id, live)
        assert session.take_lease().pid == sleeper.pid  # a live holder keeps it
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_read_only_session_refuses_every_write(home):
    store = Store()
    session = new_session(store, "s", home)
    session.open_read_only(None)
    with pytest.raises(SessionReadOnly, match="--fork"):
        session.append(Message.create("user", "no", turn=2))
    with pytest.raises(SessionReadOnly):
        session.commit_view(session.view.messages[1:], [], reason="x")
    assert len(Session.load(store, session.id).master) == 2


# -- nothing is dropped from a view unarchived -------------------------------------------------------------
async def test_a_turn_appended_by_another_process_survives_a_compact(home, fresh_lab):
    """An older bulkhead (no leases) appends a turn behind this one's back; this one then runs /compact.
    The turn must stay in the view (it is not archived) — before, the new view silently left it out."""
    from app.config import Settings
    from app.engine.turn import Engine
    from app.providers.factory import make_provider
    from app.state import State
    from tests.reliability.conftest import FAKE_KEY, route_for

    store = Store()
    session = new_session(store, "first", home)
    for i in range(8):
        session.append(Message.create("user", f"question {i} " + "lorem " * 400, turn=i + 2))
        session.append(Message.create("assistant", f"answer {i} " + "ipsum " * 400, turn=i + 2))
    route = route_for("anthropic", fresh_lab.url)
    settings = Settings(routes={"t": route}, default_route="t", request_timeout=30.0)
    engine = Engine(
        settings, session, route, make_provider(route, settings, FAKE_KEY), state=State(), workspace=home
    )
    outsider = Store(store.path)  # the other process, through its own connection
    theirs = Session.load(outsider, session.id)
    theirs.append(Message.create("user", "a turn from the other process", turn=20))
    theirs.append(Message.create("assistant", "its answer", turn=20))

    outcome = await engine.compact("keep the questions")

    assert outcome is not None and outcome.changed
    texts = [m.text for m in session.view.messages]
    assert texts[-2:] == ["a turn from the other process", "its answer"], texts[-3:]
    reloaded = Session.load(store, session.id)
    assert [m.text for m in reloaded.view.messages][-2:] == texts[-2:]
    assert [m.id for m in reloaded.master] == [m.id for m in session.master]  # we know them now
    await engine.close()


def test_session_held_is_a_clear_store_error():
    held = SessionHeld(
        "s_1", "my work", Holder(pid=42, started="", host="elsewhere", acquired_at=0, what="the TUI")
    )
    assert "pid 42 on elsewhere (the TUI" in str(held) and held.exit_code == 2
