"""The names and origins agentweb accepts all derive from AGENTWEB_BASE_URL."""

from __future__ import annotations

import pytest

from agentweb.site_names import LOOPBACK_HOSTS, host_refused, origin_refused, site_names


def test_a_public_https_url_is_the_only_host_and_origin() -> None:
    site = site_names("https://agentweb.example.com")
    assert site.allowed_hosts == ["agentweb.example.com"]
    assert site.trusted_origins == ["https://agentweb.example.com"]
    assert site.websocket_origins == ["https://agentweb.example.com"]


def test_the_scheme_default_port_and_a_trailing_path_drop_out_of_the_origin() -> None:
    site = site_names("HTTPS://Agentweb.Example.com:443/")
    assert site.origin == "https://agentweb.example.com"
    assert site.allowed_hosts == ["agentweb.example.com"]


def test_another_port_is_part_of_the_origin_not_of_the_host() -> None:
    site = site_names("http://agentweb.test:8123")
    assert site.allowed_hosts == ["agentweb.test"]
    assert site.trusted_origins == ["http://agentweb.test:8123"]


def test_an_address_is_a_host_too_and_ipv6_keeps_its_brackets() -> None:
    assert site_names("http://10.20.30.1:8000").allowed_hosts == ["10.20.30.1"]
    site = site_names("https://[2001:db8::5]:8443")
    assert site.allowed_hosts == ["[2001:db8::5]"]
    assert site.origin == "https://[2001:db8::5]:8443"


def test_the_loopback_default_answers_to_every_loopback_name_on_any_port() -> None:
    site = site_names("http://127.0.0.1:8000")
    assert sorted(site.allowed_hosts) == sorted(LOOPBACK_HOSTS)
    assert site.trusted_origins == ["http://127.0.0.1:8000"]
    assert site.websocket_origins == ["http://127.0.0.1:8000", *LOOPBACK_HOSTS]
    assert "localhost" in site_names("http://[::1]:9000").allowed_hosts


def test_a_public_name_does_not_answer_to_loopback_names() -> None:
    hosts = site_names("https://agentweb.example.com").allowed_hosts
    assert not set(hosts) & set(LOOPBACK_HOSTS)


def test_the_old_lists_add_names_and_origins_to_the_derived_ones() -> None:
    site = site_names(
        "https://agentweb.example.com",
        ["agentweb.internal", "Agentweb.Example.com"],
        ["https://review.example.com"],
    )
    assert site.allowed_hosts == ["agentweb.example.com", "agentweb.internal"]
    assert site.trusted_origins == ["https://agentweb.example.com", "https://review.example.com"]
    assert site.websocket_origins == [
        "https://agentweb.example.com", "agentweb.internal", "https://review.example.com",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "url", ["agentweb.example.com", "ftp://agentweb.example.com", "https://", "http://x:port", ""]
)
def test_a_url_that_is_not_http_or_https_with_a_host_names_the_setting(url: str) -> None:
    with pytest.raises(ValueError, match=r"AGENTWEB_BASE_URL is .*http:// or https:// URL"):
        site_names(url)


def test_the_refusals_name_the_setting_to_change() -> None:
    assert "AGENTWEB_BASE_URL" in host_refused("10.0.0.5:8000")
    assert host_refused("x" * 500).count("x") <= 201
    assert "AGENTWEB_BASE_URL" in origin_refused("https://evil.example")
    assert "DJANGO_CSRF_TRUSTED_ORIGINS" in origin_refused("https://evil.example")
