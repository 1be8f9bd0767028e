"""The address guard (docsbot.network), case by case: every IPv6 form that carries an IPv4 address is read as that
address (the metadata address 169.254.169.254 behind each is refused, a public one allowed where the form is
routed), and every range the special-purpose registries call not globally reachable is refused."""

from __future__ import annotations

import ipaddress

import pytest

from docsbot.network import BlockedAddress, NetworkPolicy, check_url, embedded_ipv4

PUBLIC = NetworkPolicy.public()
METADATA = "169.254.169.254"  # cloud metadata services
PUBLIC_V4 = "8.8.8.8"


def _nat64(ipv4: str, prefix: str = "64:ff9b::") -> str:
    return str(ipaddress.IPv6Address(int(ipaddress.IPv6Address(prefix)) | int(ipaddress.IPv4Address(ipv4))))


def _six_to_four(ipv4: str) -> str:
    return str(ipaddress.IPv6Address((0x2002 << 112) | (int(ipaddress.IPv4Address(ipv4)) << 80) | 1))


def _teredo(server: str, client: str) -> str:
    obfuscated = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF  # RFC 4380 §4: the client's address, inverted
    value = (0x20010000 << 96) | (int(ipaddress.IPv4Address(server)) << 64) | (0x8000 << 48) | (0xFFFF << 32)
    return str(ipaddress.IPv6Address(value | obfuscated))


# (form, address carrying 169.254.169.254, the same form carrying a public address, whether that one is allowed)
FORMS = [
    ("IPv4-mapped", f"::ffff:{METADATA}", f"::ffff:{PUBLIC_V4}", True),
    ("NAT64", _nat64(METADATA), _nat64(PUBLIC_V4), True),
    ("local-use NAT64", _nat64(METADATA, "64:ff9b:1::"), _nat64(PUBLIC_V4, "64:ff9b:1::"), False),
    ("6to4", _six_to_four(METADATA), _six_to_four(PUBLIC_V4), True),
    ("Teredo", _teredo(PUBLIC_V4, METADATA), _teredo(PUBLIC_V4, "8.8.4.4"), True),
    ("IPv4-compatible", f"::{METADATA}", f"::{PUBLIC_V4}", False),
]


@pytest.mark.parametrize(("form", "internal", "public", "routed"), FORMS, ids=[f[0] for f in FORMS])
def test_every_ipv6_form_of_an_ipv4_address_is_decided_by_that_address(form, internal, public, routed):
    assert embedded_ipv4(ipaddress.ip_address(internal))[0] == form
    reason = PUBLIC.refusal(internal)
    assert reason is not None and METADATA in reason and "link-local" in reason, (form, reason)
    assert (PUBLIC.refusal(public) is None) is routed, (form, PUBLIC.refusal(public))
    with pytest.raises(BlockedAddress, match=r"not a public address") as refused:
        check_url(f"http://[{internal}]/latest/meta-data/", PUBLIC)
    assert METADATA in str(refused.value)


def test_a_teredo_address_is_refused_when_its_server_is_internal_too():
    assert "10.0.0.1, a private address" in PUBLIC.refusal(_teredo("10.0.0.1", PUBLIC_V4))


@pytest.mark.parametrize(
    "address",
    [
        "fec0::1", "feff::1",  # site-local (deprecated, RFC 3879), which Python 3.11's is_global calls global
        "::", "::1", "::2", "100::1", "2001:2::1", "2001:10::1", "2001:db8::1", "3fff::1", "5f00::1",
        "fc00::1", "fd12:3456::1", "fe80::1", "ff02::1", "ff0e::1", "4000::1", "8000::1", "::ffff:0:a00:1",
        "0.0.0.0", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.0.1", "172.16.0.1", "192.0.0.8", "192.0.0.170",
        "192.0.2.1", "192.88.99.1", "192.168.0.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1",
        "240.0.0.1", "255.255.255.255",
    ],
)  # fmt: skip
def test_every_range_the_registries_call_not_globally_reachable_is_refused(address):
    assert PUBLIC.refusal(address) is not None, address


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "192.0.0.9", "2606:4700::1111", "2a00:1450:4001::200e"])
def test_global_addresses_pass(address):
    assert PUBLIC.refusal(address) is None


def test_nothing_python_calls_non_global_passes():
    """Python's own tables (which follow the same registries, kept with each release) are the second list: every
    network this interpreter's ``ipaddress`` calls not global is refused at both ends."""
    networks = [
        *getattr(ipaddress, "_IPv4Constants")._private_networks,  # noqa: B009 - the tables is_global reads
        *getattr(ipaddress, "_IPv6Constants")._private_networks,  # noqa: B009
    ]
    assert networks
    for network in networks:
        for address in (network.network_address, network.broadcast_address):
            if not address.is_global:
                assert PUBLIC.refusal(str(address)) is not None, address


def test_what_the_operator_allows_is_allowed_in_its_mapped_form_too():
    allowed = NetworkPolicy.public("10.0.0.0/8")
    assert allowed.refusal("::ffff:10.1.2.3") is None and allowed.refusal("10.1.2.3") is None
    assert allowed.refusal(_nat64("10.1.2.3")) is not None  # NAT64 never carries a non-global address (RFC 6052 §3.1)
