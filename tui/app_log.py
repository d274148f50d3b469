"""agent-tui's own error log: what went wrong inside the program, kept for a bug report.

The chat says what failed in words; the log keeps the traceback behind it (a worker that
crashed, an exception the app did not expect, a warning a library logged), in one rotating file
under the data folder (``logs/agent-tui.log``, at most three files of 1 MB). It never holds
what the agent did (the session transcript does) and never a provider key: each key is
replaced before a record is written.
"""

from __future__ import annotations

import logging
import logging.handlers
from collections.abc import Callable, Sequence
from pathlib import Path

LOG_NAME = "agent-tui.log"
MAX_BYTES = 1_000_000
BACKUPS = 2
logger = logging.getLogger("agent_tui")


class _Redacting(logging.Filter):
    """Replaces each provider key in a record's text before it reaches the file."""

    def __init__(self, secrets: Callable[[], Sequence[str]]) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        for secret in self.secrets():
            text = text.replace(secret, "[key]")
            if record.exc_text:
                record.exc_text = record.exc_text.replace(secret, "[key]")
        record.msg, record.args = text, None
        return True


def start_log(
    folder: Path, secrets: Callable[[], Sequence[str]] = tuple, level: int = logging.WARNING
) -> Path | None:
    """Send warnings and errors (ours and libraries') to ``folder/agent-tui.log``.

    Returns the file's path, or None when the folder cannot be written (then nothing is
    logged, and nothing fails for it).
    """
    path = folder / LOG_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True
        )
    except OSError:
        return None
    handler.setLevel(level)
    handler.addFilter(_Redacting(secrets))
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > level or root.level == logging.NOTSET:
        root.setLevel(level)
    return path


def log_error(message: str, error: BaseException | None = None) -> None:
    """One error, with its traceback when there is one."""
    exc_info = (type(error), error, error.__traceback__) if error is not None else None
    logger.error(message, exc_info=exc_info)
