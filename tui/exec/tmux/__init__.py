"""tmux execution: commands typed into panes a person can watch and take over.

``control`` speaks tmux control mode over any backend's ``spawn``; ``markers`` knows how a
shell tells us a command ended; ``sessions`` names and tags what we create; ``backend`` is
the ``ExecutionBackend``, a coordinator over ``clients`` (control clients by session),
``panes`` and ``pane_setup`` (panes that speak the markers), ``shared`` (the shared session and
pane), ``jobs`` (a command's life), ``pane_io`` (capture and keys), ``managed`` (the tools'
sessions and panes) and ``feed`` (pane output to panes and listeners); ``mirror`` streams one
pane's screen to the UI.

Nothing is imported here: the tmux tools' small helpers (``guard``, ``selectors``) are loaded
by every run, the backend only by runs that use tmux.
"""
