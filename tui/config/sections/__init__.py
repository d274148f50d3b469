"""The settings sections: one pydantic model per TOML table, grouped by topic in this package.

Every section forbids unknown keys (``max_turn = 5`` must fail, not be ignored), so they all
share one ``model_config``; the docstring under each field is its documentation, which the
dumper (``tui.config.dump``) reads from the source when it writes a config file. The root
model that gathers them is ``tui.config.settings``.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, ConfigDict

SECTION = ConfigDict(extra="forbid", allow_inf_nan=False)
"""The ``model_config`` of every section: unknown keys are errors, and so are ``inf`` and
``nan`` (TOML has them; no timeout or size means them)."""


def _http_url(value: str) -> str:
    """Caught at its line, not when the first request fails."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port  # reading it checks it (a port past 65535 raises)
    except ValueError as error:
        raise ValueError(f"not a usable URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    del port
    return value


HttpUrl = Annotated[str, AfterValidator(_http_url)]
"""A URL requests are sent to: ``http(s)://host[:port]/…``, checked when the config loads."""
