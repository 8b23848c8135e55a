"""The engine: sessions, payload sizes, failures, recovery, compaction, turns. Never imports textual."""
