"""Scrapy's DNS resolver with docsbot's network policy (:mod:`docsbot.network`): ``TWISTED_DNS_RESOLVER``.

Scrapy builds the resolver once per process, from the project settings, and installs it on the reactor before the
first request (``CrawlerProcess._setup_reactor``): every connection the crawl makes (Scrapy's HTTP/1.1 handler
connects through Twisted's ``HostnameEndpoint``, which resolves through ``reactor.nameResolver``, IP literals
included) asks it for addresses. :class:`GuardedResolver` answers with Scrapy's ``CachingHostnameResolver`` (IPv4
and IPv6, cached), minus every address the process's :func:`docsbot.network.active_policy` refuses. A name left
with none fails its request as a DNS lookup error, after one warning line naming the host and why. Without a
policy (a crawl its operator started) it answers exactly as Scrapy's resolver does.

A proxy (``HTTP_PROXY``, ``meta["proxy"]``) is resolved instead of the target: behind one, the proxy's own egress
rules decide.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingHostnameResolver
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from zope.interface import implementer

from docsbot.network import active_policy

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler

    from docsbot.network import NetworkPolicy

__all__ = ["GuardedResolver"]

logger = logging.getLogger(__name__)
_warned: set[str] = set()  # hosts already said to be refused (once per process: retries resolve again)


@implementer(IResolutionReceiver)
class _PolicyFilter:
    """Passes on the addresses ``policy`` allows; says once why a host was left with none."""

    def __init__(self, receiver: Any, policy: NetworkPolicy, host: str) -> None:
        self.receiver = receiver
        self.policy = policy
        self.host = host
        self.refused: list[str] = []
        self.passed = 0

    def resolutionBegan(self, resolution: Any) -> None:  # noqa: N802 - Twisted's interface
        self.receiver.resolutionBegan(resolution)

    def addressResolved(self, address: Any) -> None:  # noqa: N802
        reason = self.policy.refusal(str(getattr(address, "host", "")), self.host)
        if reason is None:
            self.passed += 1
            self.receiver.addressResolved(address)
        else:
            self.refused.append(reason)

    def resolutionComplete(self) -> None:  # noqa: N802
        if self.refused and not self.passed and self.host not in _warned:
            _warned.add(self.host)
            logger.warning(
                "not connecting to %s: %s; a crawl started from the network reaches only public addresses "
                "(DOCSBOT_ALLOWED_NETWORKS allows more)",
                self.host,
                self.refused[0],
            )
        self.receiver.resolutionComplete()


@implementer(IHostnameResolver)
class GuardedResolver:
    """``TWISTED_DNS_RESOLVER``: Scrapy's ``CachingHostnameResolver`` filtered by the process's network policy."""

    def __init__(self, reactor: Any, inner: Any) -> None:
        self.reactor = reactor
        self.inner = inner

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: Any) -> GuardedResolver:
        return cls(reactor, CachingHostnameResolver.from_crawler(crawler, reactor))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    def resolveHostName(  # noqa: N802 - Twisted's interface
        self,
        resolutionReceiver: Any,  # noqa: N803
        hostName: str,  # noqa: N803
        portNumber: int = 0,  # noqa: N803
        addressTypes: Sequence[type] | None = None,  # noqa: N803
        transportSemantics: str = "TCP",  # noqa: N803
    ) -> Any:
        policy = active_policy()
        receiver = resolutionReceiver if policy is None else _PolicyFilter(resolutionReceiver, policy, hostName)
        self.inner.resolveHostName(receiver, hostName, portNumber, addressTypes, transportSemantics)
        return resolutionReceiver
