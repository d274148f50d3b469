"""SSH execution: commands, files and interactive processes on a remote host.

``backend`` is the ``ExecutionBackend`` (``SSHBackend``); ``target`` parses where to connect;
``connection`` holds the one connection and its reconnects; ``host_keys`` verifies the host;
``command_line`` builds what the remote shell runs; ``channel`` and ``runner`` run and
supervise one command; ``files`` moves files over SFTP; ``process`` starts interactive ones.
"""
