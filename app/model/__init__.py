"""The shared data model: messages, events, costs, archive entries. Imports nothing of the app."""
