"""Engine events as Textual messages: the one bridge between the engine and the widgets."""

from __future__ import annotations

from textual.message import Message

from app.model.events import Event


class EngineEvent(Message):
    """An engine event, posted to the app; the app hands it to the chat and the inspector panels."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event
