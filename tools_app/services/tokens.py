"""API tokens: shown once when made, stored as a SHA-256."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from tools_app.models import ApiToken
from tools_app.services.audit import Action, Via, audit_record

TOKEN_PREFIX = "aw_"  # noqa: S105  (a marker, not a secret)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_create(*, user: Any, scope: str, by: Any = None, via: str = Via.CLI) -> str:
    """Make a token for `user` and return it; only its hash is kept. `by`: who made it
    (None: an operator at the command line)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        row = ApiToken.objects.create(
            user=user, scope=scope, token_hash=_digest(token), prefix=token[:10]
        )
        audit_record(
            action=Action.TOKEN_CREATE, via=via, actor=by, object_type="api_token",
            object_id=row.pk, object_repr=f"{row.prefix}… ({scope}) for {user.get_username()}",
            details={"user": user.get_username(), "scope": scope, "prefix": row.prefix},
        )  # fmt: skip
    return token


def api_token_authenticate(*, token: str) -> ApiToken | None:
    """The live token behind a bearer string, its use recorded; None when unknown."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    found = (
        ApiToken.objects.select_related("user")
        .filter(token_hash=_digest(token), revoked=False, user__is_active=True)
        .first()
    )
    if found is not None:
        _use_record(found)
    return found


# A token's last use is kept to the minute: writing it on every request (every hook event
# of a busy agent) would cost each one a write for a figure nobody reads to the second.
USE_RESOLUTION = timedelta(minutes=1)


def _use_record(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= USE_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
