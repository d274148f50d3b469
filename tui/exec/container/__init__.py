"""Container execution: commands, files and interactive processes in a docker/podman container.

``backend`` is the ``ExecutionBackend`` (``ContainerBackend``); ``engine`` finds the engine
that knows the container; ``client`` builds exec lines and signals inside; ``wrapper`` is the
in-container ``sh`` prelude and the protocol reading its marker; ``runner`` supervises one
command; ``process`` starts interactive ones.
"""
