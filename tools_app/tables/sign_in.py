"""Failed password sign-ins, counted by every web process alike (`services/sign_in.py`)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class SignInFailure(models.Model):
    """One password that did not match (or an attempt still being checked), kept for the
    window of AGENTWEB_SIGN_IN_LOCK_MINUTES; a success removes its pair's."""

    username = models.CharField(max_length=150)  # as counted: `core.sign_in.account_key`
    address = models.CharField(max_length=45)  # as counted: `core.sign_in.address_key`
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["username", "address", "at"], name="sign_in_failure_pair"),
            models.Index(fields=["address", "at"], name="sign_in_failure_address"),
            models.Index(fields=["at"], name="sign_in_failure_at"),
        ]

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"
