"""A fleet: many SSH hosts driven from one session (inventory, connections, fan-out)."""
