"""``agent-tui`` as its console script starts it, saying on stderr what the launcher did.

The line ``ahead: {...}`` tells whether the first request was sent ahead and whether pydantic
(the first of the heavy imports) was loaded by then; the command then runs as always.

    python -m tests.ahead_driver -p PROMPT ...
"""

from __future__ import annotations

import json
import sys

from tui.agent.providers.ahead import send_ahead


def main() -> None:
    sent = send_ahead(sys.argv[1:])
    loaded = sorted(name for name in ("pydantic", "tui.cli", "tui.config") if name in sys.modules)
    print("ahead: " + json.dumps({"sent": sent, "loaded": loaded}), file=sys.stderr, flush=True)
    from tui.cli import console

    console()


if __name__ == "__main__":
    main()
