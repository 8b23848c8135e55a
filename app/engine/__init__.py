"""The engine: sessions, payload sizes, failures, recovery, compaction, turns. Never imports textual.

Importing it registers the embedded lab as the `lab` provider (`app.engine.lab_provider`)."""

from app.engine.lab_provider import register_embedded_lab

register_embedded_lab()
