"""Single sign-on, the pure part: what a provider's claims say about a person.

An identity provider names its groups in its own words (Okta group names, Keycloak paths,
Entra object ids); the group map says which agentweb group each one grants. The map
manages the agentweb groups it names and only those: at every sign-in a person is put in
exactly the mapped groups their claims grant, and groups the map never names (given by
hand in the admin) are left as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Django's default username rule (letters, digits and @.+-_), at most 150 characters.
USERNAME = re.compile(r"^[\w.@+-]{1,150}\Z")
# The endpoints a provider serves, by their discovery document's keys.
ENDPOINT_KEYS = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")


class SsoRefused(Exception):
    """A sign-in that must not go on; the message is for the person signing in."""


class SsoUnavailable(SsoRefused):
    """The provider could not be asked (down, or not answering as a provider does)."""


@dataclass(frozen=True)
class Person:
    """Who the claims describe, in agentweb's terms."""

    username: str
    email: str
    first_name: str
    last_name: str
    groups: frozenset[str]  # the agentweb groups the claims grant


def parse_group_map(text: str) -> dict[str, frozenset[str]]:
    """AGENTWEB_OIDC_GROUP_MAP: a JSON object `{"claim value": "group" or ["group", ...]}`,
    or `claim value=group,claim value=group`. Raises ValueError naming what is wrong."""
    text = text.strip()
    if not text:
        return {}
    pairs = _json_pairs(text) if text.startswith("{") else _plain_pairs(text)
    mapping: dict[str, set[str]] = {}
    for claim_value, group in pairs:
        if not claim_value or not group:
            raise ValueError(f"{claim_value}={group}: both sides must be named")
        mapping.setdefault(claim_value, set()).add(group)
    return {claim_value: frozenset(groups) for claim_value, groups in mapping.items()}


def _json_pairs(text: str) -> list[tuple[str, str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos})") from exc
    if not isinstance(data, dict):
        raise ValueError("the JSON must be an object of claim value to group name")
    pairs: list[tuple[str, str]] = []
    for claim_value, groups in data.items():
        names = [groups] if isinstance(groups, str) else groups
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise ValueError(f"{claim_value!r}: a group name or a list of group names")
        pairs.extend((claim_value.strip(), name.strip()) for name in names)
    return pairs


def _plain_pairs(text: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"{item.strip()!r}: write claim_value=agentweb_group")
        claim_value, _, group = item.rpartition("=")
        pairs.append((claim_value.strip(), group.strip()))
    return pairs


def managed_groups(group_map: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The agentweb groups that sign-in sets: every group the map names."""
    return frozenset(group for groups in group_map.values() for group in groups)


def granted_groups(claim: Any, group_map: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The agentweb groups a groups claim grants (a list of names, or one name)."""
    values: Iterable[Any] = [claim] if isinstance(claim, str) else claim or []
    if not isinstance(values, list | tuple):
        return frozenset()
    granted: set[str] = set()
    for value in values:
        granted |= group_map.get(str(value), frozenset())
    return frozenset(granted)


def person_from_claims(
    claims: Mapping[str, Any],
    *,
    username_claim: str,
    groups_claim: str,
    group_map: Mapping[str, frozenset[str]],
) -> Person:
    """The person the claims name; SsoRefused when they name no usable username."""
    username = claims.get(username_claim)
    if not isinstance(username, str) or not username:
        raise SsoRefused(
            f"The provider sent no {username_claim!r} claim to name your account: ask an "
            "admin to set AGENTWEB_OIDC_USERNAME_CLAIM to a claim it sends (or its scope)."
        )
    if not USERNAME.match(username):
        raise SsoRefused(
            f"The provider's {username_claim!r} ({username[:60]!r}) is not a username "
            "agentweb takes (letters, digits and @.+-_, at most 150)."
        )
    return Person(
        username=username,
        email=_text(claims.get("email")),
        first_name=_text(claims.get("given_name"))[:150],
        last_name=_text(claims.get("family_name"))[:150],
        groups=granted_groups(claims.get(groups_claim), group_map),
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def discovery_url(issuer: str) -> str:
    """Where an issuer publishes its endpoints (OpenID Connect Discovery 1.0)."""
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def endpoints_from_discovery(document: Any, issuer: str) -> dict[str, str]:
    """The endpoints of a discovery document, checked to be the issuer's own."""
    if not isinstance(document, dict):
        raise ValueError("the discovery document is not a JSON object")
    if str(document.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise ValueError(
            f"the discovery document names the issuer {document.get('issuer')!r}, "
            f"not {issuer!r} (AGENTWEB_OIDC_ISSUER must be exactly the provider's)"
        )
    missing = [key for key in ENDPOINT_KEYS if not isinstance(document.get(key), str)]
    if missing:
        raise ValueError(f"the discovery document has no {', '.join(missing)}")
    wanted = (*ENDPOINT_KEYS, "end_session_endpoint")
    return {key: document[key] for key in wanted if isinstance(document.get(key), str)}


def configuration_problems(values: Mapping[str, str]) -> list[str]:
    """What a half-configured SSO lacks, from the AGENTWEB_OIDC_* values that are set
    (unset ones absent or empty). Nothing set: SSO is off, which is no problem."""
    named = {key: value for key, value in values.items() if value}
    if not named:
        return []
    problems = []
    explicit = [f"AGENTWEB_OIDC_{key.upper()}" for key in ENDPOINT_KEYS]
    has_endpoints = [name for name in explicit if name in named]
    if "AGENTWEB_OIDC_ISSUER" not in named and len(has_endpoints) < len(explicit):
        lacking = sorted(set(explicit) - set(has_endpoints))
        problems.append(
            "neither AGENTWEB_OIDC_ISSUER (discovery) nor every endpoint is set "
            f"(missing {', '.join(lacking)})"
        )
    for name in ("AGENTWEB_OIDC_CLIENT_ID", "AGENTWEB_OIDC_CLIENT_SECRET"):
        if name not in named:
            problems.append(f"{name} is not set")
    return problems
