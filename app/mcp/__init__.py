"""MCP servers as tools, through the official `mcp` SDK.

- `config`     — `[mcp_servers.NAME]` in config.toml and the workspace's `.mcp.json`
                 (Claude Code's format); a project file's servers are asked about once.
- `connection` — one server: started in the background, its state, stderr log, calls.
- `manager`    — every server of a session: start, wait, restart, route a call by tool name.
- `adapter`    — MCP tools as bulkhead tools (`mcp__SERVER__TOOL`), results as tool outcomes.
- `deferral`   — tool definitions that do not crowd the payload: a compact index and
                 `tool_search`, Anthropic's `defer_loading` where the route has it.
- `context_engine` — `context_engine = "mcp:NAME"`: the server's `context_compact` writes
                 the Level 2 summary, the built-in summarizer is the fallback.

Nothing here imports the SDK at module level (it takes ~0.6 s): the connection imports it
in the background, after the first frame. Nothing here imports textual.
"""
