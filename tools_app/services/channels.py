"""Channel configuration: the one check the admin form and the import share, and the
import of a channels file (what `export_channels` prints).

A file names channels by `name` (each created or replaced whole; others are left as
they are) and links Slack users to agentweb users by username. Secrets are never in an
export; an import may carry `secret` and `signing_secret`, and without them a channel
keeps the ones it has. Everything is checked before anything is written: one problem
(a host not allowed, a missing secret, an unknown user, policy or group) refuses the
whole file, each problem named with its channel and field.

Every change (an admin's save or delete, an import) is an audit entry, written in the
same transaction, naming what changed but never a secret's value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import validate_email, validate_slug
from django.db import transaction

from tools_app.core.digits import ascii_int
from tools_app.core.notify.outbound import url_problem
from tools_app.errors import Invalid
from tools_app.models import AuditEntry, Channel, Policy, Project, SlackUser
from tools_app.services.audit import audit_record
from tools_app.services.delivery import SLACK_API

Kind = Channel.Kind
Action, Via = AuditEntry.Action, AuditEntry.Via
SECRETS = ("secret", "signing_secret")
SLACK_ID = re.compile(r"^[UW][A-Z0-9]{2,29}$")
TEXTS = ("url", "slack_channel", *SECRETS)
FLAGS = ("enabled", "interactive", "to_reviewers", "escalation")
LISTS = ("recipients", "rules", "sessions", "projects", "policies", "groups")
FIELDS = frozenset(("name", "kind", *TEXTS, *FLAGS, *LISTS))


def channel_problems(values: Mapping[str, Any]) -> dict[str, str]:
    """What keeps a channel from working, by field ({} when nothing). `values` are the
    channel's settings with its secrets as they will be saved (a kept one included)."""
    kind, url = values.get("kind", ""), values.get("url", "")
    problems: dict[str, str] = {}
    if kind == Kind.WEBHOOK:
        if not url:
            problems["url"] = "A webhook needs the URL to POST to."
        if not values.get("secret"):
            problems.setdefault("secret", "A webhook needs a secret: every request is signed.")
    elif kind == Kind.SLACK:
        if not values.get("secret") and not url:
            problems["url"] = "Slack needs an incoming-webhook URL, or a bot token."
        url = url or SLACK_API
        if values.get("secret") and not values.get("slack_channel"):
            problems["slack_channel"] = "With a bot token, name the channel's id (C…)."
        if values.get("interactive") and not values.get("signing_secret"):
            problems.setdefault(
                "signing_secret", "Approve and Deny buttons need the signing secret."
            )
    elif kind == Kind.EMAIL:
        problems.update(_email_problems(values))
    if url and kind != Kind.EMAIL and "url" not in problems:
        problems["url"] = url_problem(
            url, settings.AGENTWEB_NOTIFY_HOSTS, settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS
        )
    if values.get("groups") and kind != Kind.EMAIL:
        problems["groups"] = "A group is told by email: only an email channel has one."
    bad = [s for s in values.get("sessions") or [] if ascii_int(str(s)) is None]
    if bad:
        problems["sessions"] = f"{bad[0]!r} is not a session id."
    return {field: problem for field, problem in problems.items() if problem}


def _email_problems(values: Mapping[str, Any]) -> dict[str, str]:
    for address in values.get("recipients") or []:
        try:
            validate_email(address)
        except ValidationError:
            return {"recipients": f"{address!r} is not an email address."}
    if not (values.get("recipients") or values.get("to_reviewers") or values.get("groups")):
        return {"recipients": "Name an address, a group, or tell the reviewers."}
    return {}


def slack_user_problem(slack_id: str, user: Any) -> str:
    """Why this link cannot be made ("" when it can)."""
    if not SLACK_ID.match(slack_id):
        return f"{slack_id!r} is not a Slack user id (U… or W…, capitals)."
    if user is not None and not user.is_active:
        return "This user is deactivated; a click would be refused."
    return ""


# --- changes, recorded -------------------------------------------------------------------------


def channel_changed(
    *, channel: Channel, user: Any, via: str, created: bool, changed: list[str]
) -> None:
    """A person saved a channel (in the admin): recorded with the fields that changed
    (a secret by its name only)."""
    details = {"created": created, "changed": changed, "kind": channel.kind}
    _audit_channel(channel, Action.CHANNEL_CHANGE, user=user, via=via, details=details)


def channel_delete(*, channel: Channel, user: Any, via: str) -> None:
    """Delete a channel (its deliveries with it), recorded."""
    with transaction.atomic():
        details = {"kind": channel.kind}
        _audit_channel(channel, Action.CHANNEL_DELETE, user=user, via=via, details=details)
        channel.delete()


def _audit_channel(
    channel: Channel, action: str, *, user: Any, via: str, details: dict[str, Any]
) -> None:
    audit_record(
        action=action, via=via, actor=user, object_type="channel", object_id=channel.pk,
        object_repr=f"channel {channel.name}", details=details,
    )  # fmt: skip


# --- import ------------------------------------------------------------------------------------


@transaction.atomic
def channels_import(
    *, data: object, user: Any = None, via: str = Via.CLI
) -> tuple[list[Channel], list[SlackUser]]:
    """Create or replace each channel of the file and link its Slack users, each channel
    recorded in the audit trail; refuses the whole file, writing nothing, when any of it
    is wrong."""
    if not isinstance(data, dict) or set(data) - {"channels", "slack_users"}:
        raise Invalid('A channels file holds one JSON object: {"channels": [...], '
                      '"slack_users": [...]}.')  # fmt: skip
    entries, links = data.get("channels", []), data.get("slack_users", [])
    if not isinstance(entries, list) or not isinstance(links, list):
        raise Invalid("`channels` and `slack_users` are lists.")
    problems: list[str] = []
    planned = [_planned_channel(entry, index, problems) for index, entry in enumerate(entries)]
    planned_links = [_planned_link(entry, index, problems) for index, entry in enumerate(links)]
    names = [plan["name"] for plan in planned if plan]
    if len(names) != len(set(names)):
        problems.append("A channel name appears twice in the file.")
    if problems:
        raise Invalid("Nothing was imported: " + " ".join(problems))
    channels = [_save_channel(plan, user=user, via=via) for plan in planned if plan]
    saved_links = [
        SlackUser.objects.update_or_create(slack_id=slack_id, defaults={"user": user})[0]
        for slack_id, user in planned_links
        if slack_id
    ]
    return channels, saved_links


def _planned_channel(entry: object, index: int, problems: list[str]) -> dict[str, Any] | None:
    """The channel's values with policies and groups found, its secrets kept when the file
    has none; None (and `problems` told why) when it cannot be saved."""
    where = f"channels[{index}]"
    if not isinstance(entry, dict):
        problems.append(f"{where} is not a JSON object.")
        return None
    found = _shape_problems(entry)
    name = entry.get("name")
    where = f"channel {name!r}" if isinstance(name, str) and name else where
    if found:
        problems += [f"{where}: {problem}" for problem in found]
        return None
    saved = Channel.objects.filter(name=name).first()
    values: dict[str, Any] = {
        "enabled": True, **entry,
        **{key: entry.get(key) or getattr(saved, key, "") for key in SECRETS},
    }  # fmt: skip
    values["secrets_given"] = [key for key in SECRETS if entry.get(key)]  # names, for the audit
    values["projects"] = _named(Project, entry.get("projects", []), "project", where, problems)
    values["policies"] = _named(Policy, entry.get("policies", []), "policy", where, problems)
    values["groups"] = _named(Group, entry.get("groups", []), "group", where, problems)
    problems += [f"{where}: {field}: {text}" for field, text in channel_problems(values).items()]
    return values


def _shape_problems(entry: dict[str, Any]) -> list[str]:
    found = [f"unknown field {key!r}" for key in sorted(set(entry) - FIELDS)]
    name = entry.get("name")
    try:
        validate_slug(name if isinstance(name, str) and len(name) <= 100 else "")
    except ValidationError:
        found.append("`name` is a slug of letters, digits, - and _ (at most 100)")
    if entry.get("kind") not in Kind.values:
        found.append(f"`kind` is one of {', '.join(Kind.values)}")
    found += [f"`{key}` is text" for key in TEXTS if not isinstance(entry.get(key, ""), str)]
    found += [f"`{key}` is true or false" for key in FLAGS
              if not isinstance(entry.get(key, False), bool)]  # fmt: skip
    for key in LISTS:
        items = entry.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str | int) for i in items):
            found.append(f"`{key}` is a list of strings")
    return found


def _named(model: Any, names: list[Any], what: str, where: str, problems: list[str]) -> list[Any]:
    """The rows named, each unknown name a problem."""
    found = {row.name: row for row in model.objects.filter(name__in=[str(n) for n in names])}
    problems += [f"{where}: there is no {what} {n!r}." for n in names if str(n) not in found]
    return [found[str(n)] for n in names if str(n) in found]


def _planned_link(entry: object, index: int, problems: list[str]) -> tuple[str, Any]:
    """(the Slack user id, the agentweb user) to link; ("", None) when it cannot be."""
    if not isinstance(entry, dict) or set(entry) != {"slack_id", "user"}:
        problems.append(f'slack_users[{index}] is {{"slack_id": "U…", "user": "username"}}.')
        return "", None
    slack_id, username = str(entry["slack_id"]), str(entry["user"])
    user = get_user_model().objects.filter(username=username).first()
    problem = (
        f"there is no agentweb user {username!r}."
        if user is None
        else slack_user_problem(slack_id, user)
    )
    if problem:
        problems.append(f"Slack user {slack_id!r}: {problem}")
        return "", None
    return slack_id, user


def _save_channel(values: dict[str, Any], *, user: Any, via: str) -> Channel:
    fields = {key: values.get(key, "") for key in TEXTS}
    fields |= {key: bool(values.get(key, False)) for key in FLAGS}
    fields |= {key: list(values.get(key, [])) for key in ("recipients", "rules")}
    fields["sessions"] = [int(s) for s in values.get("sessions", [])]
    channel, created = Channel.objects.update_or_create(
        name=values["name"], defaults={"kind": values["kind"], **fields}
    )
    channel.projects.set(values["projects"])
    channel.policies.set(values["policies"])
    channel.groups.set(values["groups"])
    details = {"imported": True, "created": created, "kind": channel.kind,
               "secrets_replaced": values["secrets_given"]}  # fmt: skip
    _audit_channel(channel, Action.CHANNEL_CHANGE, user=user, via=via, details=details)
    return channel
