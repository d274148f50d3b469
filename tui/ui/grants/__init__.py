"""grants panel."""
