"""Engine events: small frozen facts with a type tag, JSON-ready, fanned out by a bus that never breaks."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest

from app.model import events as events_module
from app.model.events import Event, EventBus, MessageAdded, Notice, Rejection
from app.model.notice_facts.history import RewindRestored

EVENT_CLASSES = [
    obj
    for obj in vars(events_module).values()
    if isinstance(obj, type) and issubclass(obj, Event) and obj is not Event
]


def _sample_value(annotation: str):
    hint = annotation.replace(" ", "")
    alias = getattr(
        events_module, hint, None
    )  # a closed set (NoticeLevel, CompactionTrigger, …): one of its values
    if typing.get_origin(alias) is typing.Literal:
        return typing.get_args(alias)[0]
    if hint.startswith("tuple"):
        return ("a", "b")
    if hint.startswith("dict"):
        return {"k": [1, "ü"]}
    for name, value in (("bool", True), ("int", 3), ("float", 1.5), ("str", "日本 🧪")):
        if hint.startswith(name):
            return value
    if hint == "NoticeFact|None":  # what a notice tells (app.model.notice_facts)
        return RewindRestored(messages=3)
    raise AssertionError(f"no sample for {annotation}")


def build(cls):
    values = {f.name: _sample_value(str(f.type)) for f in dataclasses.fields(cls)}
    return cls(**values)


def test_every_event_is_collected():
    assert len(EVENT_CLASSES) >= 20
    assert len({cls.type for cls in EVENT_CLASSES}) == len(EVENT_CLASSES)  # type tags are unique


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_events_are_frozen_and_json_ready(cls):
    event = build(cls)
    data = event.to_json()
    assert data["type"] == cls.type and cls.type != "event"
    assert json.loads(json.dumps(data, ensure_ascii=False)) == json.loads(json.dumps(data))
    for f in dataclasses.fields(cls):
        assert f.name in data
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.__setattr__(dataclasses.fields(cls)[0].name, None)
    assert event == build(cls)  # value semantics


def test_type_is_a_class_tag_not_a_field():
    assert "type" not in {f.name for f in dataclasses.fields(Notice)}
    assert typing.get_type_hints(Notice)["type"] == typing.ClassVar[str]
    assert Notice("x").to_json() == {"type": "notice", "text": "x", "level": "info", "code": ""}


def test_tuples_become_lists_in_json():
    data = Rejection(kind="waf_block", bytes=10, reason="403", evidence=("status 403", "cf-ray")).to_json()
    assert json.loads(json.dumps(data))["evidence"] == ["status 403", "cf-ray"]


def test_bus_fans_out_in_order_and_unsubscribes():
    bus = EventBus()
    a, b = [], []
    unsubscribe_a = bus.subscribe(a.append)
    bus.subscribe(b.append)
    first = Notice("one")
    bus.emit(first)
    unsubscribe_a()
    unsubscribe_a()  # twice is harmless
    second = Notice("two")
    bus.emit(second)
    assert a == [first] and b == [first, second]


def test_broken_subscriber_breaks_nothing():
    bus = EventBus()
    got = []

    def broken(event):
        raise ValueError("widget gone")

    bus.subscribe(broken)
    bus.subscribe(got.append)
    event = MessageAdded("m1", "user", "user", "hi")
    bus.emit(event)
    bus.emit(event)
    assert got == [event, event]
    assert [type(e) for e in bus.errors] == [ValueError, ValueError]


def test_subscriber_may_unsubscribe_while_emitting():
    bus = EventBus()
    got = []
    holder = {}

    def once(event):
        got.append(event)
        holder["unsubscribe"]()

    holder["unsubscribe"] = bus.subscribe(once)
    bus.emit(Notice("a"))
    bus.emit(Notice("b"))
    assert got == [Notice("a")]


def test_keyboard_interrupt_is_not_swallowed():
    bus = EventBus()

    def interrupt(event):
        raise KeyboardInterrupt

    bus.subscribe(interrupt)
    with pytest.raises(KeyboardInterrupt):
        bus.emit(Notice("x"))


def test_errors_are_bounded():
    bus = EventBus()
    bus.subscribe(lambda event: 1 / 0)
    for _ in range(EventBus.MAX_ERRORS + 50):
        bus.emit(Notice("x"))
    assert len(bus.errors) == EventBus.MAX_ERRORS
