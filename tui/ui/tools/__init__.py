"""tools panel."""
