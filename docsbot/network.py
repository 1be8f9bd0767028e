"""Which addresses a crawl may connect to: the guard that keeps a crawl started by a network caller (an MCP agent, a
web page's form) off loopback, private and link-local addresses (server-side request forgery).

A crawl started from the network (``index_library``, or any run of a version it declared) runs with
``-a network=public``. Such a crawl connects only to *globally reachable* addresses (:func:`non_global`), unless the
operator allowed more with ``DOCSBOT_ALLOWED_NETWORKS`` (networks in CIDR notation and host names, comma- or
space-separated; ``*`` allows every address, which is what ``docsbot serve --allow-private-networks`` passes to the
crawls it starts).

What is globally reachable is decided from two maintained lists, and an address either refuses is refused:

- IANA's special-purpose address registries (``iana-ipv4-special-registry``, ``iana-ipv6-special-registry``; RFC
  6890): every block whose "Globally Reachable" is False, less the globally reachable blocks inside them (the
  tables below, each line with its RFC); and for IPv6 IANA's address-space registry
  (``ipv6-address-space``): only ``2000::/3`` is global unicast, so every other range (``::/8``, unique-local
  ``fc00::/7``, link-local ``fe80::/10``, the deprecated site-local ``fec0::/10`` of RFC 3879, multicast ``ff00::/8``,
  the space the IETF keeps in reserve) is refused, whatever later registrations say of it;
- Python's :mod:`ipaddress` (``is_global``, ``is_multicast``), whose tables follow the same registries and are
  kept with each Python release.

Before it is decided, an IPv6 address that carries an IPv4 address is read as that address (RFC 6052 §2, RFC 4291
§2.5.5, RFC 3056, RFC 4380): IPv4-mapped ``::ffff:a.b.c.d`` and the NAT64 well-known prefix ``64:ff9b::/96`` are
allowed exactly when the IPv4 address is (the connection ends there); 6to4 ``2002:AABB:CCDD::/48`` when the IPv4
address it names is; Teredo ``2001::/32`` when both the server and the client address it carries are. The
deprecated IPv4-compatible ``::a.b.c.d`` and the local-use NAT64 prefix ``64:ff9b:1::/48`` (RFC 8215: not globally
reachable, its IPv4 address placed by each operator's prefix length) are refused whatever they carry.

The check is made on the resolved address, where the connection is made: :class:`docsbot.resolver.GuardedResolver`
is Scrapy's ``TWISTED_DNS_RESOLVER`` (docsbot's settings), a Twisted ``IHostnameResolver`` that drops every address
the process's :class:`NetworkPolicy` refuses from each name resolution. Every connection of a crawl goes through
it: pages, redirect hops, robots.txt, sitemaps, llms.txt; a name that resolves to a public address at one lookup
and to a private one at the next (DNS rebinding) is refused at the second. The service checks a root URL the same way
before it starts a crawl (:func:`check_url`), to answer the caller with a clear error.

Pure, over the standard library (no Scrapy, no Twisted: the service imports it).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from docsbot.errors import DocsbotError

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "NETWORK_MODES",
    "BlockedAddress",
    "NetworkPolicy",
    "active_policy",
    "check_url",
    "embedded_ipv4",
    "non_global",
    "parse_allowed",
    "restrict",
]

logger = logging.getLogger(__name__)

NETWORK_MODES = ("any", "public")  # the ``network`` spider argument

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(DocsbotError, ValueError):
    """A host resolves only to addresses the crawl's network policy refuses (or does not resolve at all)."""


def _networks(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


# IANA IPv4 Special-Purpose Address Registry: the blocks not globally reachable. 192.88.99.0/24, the deprecated 6to4
# relay anycast (RFC 7526; "N/A"), is refused too: nothing answers a crawl there any more.
_IPV4_NOT_GLOBAL = _networks(
    "0.0.0.0/8",  # "this network" (RFC 791)
    "10.0.0.0/8",  # private-use (RFC 1918)
    "100.64.0.0/10",  # shared address space, carrier-grade NAT (RFC 6598)
    "127.0.0.0/8",  # loopback (RFC 1122)
    "169.254.0.0/16",  # link-local (RFC 3927): cloud metadata services
    "172.16.0.0/12",  # private-use (RFC 1918)
    "192.0.0.0/24",  # IETF protocol assignments (RFC 6890), NAT64/DNS64 discovery 192.0.0.170/31 (RFC 8880) in it
    "192.0.2.0/24",  # documentation, TEST-NET-1 (RFC 5737)
    "192.88.99.0/24",  # deprecated 6to4 relay anycast (RFC 7526)
    "192.168.0.0/16",  # private-use (RFC 1918)
    "198.18.0.0/15",  # benchmarking (RFC 2544)
    "198.51.100.0/24",  # documentation, TEST-NET-2 (RFC 5737)
    "203.0.113.0/24",  # documentation, TEST-NET-3 (RFC 5737)
    "240.0.0.0/4",  # reserved (RFC 1112), 255.255.255.255 limited broadcast (RFC 919) in it
)
# The globally reachable blocks inside those: port control protocol and TURN anycast (RFC 7723, RFC 8155).
_IPV4_GLOBAL_INSIDE = _networks("192.0.0.9/32", "192.0.0.10/32")

# IANA IPv6 Address Space: global unicast; everything else is reserved, local, or multicast.
_IPV6_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
# IANA IPv6 Special-Purpose Address Registry: the blocks not globally reachable inside 2000::/3 (those outside it,
# ::1, ::/128, ::ffff:0:0/96, 64:ff9b:1::/48, 100::/64, 5f00::/16 (SRv6 SIDs, RFC 9602), fc00::/7, fe80::/10,
# are refused as outside it).
_IPV6_NOT_GLOBAL = _networks(
    "2001::/23",  # IETF protocol assignments (RFC 2928); Teredo 2001::/32 is read as its IPv4 addresses first
    "2001:db8::/32",  # documentation (RFC 3849)
    "3fff::/20",  # documentation (RFC 9637)
)
# The globally reachable blocks inside 2001::/23: PCP, TURN and DNS-SD SRP anycast (RFC 7723, RFC 8155, RFC 9665),
# AMT (RFC 7450), AS112-v6 (RFC 7535), ORCHIDv2 (RFC 7343), drone remote ID tags (RFC 9374).
_IPV6_GLOBAL_INSIDE = _networks(
    "2001:1::1/128", "2001:1::2/128", "2001:1::3/128", "2001:3::/32", "2001:4:112::/48", "2001:20::/28", "2001:30::/28"
)  # fmt: skip
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # RFC 4291 §2.5.5.1, deprecated; :: and ::1 are in it
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 §2.1
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")  # RFC 3056
_TEREDO = ipaddress.ip_network("2001::/32")  # RFC 4380


def _kind(address: IPAddress) -> str:
    """What kind of non-public address ``address`` is, in words (for error messages)."""
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address (deprecated, RFC 3879)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_private:
        return "a private address"
    return "a reserved address"


def _global(address: IPAddress) -> bool:
    """Whether ``address`` (not one carrying an IPv4 address) is globally reachable by both lists (module doc)."""
    if not address.is_global or address.is_multicast:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        table, inside = _IPV4_NOT_GLOBAL, _IPV4_GLOBAL_INSIDE
    elif address not in _IPV6_GLOBAL_UNICAST:
        return False
    else:
        table, inside = _IPV6_NOT_GLOBAL, _IPV6_GLOBAL_INSIDE
    return not any(address in n for n in table) or any(address in n for n in inside)


def embedded_ipv4(address: IPAddress) -> tuple[str, tuple[ipaddress.IPv4Address, ...]] | None:
    """The IPv4 addresses an IPv6 ``address`` carries, and the form's name: ``("IPv4-mapped", (a,))``, ``NAT64``
    (``64:ff9b::/96``), ``local-use NAT64`` (``64:ff9b:1::/48``, read with a /96 prefix), ``6to4``, ``Teredo`` (its
    server, then its client), ``IPv4-compatible``; ``None`` for any other address."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped is not None:
        return "IPv4-mapped", (address.ipv4_mapped,)
    if address in _NAT64_WELL_KNOWN:
        return "NAT64", (low32,)
    if address in _NAT64_LOCAL:
        return "local-use NAT64", (low32,)
    if address.sixtofour is not None:
        return "6to4", (address.sixtofour,)
    if address.teredo is not None:
        return "Teredo", address.teredo
    if address in _IPV4_COMPATIBLE and int(address) > 1:
        return "IPv4-compatible", (low32,)
    return None


def non_global(address: IPAddress) -> str | None:
    """Why ``address`` is not a globally reachable address, in words (``"a link-local address"``, ``"a NAT64 address
    of 169.254.169.254, a link-local address"``), or ``None`` when it is one. An IPv6 address carrying an IPv4
    address is decided by that address, or refused by its form (module doc)."""
    carried = embedded_ipv4(address)
    if carried is None:
        return None if _global(address) else _kind(address)
    form, ipv4s = carried
    article = "an" if form[0] in "AEIOU" else "a"
    for ipv4 in ipv4s:
        if not _global(ipv4):
            return f"{article} {form} address of {ipv4}, {_kind(ipv4)}"
    return _UNROUTED.get(form)


# The forms refused whatever they carry; the others are decided by their IPv4 addresses.
_UNROUTED = {
    "local-use NAT64": "a local-use NAT64 address (RFC 8215: never globally reachable)",
    "IPv4-compatible": "an IPv4-compatible address (deprecated by RFC 4291, not routed)",
}


def parse_allowed(value: str | Iterable[str] | None) -> tuple[bool, tuple[IPNetwork, ...], frozenset[str]]:
    """``DOCSBOT_ALLOWED_NETWORKS`` as ``(everything, networks, host names)``: ``*`` allows every address; a CIDR
    network or a single address (``10.0.0.0/8``, ``127.0.0.1``, ``fd00::/8``) allows the addresses in it; anything
    else is a host name (``docs.internal``, lower-cased) allowed whatever it resolves to. Raises ``ValueError`` for
    an entry that is neither."""
    if value is None:
        return False, (), frozenset()
    items = value.replace(",", " ").split() if isinstance(value, str) else [v.strip() for v in value]
    everything = False
    networks: list[IPNetwork] = []
    hosts: set[str] = set()
    for item in filter(None, items):
        if item == "*":
            everything = True
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
            continue
        except ValueError:
            pass
        host = item.lower().rstrip(".")
        if not host or any(c in host for c in "/:@ ") or host.startswith("-"):
            raise ValueError(f"DOCSBOT_ALLOWED_NETWORKS: {item!r} is neither a network (10.0.0.0/8) nor a host name")
        hosts.add(host)
    return everything, tuple(networks), frozenset(hosts)


@dataclass(frozen=True)
class NetworkPolicy:
    """What a crawl may connect to: global addresses, plus ``networks`` and the names in ``hosts``;
    ``everything`` lifts the rule."""

    everything: bool = False
    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def public(cls, allowed: str | Iterable[str] | None = None) -> NetworkPolicy:
        """Public addresses and what ``allowed`` (``DOCSBOT_ALLOWED_NETWORKS``, see :func:`parse_allowed`) adds.
        Raises ``ValueError`` for a malformed entry."""
        everything, networks, hosts = parse_allowed(allowed)
        return cls(everything, networks, hosts)

    def refusal(self, address: str, host: str | None = None) -> str | None:
        """Why a connection to ``address`` (an IP address in text, resolved from ``host``) is refused, or ``None``
        when it is allowed."""
        if self.everything or (host is not None and host.lower().rstrip(".") in self.hosts):
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"{address!r} is not an IP address"
        carried = embedded_ipv4(ip)
        candidates = (ip, *carried[1]) if carried is not None and carried[0] == "IPv4-mapped" else (ip,)
        if any(candidate in network for candidate in candidates for network in self.networks):
            return None
        reason = non_global(ip)
        if reason is None:
            return None
        if carried is not None and carried[0] == "IPv4-mapped":  # the connection is to the IPv4 address
            return f"{carried[1][0]} is {_kind(carried[1][0])}"
        return f"{ip} is {reason}"

    def check_host(self, host: str, port: int | None = None) -> list[str]:
        """The addresses ``host`` resolves to (``getaddrinfo``), all of them allowed. Raises
        :class:`BlockedAddress` naming the first refused address, or when the name does not resolve. A check made
        before a crawl starts; the crawl checks again at every connection (:class:`GuardedResolver`)."""
        if self.everything or host.lower().rstrip(".") in self.hosts:
            return []
        try:
            infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise BlockedAddress(f"{host} does not resolve ({exc})") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            reason = self.refusal(address, host)
            if reason is not None:
                shown = host if host == address else f"{host} resolves to {address}, which"
                raise BlockedAddress(
                    f"{shown} is not a public address ({reason.split(' is ', 1)[1]}): a crawl started from the "
                    "network reaches only public addresses unless the server allows more "
                    "(DOCSBOT_ALLOWED_NETWORKS, --allow-network, --allow-private-networks)"
                )
        return addresses


def check_url(url: str, policy: NetworkPolicy) -> None:
    """Raise :class:`BlockedAddress` unless ``url``'s host resolves only to addresses ``policy`` allows."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise BlockedAddress(f"{url!r} has no host")
    policy.check_host(parts.hostname, parts.port)


# --- the process's policy, for the resolver -------------------------------------------------------------------------

_policy: NetworkPolicy | None = None


def restrict(policy: NetworkPolicy | None) -> None:
    """Make ``policy`` this process's (``None``: no restriction). A ``scrapy crawl`` process runs one crawl;
    :class:`docsbot.extensions.run.IndexRun` calls this during its setup, before any request."""
    global _policy
    _policy = policy


def active_policy() -> NetworkPolicy | None:
    return _policy
