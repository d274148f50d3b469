"""Execution backends: where commands run (local, tmux, containers, SSH)."""
