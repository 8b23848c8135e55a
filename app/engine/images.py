"""Images in a prompt: `@screenshot.png`, or a pasted path to an image, becomes an image block.

What counts: an `@mention` of an image file (PNG, JPEG, GIF, WebP — told by its first bytes, not
its name), or a path to one pasted into the prompt the way terminals paste a dropped file: absolute
or `~/…`, quoted ('…', "…") or with `\\ ` before spaces. Each image is attached once, in order.

An image bigger than `image_max_bytes` is not attached (the notice says so). Routes that cannot
take images get none: `images = true | false` on a route decides; by default Anthropic, Bedrock
(Claude, Nova, Llama 3.2 vision, Pixtral) and OpenAI's own endpoints take them, other
OpenAI-compatible servers (Ollama, vLLM, …) are assumed not to until the route says so.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from app.config import Route
from app.model.image_check import problem as image_problem
from app.model.messages import Image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_SUFFIX = r"\.(?:png|jpe?g|gif|webp)"
_PASTED_RE = re.compile(
    rf"""'((?:~|/)[^'\n]*?{_SUFFIX})'"""  # '/path/with spaces.png'
    rf"""|"((?:~|/)[^"\n]*?{_SUFFIX})\""""  # "/path/with spaces.png"
    rf"""|(?<![^\s(\[])((?:~|/)(?:\\ |[^\s'"])*?{_SUFFIX})(?=$|[\s,;:)\]])""",  # /path/with\ spaces.png
    re.I,
)
_VISION_BEDROCK = (
    "anthropic.",
    "claude",
    "amazon.nova",
    "meta.llama3-2-11b",
    "meta.llama3-2-90b",
    "meta.llama4",
    "mistral.pixtral",
)
_NO_VISION_OPENAI = ("gpt-3.5", "gpt-4-32k", "o1-mini", "o3-mini")


@dataclass(frozen=True)
class ImageRef:
    shown: str  # as written in the prompt
    path: Path


def media_type(head: bytes) -> str | None:
    """The image type told by the file's first bytes; None for anything else."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_image_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return media_type(handle.read(16)) is not None
    except OSError:
        return False


def _resolve(written: str, workspace: Path) -> Path:
    path = Path(os.path.expanduser(written))
    return path if path.is_absolute() else workspace / path


def pasted_images(prompt: str, workspace: Path) -> Iterator[ImageRef]:
    """Image paths pasted into the prompt (quoted, or with escaped spaces) that exist."""
    for match in _PASTED_RE.finditer(prompt):
        written = next(group for group in match.groups() if group)
        if match.start() > 0 and prompt[match.start() - 1] == "@":
            continue  # an @mention: found with the mentions
        path = _resolve(written.replace("\\ ", " "), workspace)
        if path.is_file():
            yield ImageRef(written, path)


def accepts_images(route: Route) -> tuple[bool, str]:
    """(does this route take image blocks, why not)."""
    if route.images is not None:
        return route.images, f"images = false on [routes.{route.name}]"
    model = route.model.lower()
    if route.provider in ("anthropic", "lab"):
        return True, ""
    if route.provider == "bedrock":
        ok = any(marker in model for marker in _VISION_BEDROCK)
        return (
            ok,
            f"the Bedrock model {route.model} is not known to take images (set images = true on the route)",
        )
    if route.provider == "openai":
        base = (route.base_url or "").lower()
        official = not base or "api.openai.com" in base or ".openai.azure.com" in base
        if not official:
            return False, (
                f"{route.base_url} is an OpenAI-compatible server that may not take images "
                f"(set images = true on [routes.{route.name}] if its model does)"
            )
        ok = not model.startswith(_NO_VISION_OPENAI) and model not in ("gpt-4", "gpt-4-0613")
        return ok, f"the model {route.model} does not take images"
    return False, f"the {route.provider} provider does not take images"


def load_image(path: Path, max_bytes: int) -> Image:
    """The file as an image part; ValueError with a sentence for the user when it cannot be one."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if size > max_bytes:
        raise ValueError(
            f"{path.name} is {size:,} bytes, more than image_max_bytes ({max_bytes:,}); "
            f"not attached — shrink it or raise image_max_bytes"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    kind = media_type(data[:16])
    if kind is None:
        raise ValueError(f"{path.name} is not a PNG, JPEG, GIF or WebP image; not attached")
    broken = image_problem(kind, data)
    if broken:  # sent, it would make every later request fail with the same 400
        raise ValueError(f"{path.name} looks like a {kind.split('/')[1].upper()} but {broken}; not attached")
    return Image(kind, base64.b64encode(data).decode("ascii"))
