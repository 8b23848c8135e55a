"""A lease from another machine (issue 37, item 15): `sessions unlock` shows the holder and asks; an old one
is offered for take-over, a live one on this machine is never overruled."""

from __future__ import annotations

import time

import pytest

from app.lease import Holder, SessionHeld, this_process
from app.store import Store
from tests.unit.test_sessions_cli import run_cli, two_sessions  # noqa: F401 - the fixture


def foreign(age: float) -> Holder:
    return Holder(pid=4242, started="x:1", host="other-laptop", acquired_at=time.time() - age, what="the TUI")


def test_unlock_shows_the_holder_asks_and_frees_it(two_sessions, capsys, monkeypatch):  # noqa: F811
    store, _first, second = two_sessions
    assert store.acquire_lease(second.id, foreign(3 * 86400)) is None
    asked = []
    monkeypatch.setattr("app.commands.sessions_cmd._confirm", lambda q: asked.append(q) or True)

    code, _out, err = run_cli(capsys, "sessions", "unlock", second.id)

    assert code == 0 and "freed session" in err
    assert "pid 4242 on other-laptop" in asked[0] and "3 days ago" in asked[0]
    assert store.lease_row(second.id) is None
    assert store.acquire_lease(second.id, this_process("test")) is None  # it can be opened again


def test_unlock_without_a_terminal_needs_yes(two_sessions, capsys, monkeypatch):  # noqa: F811
    store, _first, second = two_sessions
    store.acquire_lease(second.id, foreign(60))
    monkeypatch.setattr("app.commands.sessions_cmd._confirm", lambda q: None)
    code, _out, err = run_cli(capsys, "sessions", "unlock", second.id)
    assert code == 2 and "add --yes" in err and store.lease_row(second.id) is not None
    assert run_cli(capsys, "sessions", "unlock", second.id, "--yes")[0] == 0
    assert store.lease_row(second.id) is None


def test_a_live_bulkhead_on_this_machine_is_never_overruled(two_sessions, capsys):  # noqa: F811
    store, _first, second = two_sessions
    store.acquire_lease(second.id, this_process("the TUI"))
    code, _out, err = run_cli(capsys, "sessions", "unlock", second.id, "--yes")
    assert code == 1 and "running bulkhead on this machine" in err and store.lease_row(second.id) is not None


@pytest.mark.parametrize("age, offered", [(3600, False), (2 * 86400, True)])
def test_an_old_foreign_lease_is_offered_for_take_over(age, offered):
    held = SessionHeld("s_1", "t", foreign(age), foreign_max_age=86400)
    assert held.stale_foreign is offered
    assert ("bulkhead sessions unlock s_1" in str(held)) is offered


def test_store_break_lease_leaves_a_changed_lease_alone(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    from app.engine.session import Session

    session = Session.create(store, route="r", provider="lab", model="m", workspace=str(tmp_path))
    old = foreign(10)
    store.acquire_lease(session.id, old)
    other = Holder(pid=9999, started="y:2", host="other-laptop", acquired_at=time.time())
    assert store.break_lease(session.id, other) is False  # not that holder: kept
    assert store.break_lease(session.id, old) is True
    store.close()
