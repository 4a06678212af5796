"""Single sign-on: the person a provider vouched for, made or brought up to date.

At every sign-in the account named by the provider's username claim is created (without a
usable password) or updated from the claims, and its groups are set: exactly the mapped
agentweb groups the claims grant, among those the map names (core/sso.py). A change of
groups is audited: who gains or loses a reviewer's or an admin's rights, and when, is on
the record like any other grant. A disabled account stays disabled: its sign-in is
refused and nothing of it changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import transaction

from tools_app.core.sso import (
    Person,
    SsoRefused,
    managed_groups,
    parse_group_map,
    person_from_claims,
)
from tools_app.services.audit import Action, Via, audit_record


def group_map() -> dict[str, frozenset[str]]:
    """AGENTWEB_OIDC_GROUP_MAP, parsed; a bad one refuses every sign-in, saying why."""
    try:
        return parse_group_map(settings.AGENTWEB_OIDC_GROUP_MAP)
    except ValueError as exc:
        raise SsoRefused(
            f"Sign-in is misconfigured (AGENTWEB_OIDC_GROUP_MAP: {exc}): tell an admin."
        ) from exc


def sso_user_sign_in(*, claims: Mapping[str, Any]) -> User:
    """The account for these verified claims, created or updated, its groups set."""
    mapping = group_map()
    person = person_from_claims(
        claims,
        username_claim=settings.AGENTWEB_OIDC_USERNAME_CLAIM,
        groups_claim=settings.AGENTWEB_OIDC_GROUPS_CLAIM,
        group_map=mapping,
    )
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=person.username).first()
        if user is not None and not user.is_active:
            raise SsoRefused(f"The agentweb account {person.username!r} is disabled: ask an admin.")
        user = user or _user_create(person)
        _user_update(user, person)
        joined, left = _groups_set(user, person.groups, managed_groups(mapping))
        if joined or left:
            audit_record(
                action=Action.ACCOUNT_GROUPS, via=Via.BROWSER, actor=user,
                object_type="user", object_id=user.pk, object_repr=user.get_username(),
                reason="groups set from the sign-in provider's claims",
                details={"joined": joined, "left": left},
            )  # fmt: skip
    return user


def _user_create(person: Person) -> User:
    user = User(username=person.username)
    user.set_unusable_password()  # signs in through the provider only
    user.save()
    return user


def _user_update(user: User, person: Person) -> None:
    fields = {"email": person.email, "first_name": person.first_name, "last_name": person.last_name}
    changed = [name for name, value in fields.items() if getattr(user, name) != value]
    for name in changed:
        setattr(user, name, fields[name])
    if changed:
        user.save(update_fields=changed)


def _groups_set(
    user: User, granted: frozenset[str], managed: frozenset[str]
) -> tuple[list[str], list[str]]:
    """Join the granted groups (made when missing) and leave the other managed ones;
    the names joined and the names left."""
    held = set(user.groups.filter(name__in=managed).values_list("name", flat=True))
    joined = sorted(granted - held)
    for name in joined:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    left = sorted((managed - granted) & held)
    if left:
        user.groups.remove(*Group.objects.filter(name__in=left))
    return joined, left
