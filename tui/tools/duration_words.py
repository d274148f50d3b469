"""A duration written back as Buddy writes one, for messages that name a wait or a limit."""

from __future__ import annotations


def format_duration(seconds: float) -> str:
    """``seconds`` as Buddy writes a duration back: ``250ms``, ``7s``, ``2m``, ``2h``,
    ``1.250s``, so an error names the wait the model asked for in its own spelling."""
    millis_total = round(seconds * 1000)
    whole, millis = divmod(millis_total, 1000)
    if whole == 0:
        return f"{millis}ms"
    if millis == 0:
        if whole % 3600 == 0:
            return f"{whole // 3600}h"
        if whole % 60 == 0:
            return f"{whole // 60}m"
        return f"{whole}s"
    return f"{whole}.{millis:03d}s"
