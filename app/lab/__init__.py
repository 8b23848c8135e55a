"""The lab: a local gateway simulator and an offline, deterministic lab model."""
