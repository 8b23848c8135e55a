"""A damaged state.toml (issue 37, item 17): set aside under a number of its own each time, and said once."""

from __future__ import annotations

from app.state import State, take_damage_notices


def test_each_damaged_copy_is_kept_and_said_once(isolated_home):
    take_damage_notices()
    path = isolated_home / "state.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("caps = [[[ first damage\n")
    assert State(path).read() == {}
    path.write_text("caps = [[[ second damage\n")
    assert State(path).read() == {}

    assert (isolated_home / "state.toml.damaged").read_text() == "caps = [[[ first damage\n"
    assert (isolated_home / "state.toml.damaged.1").read_text() == "caps = [[[ second damage\n"
    said = take_damage_notices()
    assert len(said) == 2 and "state.toml.damaged.1" in said[1] and "could not be read" in said[0]
    assert take_damage_notices() == []  # once


async def test_the_session_start_says_it(make_harness, isolated_home):
    take_damage_notices()
    h = make_harness()
    (isolated_home / "state.toml").write_text("version = [broken\n")
    h.engine.state.read()

    await h.engine.start()

    said = [e.text for e in h.of_type("notice") if e.code == "state"]
    assert len(said) == 1 and "state.toml.damaged" in said[0]
