"""API tokens: shown once when made, stored as a SHA-256; named, expiring, revocable.

A person makes their own tokens in the browser (only the scopes `access` allows them);
an operator makes anyone's with `manage.py create_api_token`. Every creation and
revocation is in the audit trail, in the change's own transaction.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from tools_app import access
from tools_app.errors import Conflict, Forbidden, Invalid
from tools_app.models import ApiToken, Project
from tools_app.services.audit import Action, Via, audit_record
from tools_app.sql.prepared import Prepared

TOKEN_PREFIX = "aw_"  # noqa: S105  (a marker, not a secret)
NAME_MAX = ApiToken._meta.get_field("name").max_length or 100
EXPIRY_DAYS_MAX = 3650  # ten years: anything longer is "never", said plainly


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(
    *,
    user: Any,
    scope: str,
    name: str = "",
    expires_days: int | None = None,
    project: str = "",
    by: Any = None,
    via: str = Via.CLI,
) -> str:
    """Make a token for `user` and return it; only its hash is kept. `by`: the person who
    asked, held to the scopes and projects they may take (None: an operator at the
    command line, who may give any). `expires_days` None: it never expires. `project`:
    the project of the gateway sessions its hooks start (empty: by the agent's folder)."""
    name = _checked_name(name)
    expires_at = _expiry(expires_days)
    if scope not in ApiToken.Scope.values:
        raise Invalid(f"scope: {scope!r} is not a token scope (agent or review).")
    if by is not None and not (by.pk == user.pk and access.may_take_token_scope(by, scope)):
        raise Forbidden(_scope_refused(scope))
    chosen = _project(project, by)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        row = ApiToken.objects.create(
            user=user, scope=scope, name=name, token_hash=_digest(token), prefix=token[:10],
            expires_at=expires_at, project=chosen,
        )  # fmt: skip
        _audit(row, Action.TOKEN_CREATE, by=by, via=via)
    return token


def _project(name: str, by: Any) -> Project | None:
    if not name:
        return None
    found = Project.objects.filter(name=name).first()
    if found is None or (by is not None and not access.may_use_project(by, found)):
        raise Invalid(f"project: there is no project named {name!r} that you may use.")
    return found


def api_token_revoke(*, token: ApiToken, by: Any, via: str = Via.BROWSER) -> ApiToken:
    """Revoke a token that `by` may see (its owner, or a token admin: see
    `access.api_token_for`); a token already revoked is a conflict, nothing recorded."""
    with transaction.atomic():
        changed = ApiToken.objects.filter(pk=token.pk, revoked=False).update(revoked=True)
        if not changed:
            raise Conflict(f"The token {token.prefix}… is already revoked.")
        token.revoked = True
        _audit(token, Action.TOKEN_REVOKE, by=by, via=via)
    return token


def api_tokens_revoke_all(*, user: Any, by: Any, via: str = Via.ADMIN) -> int:
    """Revoke every live token of `user` (a person who left, or whose account is in
    doubt), each recorded in the audit trail as its own revocation; how many were."""
    revoked = 0
    with transaction.atomic():
        for token in ApiToken.objects.filter(user=user, revoked=False).select_related("user"):
            api_token_revoke(token=token, by=by, via=via)
            revoked += 1
    return revoked


# Compiled once (`sql/prepared.py`): every hook event and API request asks it. No
# ORDER BY (`first()` adds one): the hash is unique.
_BY_HASH = Prepared(
    ApiToken,
    lambda token_hash: (
        ApiToken.objects.select_related("user").filter(token_hash=token_hash).order_by()[:1]
    ),
    token_hash=str,
)


def api_token_verify(*, token: str) -> ApiToken | str:
    """The live token behind a bearer string, its use recorded; or why it is refused
    (unknown, revoked, expired), in words its holder can act on."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return "the token is not an agentweb token (they start with aw_)"
    found = next(iter(_BY_HASH.models(token_hash=_digest(token))), None)
    if found is None or not found.user.is_active:
        return "the token is unknown"
    if found.revoked:
        return f"the token {found.prefix}… was revoked"
    if found.expired(timezone.now()):
        when = found.expires_at.strftime("%Y-%m-%d %H:%M UTC") if found.expires_at else ""
        return f"the token {found.prefix}… expired on {when}: make a new one (Settings → Tokens)"
    _use_record(found)
    return found


def api_token_authenticate(*, token: str) -> ApiToken | None:
    """The live token behind a bearer string, its use recorded; None when refused."""
    found = api_token_verify(token=token)
    return None if isinstance(found, str) else found


def api_token_refusal(*, token: str) -> str:
    """Why a bearer string does not authenticate ("" when it does)."""
    found = api_token_verify(token=token)
    return found if isinstance(found, str) else ""


def _checked_name(name: str) -> str:
    name = " ".join(str(name).split())
    if len(name) > NAME_MAX:
        raise Invalid(f"name: at most {NAME_MAX} characters, not {len(name)}.")
    if not name.isprintable():
        raise Invalid("name: only printable characters.")
    return name


def _expiry(days: int | None) -> Any:
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= EXPIRY_DAYS_MAX:
        raise Invalid(f"expires: a whole number of days from 1 to {EXPIRY_DAYS_MAX}, or never.")
    return timezone.now() + timedelta(days=days)


def _scope_refused(scope: str) -> str:
    if scope == ApiToken.Scope.REVIEW:
        return (
            "scope: only reviewers may take a review token (it decides calls); take an agent token"
        )
    return f"scope: you may not take a {scope} token"


def _audit(row: ApiToken, action: str, *, by: Any, via: str) -> None:
    owner = row.user.get_username()
    label = f"{row.name!r} " if row.name else ""
    details: dict[str, Any] = {"user": owner, "scope": row.scope, "prefix": row.prefix}
    if row.project_id:
        details["project"] = row.project.name if row.project else ""
    if action == Action.TOKEN_CREATE:
        details |= {"name": row.name, "expires_at": _iso(row.expires_at)}
    audit_record(
        action=action, via=via, actor=by, object_type="api_token", object_id=row.pk,
        object_repr=f"{label}{row.prefix}… ({row.scope}) for {owner}", details=details,
    )  # fmt: skip


def _iso(moment: Any) -> str | None:
    return moment.isoformat() if moment is not None else None


# A token's last use is kept to the minute: writing it on every request (every hook event
# of a busy agent) would cost each one a write for a figure nobody reads to the second.
USE_RESOLUTION = timedelta(minutes=1)


def _use_record(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= USE_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
