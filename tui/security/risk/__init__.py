"""How dangerous a shell command is, segment by segment, before a person is asked to approve it.

The approval modal shows a person a risk label and the reasons for it, and the policy uses the
same verdict to decide which permission a command needs. A label that is too low is the failure
that matters: a person who is told "low" approves without reading. So this module:

- parses with a real shell grammar (tree-sitter-bash) rather than regexes, because quoting,
  ``$(…)``, backticks, here-documents and line continuations are exactly where a regex is fooled;
- sees through the disguises a command name can wear (``"rm"``, ``\\rm``, ``/bin/rm``,
  ``FOO=1 rm``, ``sudo``/``env``/``timeout``/``xargs``/``nice`` … wrappers);
- judges code-running escapes (``bash -c``, ``eval``, ``find -exec``, ``git -c``, ``python -c``)
  by what they run, parsing shell strings recursively and rating opaque code high;
- errs towards the higher label whenever it cannot tell (a command name computed at run time,
  a syntax error, a string built from variables that a shell will parse again);
- never raises: whatever goes wrong, the answer is a conservative "high", because the caller is
  a security check and an exception there would either crash the agent or be swallowed.

Each simple command is one segment, with its exact source text, because the policy grants and
matches rules per segment: a person who allows ``touch a`` must not thereby allow ``rm -rf b``.

The rooms, in the order a command flows through them: ``assess`` (the cached entry point) →
``walk`` (the tree walk, one segment per simple command) → ``judge`` (one argv: wrappers,
environment, shell strings) and ``redirects`` → ``dispatch`` (which rules speak for a program)
→ ``rules/`` (one family a module, each reading a ``call.Call``). ``tables/`` holds the rating
tables as plain data; ``verdict``, ``words``, ``source``, ``write_targets`` (where a write
lands), ``program_names`` (the table key a name stands for) and ``unwrap`` (seeing through
``sudo``, ``env`` …) are the shared vocabulary below them all.
"""
