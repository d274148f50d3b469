"""The environment a command sees: an allowlist, so API keys never leak into commands."""

from __future__ import annotations

import os
from collections.abc import Mapping


def reduced_environment(
    allowlist: list[str],
    passthrough: list[str],
    source: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Variables from ``source`` whose names are allowed, plus ``extra`` set by the harness."""
    source = os.environ if source is None else source
    allowed = set(allowlist) | set(passthrough)
    env = {
        name: value for name, value in source.items() if name in allowed or name.startswith("LC_")
    }
    if extra:
        env.update(extra)
    return env
