"""Sub-commands of `bulkhead`, one module each, each with `run(args) -> exit code`."""
