"""A damaged image never wedges a session (issue 37, item 12): it is refused on attach, and one already in the
conversation is replaced by a stub when the provider (the lab, as Anthropic does) answers 400 about it."""

from __future__ import annotations

import base64
import struct

import pytest

from app.model.messages import Image, Message, Text
from tests.unit.test_images import png


def broken_png() -> bytes:
    data = bytearray(png(16, 16))
    data[40:48] = b"\x00" * 8  # inside the IDAT chunk: the magic is fine, the data is not
    return bytes(data)


@pytest.mark.parametrize(
    "name, data",
    [
        ("broken.png", broken_png()),
        ("cut.png", png(16, 16)[:-20]),
        (
            "cut.jpg",
            b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9 + b"\xff\xda\x00\x08",
        ),
        ("cut.webp", b"RIFF" + struct.pack("<I", 400) + b"WEBPVP8 " + b"\x00" * 20),
    ],
)
async def test_a_damaged_image_is_not_attached_and_the_turn_goes_on(make_harness, name, data):
    h = make_harness()
    (h.engine.workspace / name).write_bytes(data)

    result = await h.engine.submit(f"what is in @{name}?")

    assert result.outcome == "answered", result.error
    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)
    said = [e.text for e in h.of_type("notice") if e.code == "image"]
    assert said and name in said[0] and "not attached" in said[0]


async def test_an_image_the_provider_cannot_read_is_stubbed_once_and_the_session_continues(make_harness, lab):
    h = make_harness()
    damaged = Image("image/png", base64.b64encode(broken_png()).decode())
    h.session.append(Message.create("user", [Text("look"), damaged], turn=1))  # from an older session (-c)
    h.session.append(Message.create("assistant", "I cannot see it", turn=1))

    first = await h.engine.submit("and now?")
    second = await h.engine.submit("still there?")

    assert first.outcome == "answered", first.error
    assert second.outcome == "answered", second.error
    view_images = [p for m in h.session.view.messages for p in m.parts if isinstance(p, Image)]
    assert view_images == []
    assert any(isinstance(p, Image) for m in h.session.master for p in m.parts)  # the log keeps it
    said = [e.text for e in h.of_type("notice") if e.code == "image"]
    assert len(said) == 1 and "could not read an image" in said[0] and "sent again" in said[0]
