"""One module per panel."""
