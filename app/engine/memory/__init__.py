"""The memory worker (issue 41): durable facts from the conversation, and a queue no compaction can skip.

`worker.MemoryWorker` reads and distils; `journal.MemoryJournal` keeps its queue, journal and progress in the
session database; `memory_file` is the `memory = "auto"` file outside the repository.
"""
