"""``python_repl``: the tool (``tools``), the interpreter process it talks to
(``interpreter``), and the stdlib-only program that runs on the target (``driver``)."""
