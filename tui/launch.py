"""The ``agent-tui`` command's first lines: a ``-p`` run remembered from before sends its
first request here (``tui.agent.providers.ahead``), before the rest of agent-tui is imported;
then the command proper (``tui.cli``) starts as always."""

from __future__ import annotations

import sys


def console() -> None:
    from tui.agent.providers.ahead import send_ahead

    send_ahead(sys.argv[1:])
    from tui.cli import console as command

    command()
