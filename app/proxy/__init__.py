"""`bulkhead proxy`: bulkhead's gateway knowledge in front of any coding agent.

A local reverse proxy (127.0.0.1) for the Anthropic Messages API and OpenAI's Chat Completions and
Responses APIs. Other agents (Claude Code, Codex, the SDKs) point their base URL at it:

- **observe** (default): bodies go upstream byte for byte, streamed both ways; every exchange becomes a
  request record (client, size, status, classification, evidence, latency) kept in the store;
- **translate**: a gateway's refusal judged to be about size reaches the client as its own provider's
  overflow error, so the client's own recovery acts; a content block becomes a non-retryable error;
- **early reject** / **shrink** (opt-in): a request over the learned cap is answered at once, or rewritten
  to fit with stable, content-keyed stubs (originals in the local archive).

Layout: `httpio` (inbound HTTP/1.1), `upstream` (where requests go, the httpx client), `wire` (which API a
path is, the client's name), `native_errors` (the errors each client recognises; whether a refusal
is about size or content is the engine's judgement, `app.engine.block_cause`), `shrink`, `records` (request records and the event bus a front end subscribes to),
`proxy_session` (store, caps, counts), `server` (the exchange), `runfile` (`bulkhead proxy status`).
Nothing here imports Textual: the TUI subscribes to `ProxyEvents`.
"""
