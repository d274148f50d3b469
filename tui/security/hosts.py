"""Which hosts web calls may reach: ``[security] allowed_hosts`` and ``blocked_hosts``.

Checked for every request a web tool sends, redirects included, so an allowed host cannot
bounce a call somewhere blocked.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from tui.tools.errors import PermissionDenied


def _normal(host: str) -> str:
    return host.strip().lower().rstrip(".").removeprefix("*.").strip("[]")


def _covers(pattern: str, host: str) -> bool:
    """``example.com`` covers itself and every subdomain; ``*`` covers everything."""
    return pattern == "*" or host == pattern or host.endswith("." + pattern)


@dataclass(frozen=True)
class HostPolicy:
    allowed: tuple[str, ...] | None
    """None: any host not blocked."""
    blocked: tuple[str, ...] = ()

    @classmethod
    def from_lists(cls, allowed: list[str] | None, blocked: list[str]) -> HostPolicy:
        return cls(
            tuple(_normal(h) for h in allowed if h.strip()) if allowed is not None else None,
            tuple(_normal(h) for h in blocked if h.strip()),
        )

    def check(self, url: str) -> None:
        """Raises PermissionDenied naming the setting that refuses ``url``'s host."""
        host = _normal(urlsplit(url).hostname or "")
        if not host:
            raise PermissionDenied(f"{url!r} has no host to check against [security] hosts")
        for pattern in self.blocked:
            if _covers(pattern, host):
                raise PermissionDenied(
                    f"{host} is blocked by [security] blocked_hosts ({pattern!r}); "
                    "web calls may not reach it"
                )
        if self.allowed is not None and not any(_covers(p, host) for p in self.allowed):
            listed = ", ".join(self.allowed) or "(none)"
            raise PermissionDenied(
                f"{host} is not in [security] allowed_hosts ({listed}); add it there to let "
                "web calls reach it"
            )
