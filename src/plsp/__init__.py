"""plsp package (see its issue)."""
