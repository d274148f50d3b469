"""A stdio "server" that only records what it was started with, then exits.

``python env_dump.py OUT_DIR`` writes ``OUT_DIR/mcp-env.json`` (its own environment) and
``OUT_DIR/mcp-parent-environ`` (the raw ``/proc/<parent>/environ`` of whoever started it), so a
test can check that neither carries a secret. Exiting before ``initialize`` is fine for that:
the client logs a failed start and carries on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

out = Path(sys.argv[1])
parent = Path(f"/proc/{os.getppid()}/environ").read_bytes()
(out / "mcp-parent-environ").write_bytes(parent)
(out / "mcp-env.json").write_text(json.dumps(dict(os.environ)), encoding="utf-8")
print("env_dump: recorded the environment; not serving", file=sys.stderr)
sys.exit(3)
