"""The images a typed prompt names (`@shot.png`, a pasted path), through the same gate as `read_file`.

Only the text the user typed carries images (text piped into `bulkhead -p` is data). Each path is
resolved through its symlinks first: an image whose real file is outside the workspace asks exactly
as `read_file` of it would (refused, and said so, when nobody can be asked), and a `Read` deny rule
keeps it out. An image is checked before it is attached (`app.engine.images.load_image`): a file with
an image's first bytes but broken data is not sent.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from app.engine.images import accepts_images, is_image_file, load_image, pasted_images
from app.engine.mentions import find_mentions
from app.engine.notice_words import notice
from app.model.events import ToolApproval
from app.model.messages import Image, new_id
from app.model.notice_facts.images import (
    ImageAttached,
    ImageDenied,
    ImageNotApproved,
    ImagesNotTaken,
    ImageUnreadable,
)

Ask = Callable[
    [str, dict[str, Any], str], Awaitable[str]
]  # the engine's _ask: "once" | "session" | … | "deny"


def image_refs(prompt: str, workspace: Path, max_mentions: int) -> dict[Path, str]:
    """The image files `prompt` names, keyed by their real path, with how each was written."""
    refs: dict[Path, str] = {}
    if "@" in prompt and max_mentions > 0:
        for mention in find_mentions(prompt, workspace, max_mentions)[0]:
            path = workspace / os.path.expanduser(mention.path)
            if not mention.is_dir and is_image_file(path):
                refs.setdefault(Path(os.path.realpath(path)), "@" + mention.path)
    for ref in pasted_images(prompt, workspace):
        if is_image_file(ref.path):
            refs.setdefault(Path(os.path.realpath(ref.path)), ref.shown)
    return refs


async def attach_prompt_images(engine: Any, prompt: str, ask: Ask, *, can_ask: bool) -> list[Image]:
    """The prompt's images as image parts, each through the read gate; notices say what was not attached."""
    from app.tools.approval import outside_workspace

    refs = image_refs(prompt, engine.workspace, engine.settings.max_mentions)
    if not refs:
        return []
    accepted, why_not = accepts_images(engine.route)
    if not accepted:
        engine.emit(
            notice(ImagesNotTaken(images=tuple(refs.values()), route=engine.route.name, why_not=why_not))
        )
        return []
    images: list[Image] = []
    for path, shown in refs.items():
        args = {"path": str(path)}
        ruling = engine.permissions.check("read_file", args)
        if ruling.kind == "deny":
            engine.emit(notice(ImageDenied(image=shown, reason=ruling.reason)))
            continue
        if outside_workspace("read_file", args, engine.workspace) or ruling.kind == "ask":
            why = (
                f"{shown} is outside the workspace ({path})"
                if ruling.kind != "ask"
                else f"{shown}: {ruling.reason}"
            )
            answer = await ask("read_file", args, f"{why}: attach it as an image?")
            engine.emit(
                ToolApproval(
                    call_id=new_id("img"),
                    name="read_file",
                    decision="approved" if answer != "deny" else "denied",
                    reason=why,
                )
            )
            if answer == "deny":
                asked_by = ruling.reason if ruling.kind == "ask" else None
                engine.emit(
                    notice(
                        ImageNotApproved(image=shown, path=str(path), ask_rule=asked_by, could_ask=can_ask)
                    )
                )
                continue
        try:
            image = load_image(path, engine.settings.image_max_bytes)
        except ValueError as exc:
            engine.emit(notice(ImageUnreadable(image=shown, path=str(path), problem=str(exc))))
            continue
        images.append(image)
        engine.emit(
            notice(
                ImageAttached(
                    image=shown,
                    media_type=image.media_type,
                    file_bytes=path.stat().st_size,
                    request_bytes=len(image.data),
                )
            )
        )
    return images
