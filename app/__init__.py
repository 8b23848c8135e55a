"""bulkhead: a terminal chat client for coding sessions behind corporate gateways."""

__version__ = "0.1.0"
