"""Sub-commands of `bulkhead`, one module each, each with `run(args) -> exit code`."""


def settings_flags(args) -> dict:
    """The command-line flags that override config.toml's settings (`load_settings(flags=...)`). Here, not in
    `oneshot`, so the TUI's start does not import the one-shot mode (and the engine with it) before its first frame."""
    return {
        "max_payload": args.max_payload,
        "context_window": args.context_window,
        "approval": args.approval,
        "workspace": args.workspace,
    }
