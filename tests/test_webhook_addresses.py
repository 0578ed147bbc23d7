"""The webhook address guard: IPv6 forms that carry an IPv4 address are judged by it, and IANA's special-purpose
blocks are refused, whatever Python's own tables say."""

import socket

import pytest

from service.outbound.addresses import UnsafeUrl, check_url, vet_url

REFUSED = [
    # The issue's examples: loopback inside IPv4-compatible, IPv4-translated and local-use NAT64 forms.
    ("::127.0.0.1", "IPv4-compatible ::/96 carrying loopback"),
    ("::ffff:0:127.0.0.1", "IPv4-translated ::ffff:0:0:0/96 carrying loopback"),
    ("64:ff9b:1::7f00:1", "local-use NAT64 64:ff9b:1::/48"),
    ("192.0.0.8", "IPv4 dummy address, in 192.0.0.0/24"),
    # Every carrier form, with an inside address.
    ("::10.0.0.1", "IPv4-compatible carrying private"),
    ("::ffff:169.254.169.254", "IPv4-mapped carrying link-local (cloud metadata)"),
    ("::ffff:0:10.1.2.3", "IPv4-translated carrying private"),
    ("64:ff9b::7f00:1", "NAT64 well-known prefix carrying loopback"),
    ("64:ff9b::c000:8", "NAT64 carrying 192.0.0.8"),
    ("2002:a9fe:a9fe::1", "6to4 carrying link-local"),
    ("2002:c000:0008::", "6to4 carrying 192.0.0.8"),
    ("2001:0:7f00:1::f7f7:f7f7", "Teredo with a loopback server"),
    ("2001:0:808:808::3fff:fffe", "Teredo with a public server and a client of 192.0.0.1"),
    ("2001:0:808:808::f7f7:f7f7", "Teredo: in 2001::/23, refused whatever it carries"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    # The rest of the IPv4 registry that is not globally reachable.
    ("192.0.0.9", "192.0.0.0/24: all of it"),
    ("192.0.0.170", "NAT64 discovery"),
    ("192.0.2.1", "TEST-NET-1"),
    ("192.88.99.1", "6to4 relay anycast"),
    ("198.51.100.7", "TEST-NET-2"),
    ("203.0.113.9", "TEST-NET-3"),
    ("198.19.255.1", "benchmarking"),
    ("255.255.255.255", "limited broadcast"),
    ("172.31.0.1", "private"),
    # And of the IPv6 registry.
    ("100::1", "discard-only"),
    ("100:0:0:1::1", "dummy IPv6 prefix"),
    ("2001:2::1", "benchmarking"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation (2024), unknown to Python 3.11"),
    ("5f00::1", "SRv6 SIDs"),
    ("fec0::1", "site-local"),
    ("fd00::1", "unique local"),
    ("ff0e::1", "multicast"),
    ("4000::1", "outside global unicast 2000::/3"),
]

ALLOWED = [
    ("8.8.8.8", "public IPv4"),
    ("::ffff:8.8.8.8", "IPv4-mapped public"),
    ("::ffff:0:8.8.8.8", "IPv4-translated public"),
    ("64:ff9b::808:808", "NAT64 of a public address"),
    ("2002:808:808::1", "6to4 of a public address"),
    ("2606:4700:4700::1111", "public IPv6"),
    ("192.31.196.1", "AS112, globally reachable"),
]


def _literal(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_special_purpose_and_wrapped_inside_addresses_are_refused(address, why):
    with pytest.raises(UnsafeUrl, match="not a public address"):
        check_url(f"https://{_literal(address)}/hook", allow_private=False)
    check_url(f"https://{_literal(address)}/hook", allow_private=True)  # the operator may allow them


@pytest.mark.parametrize(("address", "why"), ALLOWED)
def test_public_addresses_and_their_ipv6_forms_pass(address, why):
    check_url(f"https://{_literal(address)}/hook", allow_private=False)


@pytest.mark.parametrize("address", ["::127.0.0.1", "192.0.0.8", "64:ff9b:1::7f00:1"])
def test_a_name_resolving_to_a_wrapped_inside_address_is_refused(address):
    def resolver(host, port, *_args, **_kwargs):
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    with pytest.raises(UnsafeUrl):
        vet_url("https://hooks.example.test/x", allow_private=False, resolver=resolver)


def test_the_api_refuses_the_issues_addresses(stack_factory):
    stack = stack_factory(webhook_allow_private=False)
    for address in ("[::127.0.0.1]", "[::ffff:0:127.0.0.1]", "[64:ff9b:1::7f00:1]", "192.0.0.8"):
        response = stack.api.post(f"/v2/agent/{stack.project_id}/webhooks", json={"url": f"http://{address}/x"})
        assert response.status_code == 400 and response.json()["field"] == "url", response.text
    assert stack.api.get(f"/v2/agent/{stack.project_id}/webhooks").json()["webhooks"] == []
