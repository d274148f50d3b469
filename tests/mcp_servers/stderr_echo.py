"""A stdio "server" that writes what it was started with to stderr, then exits.

``python stderr_echo.py ARG...`` prints its arguments and its ``TOKEN`` variable on stderr (in
two writes, the second splitting a line), the way a chatty or a careless server prints its
configuration, so a test can check what its log file keeps.
"""

from __future__ import annotations

import os
import sys

line = f"started with {sys.argv[1:]} and TOKEN={os.environ.get('TOKEN', '')}\n"
half = len(line) // 2
sys.stderr.write(line[:half])
sys.stderr.flush()
sys.stderr.write(line[half:])
sys.stderr.flush()
sys.exit(3)
