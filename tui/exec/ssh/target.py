"""Where an SSH backend connects: the ``[user@]host[:port]`` a person typed, parsed once.

Kept apart from the connection because the target is plain data: the command line, the
settings and the approval prompt all read it, and none of them needs asyncssh for that.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PORT = 22


@dataclass(frozen=True)
class SSHTarget:
    """Where to connect: ``[user@]host[:port]``, an ``ssh://`` URL or an ssh config alias."""

    host: str
    user: str | None = None
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> SSHTarget:
        """Accepts ``host``, ``user@host``, ``user@host:2222``, ``[::1]:2222``, ``ssh://…``.

        Raises:
            ValueError: the text is not a target.
        """
        raw = text.strip()
        if raw.startswith("ssh://"):
            raw = raw[len("ssh://") :].rstrip("/")
        user: str | None = None
        if "@" in raw:
            user, raw = raw.rsplit("@", 1)
            if not user:
                raise ValueError(f"empty user name in SSH target {text!r}")
        host, port = _split_host_port(raw, text)
        if not host or any(ch.isspace() for ch in host):
            raise ValueError(f"not an SSH target: {text!r} (expected user@host[:port])")
        return cls(host=host, user=user, port=port)

    @property
    def short(self) -> str:
        """``user@host`` (or the alias): what a person recognises in an approval prompt."""
        return f"{self.user}@{self.host}" if self.user else self.host

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.user + '@' if self.user else ''}{host}{port}"


def _split_host_port(raw: str, text: str) -> tuple[str, int | None]:
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
        if rest and not rest.startswith(":"):
            raise ValueError(f"not an SSH target: {text!r}")
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
    else:
        host, port_text = raw, ""  # a bare IPv6 address has several colons and no port
    if not port_text:
        return host, None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"bad port {port_text!r} in SSH target {text!r}")
    return host, int(port_text)


__all__ = ["DEFAULT_PORT", "SSHTarget"]
