"""vpp package (see its issue)."""
