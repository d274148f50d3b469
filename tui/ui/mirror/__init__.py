"""mirror panel."""
