"""``run_shell``: the tool (``tools``), the same command on many hosts of a fleet
(``fanout``), and a stream's full output saved while it runs (``full_output``)."""
