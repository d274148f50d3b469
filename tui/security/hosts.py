"""Which addresses web calls may reach: ``[security] allowed_hosts`` and ``blocked_hosts``.

An entry is a name (``example.com`` covers itself and its subdomains), an IP address in any
spelling, or a network (``10.0.0.0/8``, ``fd00::/8``). Rules compare *addresses*: a URL's
host is read the way the resolver reads it (``2130706433`` is 127.0.0.1), a name is resolved,
and every address it resolves to is judged. The judgment that counts is made where the
connection is opened (``tui/tools/netguard.py``), on the addresses actually dialled, so DNS
rebinding cannot pass a check and then connect elsewhere; ``check`` only refuses early what
the URL alone already shows.

Link-local and cloud metadata addresses are refused even with no configuration: a web call
that reaches ``169.254.169.254`` can read the machine's cloud credentials. Loopback and private
ranges stay reachable (people run local services) unless ``blocked_hosts`` lists them.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from ipaddress import IPv4Network, IPv6Network, ip_address
from urllib.parse import urlsplit

from tui.errors import PermissionDenied
from tui.security.addresses import (
    Address,
    Network,
    canonical,
    meanings,
    network_covers,
    normalise_host,
    parse_address,
    parse_network,
)

Resolver = Callable[[str, int], Awaitable[list[Address]]]
"""Resolves a name and port to addresses, in the resolver's order (raises OSError)."""


async def system_resolve(name: str, port: int) -> list[Address]:
    """The system resolver's addresses for ``name``, in its order (raises OSError)."""
    infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
    found: list[Address] = []
    for family, _, _, _, sockaddr in infos:
        host = str(sockaddr[0])
        if family == socket.AF_INET6 and len(sockaddr) > 3 and sockaddr[3]:
            host = f"{host.partition('%')[0]}%{sockaddr[3]}"
        found.append(ip_address(host))
    return list(dict.fromkeys(found))


BLOCKED_NAME_TTL = 30.0
"""Seconds a blocked name's addresses are remembered before it is resolved again."""
BLOCKED_NAME_TIMEOUT = 5.0

_LOOPBACK: tuple[Network, ...] = (IPv4Network("127.0.0.0/8"), IPv6Network("::1/128"))


@dataclass(frozen=True)
class DefaultRefusal:
    """A place refused with no configuration, and what it is (for the message)."""

    network: Network
    what: str


DEFAULT_REFUSED: tuple[DefaultRefusal, ...] = (
    DefaultRefusal(IPv4Network("169.254.169.254/32"), "the cloud metadata service"),
    DefaultRefusal(IPv6Network("fd00:ec2::254/128"), "the cloud metadata service (AWS, IPv6)"),
    DefaultRefusal(IPv4Network("100.100.100.200/32"), "the cloud metadata service (Alibaba)"),
    DefaultRefusal(IPv4Network("169.254.0.0/16"), "a link-local address"),
    DefaultRefusal(IPv6Network("fe80::/10"), "a link-local address"),
)
DEFAULT_REFUSED_NAMES: dict[str, str] = {
    "metadata.google.internal": "the cloud metadata service (Google Cloud)",
}


@dataclass(frozen=True)
class HostEntry:
    """One ``allowed_hosts`` / ``blocked_hosts`` entry, as written and as understood."""

    written: str
    name: str | None = None
    """A normalised name covering itself and its subdomains; ``*`` covers every host."""
    network: Network | None = None
    """An address (a one-address network) or a network."""

    @classmethod
    def parse(cls, text: str) -> HostEntry:
        """Raises ValueError for an empty entry or a malformed network."""
        normal = normalise_host(text).removeprefix("*.")
        if not normal:
            raise ValueError(f"empty host entry {text!r}")
        if "/" in normal:
            network = parse_network(normal)
            if network is None:
                raise ValueError(f"{text!r} is not a network (write it like 10.0.0.0/8)")
            return cls(text, network=network)
        address = parse_address(normal)
        if address is not None:
            # ::ffff:127.0.0.1 as an entry means 127.0.0.1: keep the meaning, not the form.
            return cls(text, network=_one(canonical(address)))
        return cls(text, name=normal)

    def covers_name(self, name: str) -> bool:
        if self.name is None:
            return False
        return self.name == "*" or name == self.name or name.endswith("." + self.name)

    def covers_address(self, address: Address) -> bool:
        """Whether any meaning of ``address`` lies in this entry."""
        if self.name == "*":
            return True
        return self.network is not None and network_covers(self.network, address)

    def covers_exactly(self, address: Address) -> bool:
        """Whether ``address`` itself (not what it carries) lies in this entry."""
        if self.name == "*":
            return True
        network = self.network
        return network is not None and network.version == address.version and address in network


def _one(address: Address) -> Network:
    return IPv4Network(address) if address.version == 4 else IPv6Network(address)


def _is_localhost(name: str) -> bool:
    return name == "localhost" or name.endswith(".localhost")


def _listed(entries: tuple[HostEntry, ...]) -> str:
    return ", ".join(repr(e.written) for e in entries) or "(none)"


@dataclass(frozen=True)
class _Where:
    """How the host was given, for messages: ``spelling`` and what the resolver made of it."""

    spelling: str
    resolved: bool

    def say(self, address: Address, meaning: Address) -> str:
        also = f", which means {meaning}" if meaning != address else ""
        if self.resolved:
            return f"host {self.spelling!r} (resolves to {address}{also})"
        if normalise_host(self.spelling) == str(address) and not also:
            return f"host {address}"
        return f"host {self.spelling!r} (the address {address}{also})"


@dataclass
class HostPolicy:
    allowed: tuple[HostEntry, ...] | None
    """None: any host not refused."""
    blocked: tuple[HostEntry, ...] = ()
    _blocked_seen: dict[str, tuple[float, tuple[Network, ...]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def from_lists(cls, allowed: list[str] | None, blocked: list[str]) -> HostPolicy:
        """Raises ValueError for an entry that cannot be understood (never ignored)."""

        def parse(entries: list[str]) -> tuple[HostEntry, ...]:
            return tuple(HostEntry.parse(h) for h in entries if h.strip())

        return cls(parse(allowed) if allowed is not None else None, parse(blocked))

    # -- the early check: what the URL alone shows ------------------------------------------

    def check(self, url: str) -> None:
        """Refuse ``url`` if its host alone is refused (raises PermissionDenied).

        No DNS here: a name is judged again, on its addresses, when the connection is made.
        """
        spelling = urlsplit(url).hostname or ""
        if not normalise_host(spelling):
            raise PermissionDenied(f"{url!r} has no host to check against [security] hosts")
        address = parse_address(spelling)
        if address is not None:
            # No DNS here, but ``localhost`` means loopback without asking any resolver.
            self.judge_address(_Where(spelling, resolved=False), address, self._loopback_names())
            if not self._allows_address(address):
                raise self._not_allowed(_Where(spelling, resolved=False).say(address, address))
            return
        name = normalise_host(spelling)
        self.judge_name(spelling, name)
        only_names = self.allowed is not None and all(e.network is None for e in self.allowed)
        if only_names and not self._allows_name(name):
            raise self._not_allowed(f"host {spelling!r}")

    # -- the connect-time judgment ----------------------------------------------------------

    async def permitted(self, host: str, port: int, resolve: Resolver) -> list[Address]:
        """The addresses a connection to ``host`` may dial, in the resolver's order.

        A literal address is used as it is; a name is resolved once, here, and the caller must
        connect only to what this returns. Raises PermissionDenied when any address is
        refused (a name that also resolves somewhere blocked is not trusted at all) or none is
        allowed; OSError when the name does not resolve.
        """
        address = parse_address(host)
        name = normalise_host(host)
        where = _Where(host, resolved=address is None)
        if address is not None:
            addresses = [address]
        else:
            self.judge_name(host, name)
            addresses = list(dict.fromkeys(await resolve(name, port)))
        blocked_by_name = await self._blocked_name_networks(resolve)
        name_allowed = address is None and self._allows_name(name)
        usable: list[Address] = []
        for candidate in addresses:
            self.judge_address(where, candidate, blocked_by_name)
            if name_allowed or self._allows_address(candidate):
                usable.append(candidate)
        if not usable:
            if address is not None:
                raise self._not_allowed(where.say(address, address))
            shown = ", ".join(str(a) for a in addresses)
            raise self._not_allowed(f"host {host!r} (resolves to {shown})")
        return usable

    def judge_name(self, spelling: str, name: str) -> None:
        """Refuse a name ``blocked_hosts`` or the defaults name (raises PermissionDenied)."""
        for entry in self.blocked:
            if entry.covers_name(name):
                raise PermissionDenied(
                    f"host {spelling!r} is refused by [security] blocked_hosts "
                    f"({entry.written!r}); web calls may not reach it"
                )
        what = DEFAULT_REFUSED_NAMES.get(name)
        if what and not any(e.name == name for e in self.allowed or ()):
            raise PermissionDenied(
                f"host {spelling!r} is {what}, refused by default: a web call there could read "
                f"the machine's cloud credentials. To allow it, add {name!r} to "
                "[security] allowed_hosts"
            )

    def judge_address(
        self, where: _Where, address: Address, blocked_by_name: list[tuple[Network, HostEntry]]
    ) -> None:
        """Refuse ``address`` if blocked or refused by default (raises PermissionDenied)."""
        for meaning in meanings(address):
            for entry in self.blocked:
                if entry.covers_exactly(meaning):
                    raise PermissionDenied(
                        f"{where.say(address, meaning)} is refused by [security] blocked_hosts "
                        f"({entry.written!r}); web calls may not reach it"
                    )
            for network, named in blocked_by_name:
                if network.version == meaning.version and meaning in network:
                    raise PermissionDenied(
                        f"{where.say(address, meaning)} is refused by [security] blocked_hosts "
                        f"({named.written!r}, which means {network}); web calls may not reach it"
                    )
            for refusal in DEFAULT_REFUSED:
                if refusal.network.version != meaning.version or meaning not in refusal.network:
                    continue
                if self._lifts(refusal.network, meaning):
                    continue
                raise PermissionDenied(
                    f"{where.say(address, meaning)} is {refusal.what}, refused by default: a web "
                    f"call there could read the machine's cloud credentials. To allow it, add "
                    f"'{meaning}' to [security] allowed_hosts"
                )

    # -- parts ------------------------------------------------------------------------------

    def _lifts(self, refused: Network, meaning: Address) -> bool:
        """An allowed entry naming this place itself (not ``*``, not a wider network)."""
        for entry in self.allowed or ():
            network = entry.network
            if (
                network is not None
                and network.version == refused.version
                and meaning in network
                and network.subnet_of(refused)  # type: ignore[arg-type]
            ):
                return True
        return False

    def _allows_name(self, name: str) -> bool:
        return self.allowed is None or any(e.covers_name(name) for e in self.allowed)

    def _allows_address(self, address: Address) -> bool:
        return self.allowed is None or any(e.covers_address(address) for e in self.allowed)

    def _not_allowed(self, said: str) -> PermissionDenied:
        assert self.allowed is not None
        return PermissionDenied(
            f"{said} is not in [security] allowed_hosts ({_listed(self.allowed)}); add it "
            "there to let web calls reach it"
        )

    def _loopback_names(self) -> list[tuple[Network, HostEntry]]:
        return [
            (network, entry)
            for entry in self.blocked
            if entry.name is not None and _is_localhost(entry.name)
            for network in _LOOPBACK
        ]

    async def _blocked_name_networks(self, resolve: Resolver) -> list[tuple[Network, HostEntry]]:
        """Where every blocked *name* points: ``localhost`` blocks 127.0.0.1 in any spelling."""
        names = [e for e in self.blocked if e.name is not None and e.name != "*"]
        if not names:
            return []
        lookups = (self._resolve_blocked(e.name or "", resolve) for e in names)
        results = await asyncio.gather(*lookups)
        return [
            (network, entry)
            for entry, networks in zip(names, results, strict=True)
            for network in networks
        ]

    async def _resolve_blocked(self, name: str, resolve: Resolver) -> tuple[Network, ...]:
        now = time.monotonic()
        seen = self._blocked_seen.get(name)
        if seen is not None and now - seen[0] < BLOCKED_NAME_TTL:
            return seen[1]
        networks: list[Network] = []
        if _is_localhost(name):
            # RFC 6761: localhost is loopback whatever a resolver says; curl and browsers agree.
            networks += _LOOPBACK
        try:
            async with asyncio.timeout(BLOCKED_NAME_TIMEOUT):
                networks += [_one(a) for a in await resolve(name, 0)]
        except (OSError, TimeoutError):
            pass  # a name that does not resolve points nowhere to block
        found = tuple(dict.fromkeys(networks))
        self._blocked_seen[name] = (now, found)
        return found
