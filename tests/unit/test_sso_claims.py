"""What a provider's claims say about a person (tools_app/core/sso.py): pure, no Django."""

from __future__ import annotations

import pytest

from tools_app.core.sso import (
    SsoRefused,
    configuration_problems,
    endpoints_from_discovery,
    granted_groups,
    managed_groups,
    parse_group_map,
    person_from_claims,
)

MAP = parse_group_map("eng-reviewers=reviewers, sec-admins=policy-admins, leads=reviewers")
ISSUER = "https://idp.example.com/realms/acme"


def test_the_plain_and_the_json_group_maps_say_the_same() -> None:
    as_json = parse_group_map(
        '{"eng-reviewers": "reviewers", "sec-admins": ["policy-admins"], "leads": "reviewers"}'
    )
    assert as_json == MAP
    assert managed_groups(MAP) == {"reviewers", "policy-admins"}


def test_a_claim_value_may_grant_several_groups_and_hold_an_equals_sign() -> None:
    mapping = parse_group_map('{"cn=ops,dc=acme": ["reviewers", "oncall"]}')
    assert granted_groups(["cn=ops,dc=acme"], mapping) == {"reviewers", "oncall"}
    assert parse_group_map("cn=ops=reviewers") == {"cn=ops": frozenset({"reviewers"})}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("reviewers", "write claim_value=agentweb_group"),
        ("=reviewers", "both sides must be named"),
        ('{"a": 1}', "a group name or a list of group names"),
        ('{"a": "b"', "not valid JSON"),
        ("{}x", "not valid JSON"),
    ],
)
def test_a_malformed_group_map_is_refused_saying_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_group_map(text)


def test_an_empty_group_map_manages_nothing() -> None:
    assert parse_group_map("  ") == {}
    assert managed_groups({}) == frozenset()


def test_groups_come_from_a_list_or_one_name_and_unmapped_values_grant_nothing() -> None:
    assert granted_groups(["eng-reviewers", "sec-admins", "staff"], MAP) == {
        "reviewers", "policy-admins",
    }  # fmt: skip
    assert granted_groups("leads", MAP) == {"reviewers"}
    assert granted_groups(None, MAP) == frozenset()
    assert granted_groups({"eng-reviewers": True}, MAP) == frozenset()


def test_a_person_is_read_from_the_claims() -> None:
    claims = {
        "preferred_username": "rita", "email": " rita@example.com ", "given_name": "Rita",
        "family_name": "Ray", "groups": ["eng-reviewers"],
    }  # fmt: skip
    person = person_from_claims(
        claims, username_claim="preferred_username", groups_claim="groups", group_map=MAP
    )
    assert (person.username, person.email, person.first_name, person.last_name) == (
        "rita", "rita@example.com", "Rita", "Ray",
    )  # fmt: skip
    assert person.groups == {"reviewers"}


@pytest.mark.parametrize(
    ("claims", "says"),
    [
        ({"sub": "1"}, "sent no 'preferred_username' claim"),
        ({"preferred_username": ""}, "sent no 'preferred_username' claim"),
        ({"preferred_username": "rita ray"}, "is not a username agentweb takes"),
        ({"preferred_username": "x" * 151}, "is not a username agentweb takes"),
    ],
)
def test_claims_without_a_usable_username_are_refused(claims: dict[str, str], says: str) -> None:
    with pytest.raises(SsoRefused, match=says):
        person_from_claims(
            claims, username_claim="preferred_username", groups_claim="groups", group_map=MAP
        )


def test_discovery_gives_the_issuers_endpoints() -> None:
    document = {
        "issuer": ISSUER, "authorization_endpoint": f"{ISSUER}/auth",
        "token_endpoint": f"{ISSUER}/token", "userinfo_endpoint": f"{ISSUER}/me",
        "jwks_uri": f"{ISSUER}/jwks", "end_session_endpoint": f"{ISSUER}/logout",
        "scopes_supported": ["openid"],
    }  # fmt: skip
    endpoints = endpoints_from_discovery(document, ISSUER + "/")
    assert endpoints["token_endpoint"] == f"{ISSUER}/token"
    assert "scopes_supported" not in endpoints
    with pytest.raises(ValueError, match="names the issuer"):
        endpoints_from_discovery(document | {"issuer": "https://evil.example"}, ISSUER)
    with pytest.raises(ValueError, match="has no jwks_uri"):
        endpoints_from_discovery({k: v for k, v in document.items() if k != "jwks_uri"}, ISSUER)
    with pytest.raises(ValueError, match="not a JSON object"):
        endpoints_from_discovery(["issuer"], ISSUER)


def test_nothing_set_is_no_problem_and_half_set_says_what_is_missing() -> None:
    assert configuration_problems({"AGENTWEB_OIDC_ISSUER": ""}) == []
    whole = {
        "AGENTWEB_OIDC_ISSUER": ISSUER,
        "AGENTWEB_OIDC_CLIENT_ID": "agentweb",
        "AGENTWEB_OIDC_CLIENT_SECRET": "s3cret",
    }
    assert configuration_problems(whole) == []
    assert configuration_problems(whole | {"AGENTWEB_OIDC_CLIENT_SECRET": ""}) == [
        "AGENTWEB_OIDC_CLIENT_SECRET is not set"
    ]
    half = configuration_problems(
        {"AGENTWEB_OIDC_CLIENT_ID": "agentweb", "AGENTWEB_OIDC_TOKEN_ENDPOINT": "https://t"}
    )
    assert "missing AGENTWEB_OIDC_AUTHORIZATION_ENDPOINT, AGENTWEB_OIDC_JWKS_URI" in half[0]
    assert half[1:] == ["AGENTWEB_OIDC_CLIENT_SECRET is not set"]
