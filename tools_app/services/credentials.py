"""Egress credentials: set, replace and delete, each checked and audited.

The audit entry names the host, header and project and says whether the secret was
"set" or "replaced"; the secret itself is never in an entry, a log or an answer.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from tools_app.core.egress.patterns import covers, host_pattern_problem, normalised
from tools_app.errors import Invalid
from tools_app.models import EgressCredential
from tools_app.selectors.egress import policy_hosts
from tools_app.services.audit import Action, audit_record

# An HTTP header name (RFC 9110 token); never one the proxy itself sets.
_HEADER = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
_PROXY_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def credential_problems(*, host: str, header: str, secret: str | None) -> dict[str, str]:
    """Each problem by the field it is in (empty: the credential may be saved)."""
    problems: dict[str, str] = {}  # field name → message; never the secret
    if problem := host_pattern_problem(host):
        problems["host"] = problem
    elif not covers(policy_hosts(), host):
        problems["host"] = (
            f"no policy lets commands reach {host!r}: add it to a policy's command hosts "
            "(or a rule's hosts) first, so that the credential is only sent where a "
            "command may go"
        )
    if not _HEADER.fullmatch(header) or header.lower() in _PROXY_HEADERS:
        problems["header"] = f"{header!r} is not a request header the proxy may set"
    if secret is not None and (not secret.strip() or "\n" in secret or "\r" in secret):
        problems["secret"] = "must be one line of text (a header's value)"  # noqa: S105
    return problems


def egress_credential_save(
    *, credential: EgressCredential, secret: str | None, user: Any, via: str
) -> EgressCredential:
    """Store a new credential or a change of one: `secret` None keeps the stored one.
    Refused whole (Invalid naming each problem) when anything is wrong."""
    creating = credential.pk is None
    if creating and secret is None:
        raise Invalid("secret: a new credential needs its secret")
    problems = credential_problems(host=credential.host, header=credential.header, secret=secret)
    if problems:
        raise Invalid("; ".join(f"{name}: {message}" for name, message in problems.items()))
    credential.host = normalised(credential.host)
    if secret is not None:
        credential.secret = secret.strip()
    with transaction.atomic():
        if creating:
            credential.created_by = user if getattr(user, "is_authenticated", False) else None
        credential.save()
        said = "set" if creating else "replaced" if secret is not None else "kept"
        _audit(credential, Action.CREDENTIAL_CHANGE, user=user, via=via, said=said)
    return credential


def egress_credential_delete(*, credential: EgressCredential, user: Any, via: str) -> None:
    with transaction.atomic():
        _audit(credential, Action.CREDENTIAL_DELETE, user=user, via=via, said="deleted")
        credential.delete()


def _audit(credential: EgressCredential, action: str, *, user: Any, via: str, said: str) -> None:
    """`said`: what happened to the secret (set, replaced, kept, deleted), never it."""
    project = credential.project.name if credential.project is not None else ""
    details = {"host": credential.host, "header": credential.header, "secret": said}
    audit_record(
        action=action, via=via, actor=user, object_type="egress_credential",
        object_id=credential.pk, object_repr=str(credential), project=project,
        details=details | {"project": project or "every project"},
    )  # fmt: skip
