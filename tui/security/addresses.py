"""What address a URL host means, in every spelling the C library, curl and browsers accept.

A host rule on strings is passed by ``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``,
``127.0.0.1.``, ``[::ffff:127.0.0.1]`` or the same in full-width digits: each of them connects to
127.0.0.1. So hosts are normalised the way a resolver sees them (UTS 46 mapping, lower case, no
trailing dot), IPv4 is read with ``inet_aton``'s rules (one to four parts, each decimal, ``0x``
hex or ``0`` octal, the last part filling the remaining bytes), and an IPv6 address that carries
an IPv4 one (mapped, compatible, NAT64, 6to4) also means that IPv4 address.
"""

from __future__ import annotations

import re
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_network,
)
from urllib.parse import unquote

import idna

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

_HEX = re.compile(r"[0-9a-f]*")
_OCT = re.compile(r"[0-7]+")
_DEC = re.compile(r"[0-9]+")
_MAPPED = IPv6Network("::ffff:0:0/96")
_COMPATIBLE = IPv6Network("::/96")
_NAT64 = IPv6Network("64:ff9b::/96")
_LOOPBACK4 = IPv4Address("127.0.0.1")
_LOOPBACK6 = IPv6Address("::1")


def normalise_host(host: str) -> str:
    """``host`` as a resolver sees it: UTS 46 mapped, lower case, no brackets, percent escapes
    or trailing dot.

    The mapping turns full-width digits and ideographic full stops into ASCII ones, so
    127.0.0.1 written with them is read as the address it connects to. Non-ASCII names become their
    ``xn--`` form, the form rules and DNS compare.
    """
    text = unquote(host.strip()).strip("[]")  # browsers decode %2e in a host: so do we
    if not text.isascii():
        try:
            text = idna.uts46_remap(text, std3_rules=False, transitional=False)
        except idna.IDNAError:
            pass
    text = text.lower().rstrip(".")
    if not text.isascii():
        try:
            text = idna.encode(text, uts46=True).decode("ascii")
        except idna.IDNAError:
            pass
    return text


def _ipv4_part(text: str) -> int | None:
    lowered = text.lower()
    if lowered.startswith("0x"):
        digits = lowered[2:]
        return int(digits, 16) if digits and _HEX.fullmatch(digits) else None
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8) if _OCT.fullmatch(text) else None
    return int(text) if _DEC.fullmatch(text) else None


def parse_ipv4(text: str) -> IPv4Address | None:
    """``inet_aton``'s reading of ``text`` (``127.1``, ``2130706433``, ``0x7f.0.0.1``), or None."""
    parts = text.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # one trailing dot, as browsers accept
    if not 1 <= len(parts) <= 4:
        return None
    values = [_ipv4_part(part) for part in parts]
    if any(value is None for value in values):
        return None
    numbers = [value for value in values if value is not None]
    *leading, last = numbers
    if any(value > 255 for value in leading) or last >= 256 ** (5 - len(numbers)):
        return None
    total = last
    for index, value in enumerate(leading):
        total += value << (8 * (3 - index))
    return IPv4Address(total)


def parse_address(host: str) -> Address | None:
    """The IP address a URL host spells, in any accepted spelling, or None for a name."""
    text = normalise_host(host)
    if ":" in text:
        try:
            return IPv6Address(text)
        except ValueError:
            return None
    return parse_ipv4(text)


def parse_network(text: str) -> Network | None:
    """``10.0.0.0/8`` or ``fd00::/8`` (the address part in any spelling), or None."""
    address_text, slash, prefix = normalise_host(text).partition("/")
    if not slash or not _DEC.fullmatch(prefix):
        return None
    address = parse_address(address_text)
    if address is None:
        return None
    try:
        network = ip_network(f"{address}/{int(prefix)}", strict=False)
    except ValueError:
        return None
    if isinstance(network, IPv6Network) and network.subnet_of(_MAPPED) and network.prefixlen >= 96:
        # ::ffff:127.0.0.0/104 is 127.0.0.0/8 spelled in IPv6: keep the meaning, not the form.
        return IPv4Network((int(network.network_address) & 0xFFFFFFFF, network.prefixlen - 96))
    return network


def meanings(address: Address) -> tuple[Address, ...]:
    """``address`` and every address a connection to it also reaches.

    An IPv4-mapped or -compatible IPv6 address, a NAT64 (``64:ff9b::/96``) or 6to4 one carries
    an IPv4 address; the unspecified address (``0.0.0.0``, ``::``) connects to this host.
    """
    found: list[Address] = [address]
    if isinstance(address, IPv6Address):
        embedded: IPv4Address | None = address.ipv4_mapped or address.sixtofour
        carries = address in _NAT64 or address in _COMPATIBLE
        if embedded is None and carries and address not in (IPv6Address("::"), _LOOPBACK6):
            embedded = IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            found.append(embedded)
        if address.is_unspecified:
            found.append(_LOOPBACK6)
            found.append(_LOOPBACK4)
    if any(isinstance(a, IPv4Address) and a.is_unspecified for a in found):
        found.append(_LOOPBACK4)
    return tuple(dict.fromkeys(found))


def canonical(address: Address) -> Address:
    """The IPv4 address an IPv4-mapped or -compatible IPv6 address spells, else ``address``."""
    if isinstance(address, IPv6Address) and not address.is_unspecified and address != _LOOPBACK6:
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in _COMPATIBLE:
            return IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def network_covers(network: Network, address: Address) -> bool:
    """Whether any meaning of ``address`` lies in ``network``."""
    return any(a.version == network.version and a in network for a in meanings(address))
