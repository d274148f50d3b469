"""The bubblewrap sandbox every local spawn of the agent's goes through (see ``sandbox.py``)."""
