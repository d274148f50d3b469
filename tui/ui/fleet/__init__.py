"""A fleet in the app: the host list beside the tool stream, and a mirror per host."""
