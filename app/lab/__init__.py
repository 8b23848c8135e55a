"""The lab: a local gateway simulator and an offline, deterministic lab model.

`embedded.start_embedded_lab()` runs it in-process; `bulkhead lab` (`app.commands.lab_cmd`) in the
foreground. Modules: `server` (HTTP/1.1 over asyncio), `gateway` + `pages` (profiles and their pages),
`faults` (injected failures), `wire_anthropic` / `wire_openai` / `wire_bedrock` (one per wire format),
`conversation` (the neutral request and the token estimate), `cache` (prompt caching), `model` (the lab
model and its `GRAMMAR`), `config` (`LabConfig`), `eventstream` (AWS event-stream frames).
"""
