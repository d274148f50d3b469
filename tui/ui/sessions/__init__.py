"""sessions panel."""
