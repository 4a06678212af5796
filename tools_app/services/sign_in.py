"""Password sign-in's limits (`core/sign_in.py` says whose failures count together): a run
of wrong passwords shuts password sign-in for that account from that address, and a longer
run for the whole address, for AGENTWEB_SIGN_IN_LOCK_MINUTES. Counted in the database, so
that every web process behind the proxy counts the same failures.

An attempt is written before its password is checked and counted as a failure until it
succeeds: attempts sent at once each see the others, so no more than the limit are ever
checked, however many arrive together. An attempt refused while the door is shut is not
kept: it checked nothing, and only the failures that were checked decide when it opens.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from tools_app.core.sign_in import Limits, account_key, address_key, refusal, shut_for
from tools_app.models import SignInFailure
from tools_app.services.audit import Action, Via, audit_record

log = logging.getLogger(__name__)


class SignInShut(Exception):
    """Password sign-in is shut for this account from this address (or for the address);
    the message is for the person signing in, `seconds` how long it stays shut."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


class Attempt:
    """One password being checked; `succeeded()` once it matched."""

    def __init__(self) -> None:
        self.matched = False

    def succeeded(self) -> None:
        self.matched = True


def limits() -> Limits:
    return Limits(
        attempts=settings.AGENTWEB_SIGN_IN_ATTEMPTS,
        window=timedelta(minutes=settings.AGENTWEB_SIGN_IN_LOCK_MINUTES),
    )


@contextmanager
def sign_in_attempt(*, username: str, address: str) -> Iterator[Attempt]:
    """Around one password check: raises SignInShut, before anything is checked, while the
    door is shut; an attempt that leaves without `succeeded()` is a failure."""
    who, where, rule, now = account_key(username), address_key(address), limits(), timezone.now()
    row = SignInFailure.objects.create(username=who, address=where, at=now)
    others = SignInFailure.objects.filter(at__gt=now - rule.window).exclude(pk=row.pk)
    pair = _times(others.filter(username=who, address=where))
    whole = _times(others.filter(address=where))
    pair_wait = shut_for(pair, rule.attempts, rule.window, now)
    address_wait = shut_for(whole, rule.address_attempts, rule.window, now)
    if pair_wait or address_wait:
        row.delete()
        seconds = max(pair_wait, address_wait)
        raise SignInShut(refusal(seconds, whole_address=not pair_wait), seconds)
    attempt = Attempt()
    try:
        yield attempt  # a wrong password leaves by an exception (the form's ValidationError)
    finally:
        if attempt.matched:
            SignInFailure.objects.filter(username=who, address=where).delete()
        else:
            _note_if_now_shut(username, who, where, rule, len(pair) + 1, len(whole) + 1)


def _times(rows: QuerySet[SignInFailure]) -> list[datetime]:
    return list(rows.values_list("at", flat=True))


def _note_if_now_shut(
    username: str, who: str, where: str, rule: Limits, pair: int, whole: int
) -> None:
    """The failure that shuts the door is logged and kept in the audit trail, once."""
    if pair == rule.attempts:
        scope, failures = "this account from this address", pair
    elif whole == rule.address_attempts:
        scope, failures = "every account from this address", whole
    else:
        return
    minutes = settings.AGENTWEB_SIGN_IN_LOCK_MINUTES
    reason = (
        f"{failures} failed passwords within {minutes} minutes: password sign-in to {scope} "
        f"is shut for {minutes} minutes"
    )
    log.warning("sign-in of %r from %s: %s", username[:150], where, reason)
    audit_record(
        action=Action.SIGN_IN_LOCK, via=Via.BROWSER, object_type="sign-in",
        object_id=who, object_repr=f"{username[:150]} from {where}", reason=reason,
        details={"address": where, "failures": failures, "minutes": minutes},
    )  # fmt: skip


def sign_in_prune(*, now: datetime | None = None) -> int:
    """Forget failures older than the window (the clock's sweep)."""
    before = (now or timezone.now()) - limits().window
    deleted, _ = SignInFailure.objects.filter(at__lte=before).delete()
    return deleted


def sign_in_clear(*, username: str = "", address: str = "", by: Any = None,
                  via: str = Via.CLI) -> int:  # fmt: skip
    """Forget the failures of an account (from every address), of an address, or of the
    pair: password sign-in opens for them at once. Returns how many were forgotten."""
    if not username and not address:
        raise ValueError("name an account, an address, or both")
    failures = SignInFailure.objects.all()
    if username:
        failures = failures.filter(username=account_key(username))
    if address:
        failures = failures.filter(address=address_key(address))
    return sign_in_failures_delete(failures, by=by, via=via)


def sign_in_failures_delete(failures: QuerySet[SignInFailure], *, by: Any, via: str) -> int:
    """Delete these failures, and say so in the audit trail: who opened the door, for
    which accounts and addresses (the admin's delete, `sign_in_clear`)."""
    with transaction.atomic():
        pairs = sorted(set(failures.values_list("username", "address")))
        deleted, _ = failures.delete()
        if deleted:
            audit_record(
                action=Action.SIGN_IN_CLEAR, via=via, actor=by, object_type="sign-in",
                object_repr=", ".join(f"{who} from {where}" for who, where in pairs)[:300],
                reason=f"{deleted} failed sign-in{'s' if deleted != 1 else ''} forgotten",
                details={"failures": deleted, "pairs": [list(pair) for pair in pairs[:100]]},
            )  # fmt: skip
    log.info("sign-in failures cleared: %d (%s)", deleted, pairs[:10])
    return int(deleted)
