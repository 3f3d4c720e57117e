"""vlp package (see its issue)."""
