"""Password sign-in's limits, the pure part: whose failures count together and when the
door opens again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tools_app.core.addresses import client_address, trusted_networks
from tools_app.core.sign_in import Limits, account_key, address_key, refusal, shut_for

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
WINDOW = timedelta(minutes=15)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("203.0.113.7", "203.0.113.7"),
        (" 203.0.113.7 ", "203.0.113.7"),
        ("::ffff:203.0.113.7", "203.0.113.7"),  # an IPv4 client on a dual-stack socket
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),  # the same host's /64
        ("fe80::1%eth0", "fe80::/64"),
        ("", ""),
        ("not an address", "not an address"),
    ],
)
def test_addresses_count_as_their_host(address: str, key: str) -> None:
    assert address_key(address) == key


def test_an_account_is_counted_whatever_its_case_or_spaces() -> None:
    assert account_key(" Rosa ") == account_key("ROSA") == "rosa"
    assert len(account_key("x" * 400)) == 150


def test_the_door_shuts_at_the_limit_and_opens_as_the_oldest_age_out() -> None:
    four = [ago(10), ago(8), ago(6), ago(1)]
    assert shut_for(four, 5, WINDOW, NOW) == 0
    five = [*four, ago(0.5)]
    assert shut_for(five, 5, WINDOW, NOW) == pytest.approx(5 * 60)  # ago(10) + 15 min
    six = [ago(14), *five]
    assert shut_for(six, 5, WINDOW, NOW) == pytest.approx(5 * 60)  # two must age out
    stale = [ago(15), ago(16), ago(30), *four]
    assert shut_for(stale, 5, WINDOW, NOW) == 0


def test_the_address_may_fail_four_times_the_pair() -> None:
    assert Limits(attempts=5, window=WINDOW).address_attempts == 20


def test_the_refusal_says_how_long_and_how_to_get_in_sooner() -> None:
    assert "refused for 5 minutes" in refusal(241, whole_address=False)
    assert "to this account from your address" in refusal(241, whole_address=False)
    assert "refused for 1 minute." in refusal(3, whole_address=True)
    assert "from your address:" in refusal(3, whole_address=True)
    assert "ask an admin" in refusal(3, whole_address=True)


LOOPBACK = trusted_networks(["127.0.0.0/8", "::1"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("203.0.113.7", "", "203.0.113.7"),
        ("203.0.113.7", "6.6.6.6", "203.0.113.7"),  # not from a proxy: the header is the client's
        ("127.0.0.1", "203.0.113.7", "203.0.113.7"),  # the proxy on this host
        ("127.0.0.1", "6.6.6.6, 203.0.113.7", "203.0.113.7"),  # what the client wrote: left
        ("127.0.0.1", "6.6.6.6, 127.0.0.1, 203.0.113.7", "203.0.113.7"),
        ("127.0.0.1", "203.0.113.7, 127.0.0.2", "203.0.113.7"),  # two proxies of ours
        ("::1", "2001:db8::5", "2001:db8::5"),
        ("::ffff:127.0.0.1", "203.0.113.7", "203.0.113.7"),
        ("127.0.0.1", "", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1", "127.0.0.1"),  # only proxies: the last one reached
    ],
)
def test_the_client_is_the_first_address_from_the_right_not_a_trusted_proxy(
    peer: str, forwarded: str, client: str
) -> None:
    assert client_address(peer, forwarded, LOOPBACK) == client


def test_a_proxy_elsewhere_is_trusted_only_when_listed() -> None:
    far = trusted_networks(["10.0.0.0/8"])
    assert client_address("10.1.2.3", "6.6.6.6, 203.0.113.7", far) == "203.0.113.7"
    assert client_address("127.0.0.1", "203.0.113.7", far) == "127.0.0.1"
    with pytest.raises(ValueError, match=r"AGENTWEB_TRUSTED_PROXIES has 'proxy\.internal'"):
        trusted_networks(["10.0.0.0/8", "proxy.internal"])
