"""History commands: `/compact`, `/rewind` (to a prompt, or back past a compaction), `/undo`, `/memory` and `#`,
`/recall` — what changes the conversation's view or the workspace's files at the user's word.

It sees the engine only through `HistoryHost` (app.engine.host).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from app.engine.notice_words import notice
from app.model.messages import Message
from app.model.notice_facts.history import (
    RecallNoKey,
    RecallNotFound,
    Remembered,
    RewindNothing,
    RewindRestored,
    RewoundToPrompt,
    UndoDone,
    UndoNothing,
)

if TYPE_CHECKING:
    from app.engine.checkpoints import Restored
    from app.engine.compaction.pipeline import PipelineResult
    from app.engine.host import HistoryHost


class History:
    def __init__(self, host: HistoryHost) -> None:
        self.host = host

    async def compact(
        self, instructions: str | None = None, cancel: asyncio.Event | None = None
    ) -> PipelineResult | None:
        """`/compact [instructions]`: a guided summary of the older history."""
        async with self.host.lock:
            target = int(
                min(
                    self.host.measure(self.host.session.view.messages) * 0.5,
                    self.host.settings.compact_target
                    * self.host.usable_window_tokens()
                    * self.host.bytes_per_token,
                )
            )
            result = await self.host.compactor.run(
                trigger="manual", target_bytes=target, instructions=instructions, cancel=cancel
            )
            await self.host.session.drain()  # its receipt, counters and events are on disk when it is over
            self.host.memory.after_turn()  # what the compaction queued is read now, in the background
            return result

    def rewind(self) -> bool:
        """`/rewind compact`: back to the view before the last compaction (messages since are kept)."""
        restored = self.host.session.rewind()
        if restored is None:
            self.host.emit(notice(RewindNothing()))
            return False
        self.host.emit(notice(RewindRestored(messages=len(restored))))
        self.host.view_changed("rewind")
        return True

    async def undo(self) -> list[Restored]:
        """`/undo`: the files changed by the last turn that changed any go back to how they were before
        it (exact bytes and mode; a file it created is removed). The model is told, in the conversation."""
        from app.engine.checkpoints import describe

        async with self.host.lock:
            turn, snapshots = await asyncio.to_thread(self.host.checkpoints.last_turn_snapshots)
            approved = await self.host.approve_restores(snapshots, "/undo")
            results = await asyncio.to_thread(
                self.host.checkpoints.restore, snapshots, self.host.workspace, approved=approved
            )
            if turn is None:
                self.host.emit(notice(UndoNothing()))
                return []
            said = describe(results, self.host.workspace)
            self.host.emit(notice(UndoDone(turn=turn, restored=said)))
            self.host.session.append(
                Message.create(
                    "user",
                    f"[bulkhead] The user undid the file changes of turn {turn} ({said}). Those files are "
                    f"now as they were before that turn.",
                    turn=self.host.session.turn,
                    origin="notice",
                )
            )
            self.host.view_changed("undo")
            await self.host.session.drain()
            return results

    def rewind_points(self) -> list[tuple[Message, int]]:
        """The session's prompts, oldest first, each with how many files changed since (for `/rewind`)."""
        changed = self.host.checkpoints.active()
        return [
            (message, len({c.path for c in changed if c.turn >= message.meta.turn}))
            for message in self.host.session.master
            if message.role == "user" and message.meta.origin == "user"
        ]

    def view_before(self, message_id: str) -> list[Message]:
        """The conversation just before prompt `message_id`: the newest view holding it, cut there."""
        for view in reversed(self.host.session.views):
            ids = [m.id for m in view.messages]
            if message_id in ids:
                return list(view.messages[: ids.index(message_id)])
        return []

    async def rewind_to(self, message_id: str, *, files: bool) -> tuple[Message, list[Restored]]:
        """`/rewind`: the conversation as it was just before prompt `message_id` — a new view (the master
        log keeps everything; `/rewind compact` pops it again) — and, with `files`, every file changed
        since back as it was. Returns the prompt (to edit and send again) and what was restored."""
        from app.engine.checkpoints import describe

        async with self.host.lock:
            prompt = next((m for m in self.host.session.master if m.id == message_id), None)
            if prompt is None or prompt.role != "user":
                raise ValueError(f"no prompt {message_id!r} in this session")
            kept = self.view_before(message_id)
            await self.host.session.drain()  # commit_view reads the database: our appends first, off the loop
            self.host.session.commit_view(kept, [], reason="rewind")
            restored = []
            if files:
                snapshots = await asyncio.to_thread(self.host.checkpoints.snapshots_since, prompt.meta.turn)
                approved = await self.host.approve_restores(snapshots, "/rewind")
                restored = await asyncio.to_thread(
                    self.host.checkpoints.restore, snapshots, self.host.workspace, approved=approved
                )
            self.host.emit(
                notice(
                    RewoundToPrompt(
                        turn=prompt.meta.turn,
                        messages=len(kept),
                        files_asked=files,
                        files_restored=describe(restored, self.host.workspace) if restored else "",
                    )
                )
            )
            self.host.view_changed("rewind")
            await self.host.session.drain()
            return prompt, restored

    def remember(self, text: str) -> Path:
        """`/memory TEXT` and a `#` line: append to the project's instructions file, then reload it."""
        from app.engine.instructions import append_memory, memory_file

        path = memory_file(self.host.workspace)
        append_memory(path, text)
        self.host.load_instructions()
        self.host.emit(notice(Remembered(path=str(path), text=text)))
        self.host.view_changed("instructions")
        return path

    def recall_into_view(self, key_text: str) -> Message | None:
        """`/recall KEY` (and Enter in the archive browser): put archived content back, as the recall tool would."""
        from app.model.archive import format_recall, parse_recall_keys

        keys = parse_recall_keys(key_text)
        if not keys:
            self.host.emit(notice(RecallNoKey(given=key_text)))
            return None
        found = {}
        for key in keys:
            entry = self.host.session.store.archive_get(key, self.host.session.id)
            found[key] = entry.content if entry else None
        if not any(v is not None for v in found.values()):
            self.host.emit(notice(RecallNotFound(keys=tuple(keys))))
            return None
        text = format_recall(found)
        message = self.host.session.append(
            Message.create(
                "user",
                f"[recalled by the user]\n{text}",
                turn=self.host.session.turn,
                origin="recall",
                preserve_verbatim=True,
            )
        )
        self.host.view_changed("recall")
        return message
