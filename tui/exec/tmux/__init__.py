"""tmux execution: commands typed into panes a person can watch and take over.

``control`` speaks tmux control mode over any backend's ``spawn``; ``markers`` knows how a
shell tells us a command ended; ``sessions`` names and tags what we create; ``backend`` is
the ``ExecutionBackend``; ``mirror`` streams one pane's screen to the UI.
"""

from tui.exec.tmux.backend import TmuxBackend

__all__ = ["TmuxBackend"]
