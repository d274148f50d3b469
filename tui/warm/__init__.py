"""Warm start: a ``-p`` command run again soon is handed to a process that already imported
agent-tui, instead of importing it all again.

Why: a headless run spends about half a second importing and building before its first
request, and a program calling ``agent-tui -p`` in a loop pays it every time. The second run of
the same kind within ten minutes starts a warm process (``server``): it imports what a run needs,
then waits on a Unix socket in the user's data folder. The next run (``client``) hands it its
command line, folder, environment and standard streams; the warm process forks, and the fork
runs the command exactly as a fresh ``agent-tui`` would, from ``tui.launch``, settings and all
read anew. The command that was typed waits, passes on the signals it gets and exits with the
run's status.

Nothing about a run is decided in the warm process: it holds no settings, keys or sessions,
only imported code (it starts with every secret-named variable blanked: ``place.SECRET_WORDS``).
Its key (``place``) covers everything that could make a fork differ from a fresh start (the code
on disk, the interpreter, its search path and flags, the environment, the folder, the user,
namespaces and cgroup), so a changed install or environment never meets an old process. Only
runs with no terminal are handed over, so job control and the controlling terminal stay as
they are.
"""
