"""The environment a command sees: an allowlist, so API keys never leak into commands."""

from __future__ import annotations

from collections.abc import Mapping

from tui.security.own_environ import PROVIDER_KEY_VARIABLES, process_environ


def reduced_environment(
    allowlist: list[str],
    passthrough: list[str],
    source: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Variables from ``source`` whose names are allowed, plus ``extra`` set by the harness.

    A provider key variable passes only when named in ``passthrough`` (the user's explicit
    opt-in), never through ``allowlist``. ``source`` defaults to the user's environment as
    given, the provider keys agent-tui holds in memory included.
    """
    source = process_environ() if source is None else source
    allowed = (set(allowlist) - set(PROVIDER_KEY_VARIABLES)) | set(passthrough)
    env = {
        name: value for name, value in source.items() if name in allowed or name.startswith("LC_")
    }
    if extra:
        env.update(extra)
    return env
