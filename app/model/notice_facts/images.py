"""The facts of the image notices: the images a typed prompt names, attached or not
(worded by app.engine.notice_words.images)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class ImagesNotTaken(NoticeFact):
    """The prompt named images and the route does not take images: none attached."""

    kind = "images_not_taken"
    code = "image"
    images: tuple[str, ...]  # each as the prompt wrote it
    route: str
    why_not: str  # why the route takes none (app.engine.images.accepts_images)


@dataclass(frozen=True)
class ImageDenied(NoticeFact):
    """A Read deny rule keeps the image out."""

    kind = "image_denied"
    code = "image"
    image: str  # as the prompt wrote it
    reason: str  # the rule's reason (app.engine.permissions)


@dataclass(frozen=True)
class ImageNotApproved(NoticeFact):
    """An image outside the workspace, or under an ask rule, was not approved (or nobody could be asked)."""

    kind = "image_not_approved"
    code = "image"
    image: str  # as the prompt wrote it
    path: str  # its real file
    ask_rule: str | None  # the reason of the ask rule that asked (None: it asked because it is outside)
    could_ask: bool  # someone could be asked (False: refused for want of a terminal)


@dataclass(frozen=True)
class ImageUnreadable(NoticeFact):
    """A file with an image's name whose data is not a good image (or too big): not sent."""

    kind = "image_unreadable"
    code = "image"
    image: str  # as the prompt wrote it
    path: str
    problem: str  # what the check found, with the file's name (app.engine.images.load_image)


@dataclass(frozen=True)
class ImageAttached(NoticeFact):
    """An image attached to the prompt."""

    kind = "image_attached"
    code = "image"
    image: str  # as the prompt wrote it
    media_type: str
    file_bytes: int
    request_bytes: int  # as base64 in the request


__all__ = ["ImageAttached", "ImageDenied", "ImageNotApproved", "ImageUnreadable", "ImagesNotTaken"]
