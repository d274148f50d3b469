"""status panel."""
