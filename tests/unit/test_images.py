"""Images in a prompt: which paths count, which routes take them, what is refused."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import pytest

from app.config import Route
from app.engine.images import accepts_images, load_image, media_type, pasted_images


def png(width: int = 2, height: int = 2) -> bytes:
    """A valid PNG of `width`×`height` grey pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def test_media_type_comes_from_the_bytes_not_the_name() -> None:
    assert media_type(png()) == "image/png"
    assert media_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert media_type(b"GIF89a....") == "image/gif"
    assert media_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert media_type(b"not an image") is None


def test_pasted_paths_quoted_or_with_escaped_spaces(tmp_path: Path) -> None:
    shot = tmp_path / "Screen Shot 1.png"
    shot.write_bytes(png())
    plain = tmp_path / "plain.jpg"
    plain.write_bytes(b"\xff\xd8\xff\xe0")
    escaped = str(shot).replace(" ", "\\ ")
    prompt = f"what is wrong here? '{shot}' and {escaped} and {plain}, and {tmp_path}/missing.png"
    assert [ref.path for ref in pasted_images(prompt, tmp_path)] == [shot, shot, plain]
    assert list(pasted_images(f"see @{plain}", tmp_path)) == []  # an @mention is found with the mentions


def test_load_image_base64_and_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(png())
    image = load_image(path, max_bytes=1024)
    assert image.media_type == "image/png" and base64.b64decode(image.data) == png()
    with pytest.raises(ValueError, match="image_max_bytes"):
        load_image(path, max_bytes=10)
    fake = tmp_path / "fake.png"
    fake.write_text("just text")
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP"):
        load_image(fake, max_bytes=1024)


@pytest.mark.parametrize(
    "route, accepted",
    [
        (Route("a", "anthropic", "claude-sonnet-5-5"), True),
        (Route("b", "bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"), True),
        (Route("b", "bedrock", "amazon.titan-text-express-v1"), False),
        (Route("o", "openai", "gpt-5.5"), True),
        (Route("o", "openai", "gpt-3.5-turbo"), False),
        (Route("l", "openai", "qwen2.5-coder", base_url="http://localhost:11434/v1"), False),
        (Route("l", "openai", "llava", base_url="http://localhost:11434/v1", images=True), True),
        (Route("a", "anthropic", "claude-sonnet-5-5", images=False), False),
        (Route("lab", "lab", "lab-1"), True),
    ],
)
def test_which_routes_take_images(route: Route, accepted: bool) -> None:
    ok, why = accepts_images(route)
    assert ok is accepted
    if not ok:
        assert why
