"""tmux execution: commands typed into panes a person can watch and take over.

From the bottom up: ``control`` speaks tmux control mode over any backend's ``spawn`` (and
builds the lines that type into a pane); ``markers`` is how a shell tells us a command started
and ended; ``guard`` refuses what would break the shared shell; ``sessions`` names and tags
what we create; ``panes`` follows each pane's shell and the command it runs; ``server`` is the
server on its host and its control clients; ``shells`` starts and sets up a pane's shell;
``instances`` picks an instance's server and session and sweeps what dead ones left. The
backend is one class in four parts (``shared``, ``jobs``, ``pane_io``, ``managed``) joined in
``backend``; ``mirror`` streams one pane's screen to the UI through ``tui.exec.tmux_pane``.

Nothing is imported here: the guard is loaded by every run, the backend only by runs that use
tmux.
"""
