"""approval panel."""
