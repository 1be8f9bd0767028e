"""Which addresses a crawl may connect to: the guard that keeps a crawl started by a network caller (an MCP agent, a
web page's form) off loopback, private and link-local addresses (server-side request forgery).

A crawl started from the network (``index_library``, or any run of a version it declared) runs with
``-a network=public``. Such a crawl connects only to *global* addresses (:attr:`ipaddress.IPv4Address.is_global`:
not loopback ``127.0.0.0/8``/``::1``, private ``10/8``, ``172.16/12``, ``192.168/16``, ``fc00::/7``, link-local
``169.254/16`` (cloud metadata services) and ``fe80::/10``, shared ``100.64/10``, documentation, benchmarking and
reserved ranges; nor multicast or unspecified addresses), unless the operator allowed more with
``DOCSBOT_ALLOWED_NETWORKS`` (networks in CIDR notation and host names, comma- or space-separated; ``*`` allows
every address, which is what ``docsbot serve --allow-private-networks`` passes to the crawls it starts).

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
    "parse_allowed",
    "restrict",
]

logger = logging.getLogger(__name__)

NETWORK_MODES = ("any", "public")  # the ``network`` spider argument

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(DocsbotError, ValueError):
    """A host resolves only to addresses the crawl's network policy refuses (or does not resolve at all)."""


def _kind(address: IPAddress) -> str:
    """What kind of non-public address ``address`` is, in words (for error messages)."""
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_private:
        return "a private address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "the unspecified address"
    return "a reserved address"


def _unmapped(address: IPAddress) -> IPAddress:
    """An IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) as the IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


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
            ip = _unmapped(ipaddress.ip_address(address.split("%", 1)[0]))
        except ValueError:
            return f"{address!r} is not an IP address"
        if any(ip in network for network in self.networks):
            return None
        if ip.is_global and not ip.is_multicast:
            return None
        return f"{ip} is {_kind(ip)}"

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
