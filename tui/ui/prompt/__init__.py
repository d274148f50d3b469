"""prompt panel."""
