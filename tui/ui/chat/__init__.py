"""chat panel."""
