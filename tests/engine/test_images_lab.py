"""`@screenshot.png` and pasted image paths through real turns: an image block on the wire, counted
in the payload, refused with a clear notice where the route takes none."""

from __future__ import annotations

import base64

import pytest

from app.model.messages import Image
from tests.unit.test_images import png


@pytest.mark.parametrize("provider", ["anthropic", "openai", "bedrock"])
async def test_an_image_mention_becomes_an_image_block_on_the_wire(make_harness, lab, provider):
    # the lab's OpenAI endpoint is a local server: bulkhead assumes no images there unless the route says so
    h = make_harness(provider, route_extra={"images": True} if provider == "openai" else None)
    (h.engine.workspace / "screenshot.png").write_bytes(png(64, 64))
    empty = h.engine.measure(())

    result = await h.engine.submit("what does @screenshot.png show?")

    assert result.outcome == "answered", result.error
    prompt = h.session.master[0]
    images = [p for p in prompt.parts if isinstance(p, Image)]
    assert len(images) == 1 and base64.b64decode(images[0].data) == png(64, 64)
    assert [m.role for m in h.session.master] == ["user", "assistant"]  # no read_file for the image
    notice = [e.text for e in h.of_type("notice") if e.code == "image"][0]
    assert notice.startswith("attached @screenshot.png as an image (image/png")
    assert f"{len(images[0].data)} B as base64" in notice
    # its bytes are in the request: the payload meter and the lab saw them
    assert h.engine.measure([prompt]) - empty > len(images[0].data) * (0.7 if provider == "bedrock" else 1)
    assert lab.requests()[-1]["bytes"] > len(images[0].data) * 0.7


async def test_a_pasted_path_is_attached_too(make_harness, tmp_path):
    asked = []

    async def yes(name, args, why):
        asked.append((name, why))
        return True

    h = make_harness(approver=yes)
    shot = tmp_path / "Screen Shot.png"  # outside the workspace: asked like a read_file of it
    shot.write_bytes(png())
    await h.engine.submit(f"look: '{shot}'")
    assert any(isinstance(p, Image) for p in h.session.master[0].parts)
    assert asked and asked[0][0] == "read_file" and "outside the workspace" in asked[0][1]
    inside = h.engine.workspace / "inside shot.png"
    inside.write_bytes(png())
    await h.engine.submit(f"and: '{inside}'")
    assert len(asked) == 1  # inside the workspace: attached without asking


# -- issue 37, item 4: images go through the read gate ---------------------------------------------------
async def test_images_outside_the_workspace_ask_and_without_anyone_to_ask_are_not_sent(
    make_harness, tmp_path
):
    h = make_harness()  # no approver: like -p without a terminal
    outside = tmp_path / "private.png"
    outside.write_bytes(png())
    (tmp_path / "other.png").write_bytes(png(8, 8))
    (h.engine.workspace / "innocent.png").symlink_to(tmp_path / "other.png")

    await h.engine.submit("see @../private.png and @innocent.png")

    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)
    said = [e.text for e in h.of_type("notice") if e.code == "image"]
    assert len(said) == 2 and all("outside the workspace" in t and "no terminal to ask" in t for t in said)
    denied = [e for e in h.of_type("tool_approval") if e.decision == "denied"]
    assert [e.name for e in denied] == ["read_file", "read_file"]


async def test_image_paths_in_piped_text_are_data(make_harness, tmp_path):
    h = make_harness()
    (h.engine.workspace / "shot.png").write_bytes(png())
    piped = f"log line: '{h.engine.workspace / 'shot.png'}' and @shot.png"

    await h.engine.submit(f"summarise\n\n{piped}", typed="summarise")

    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)


async def test_a_read_deny_rule_keeps_an_image_out(make_harness):
    h = make_harness(permissions={"deny": ("Read(./private/**)",)})
    (h.engine.workspace / "private").mkdir()
    (h.engine.workspace / "private" / "id.png").write_bytes(png())

    await h.engine.submit("see @private/id.png")

    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)
    assert "Read(./private/**)" in [e.text for e in h.of_type("notice") if e.code == "image"][0]


async def test_a_route_without_images_says_so_and_sends_none(make_harness, lab):
    h = make_harness("openai")  # a local OpenAI-compatible server, no `images = true`
    (h.engine.workspace / "shot.png").write_bytes(png())

    result = await h.engine.submit("see @shot.png")

    assert result.outcome == "answered"
    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)
    notice = [e for e in h.of_type("notice") if e.code == "image"][0]
    assert notice.level == "warn" and "does not take images" in notice.text and "@shot.png" in notice.text


async def test_an_image_over_the_limit_is_not_attached(make_harness):
    h = make_harness(image_max_bytes=100)
    (h.engine.workspace / "big.png").write_bytes(png(64, 64) + b"\x00" * 200)
    await h.engine.submit("see @big.png")
    assert not any(isinstance(p, Image) for p in h.session.master[0].parts)
    assert "image_max_bytes" in [e.text for e in h.of_type("notice") if e.code == "image"][0]
