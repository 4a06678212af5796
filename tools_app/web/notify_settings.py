"""A person's own notification settings: how email channels tell them (immediately, in a
digest every N minutes, or not at all) and at which address.

Each mistake is shown on its field, checked by the same function the service refuses
with; the change itself is `services.notify_preference_set`.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from tools_app import services
from tools_app.models import NotifyPreference
from tools_app.selectors.channels import notify_preference_of
from tools_app.services.notifications import notify_preference_problems, notify_preference_set


class NotifyPreferenceForm(forms.Form):
    mode = forms.ChoiceField(
        label="Tell me",
        choices=[
            (NotifyPreference.Mode.IMMEDIATELY, "immediately, one email a call"),
            (NotifyPreference.Mode.DIGEST, "in a digest"),
            (NotifyPreference.Mode.OFF, "not at all"),
        ],
        widget=forms.RadioSelect,
        help_text="When a call that waits for a person reaches an email channel that tells "
        "you (as a reviewer, or as a member of its group).",
    )
    digest_minutes = forms.IntegerField(
        label="Digest every (minutes)",
        required=False,
        help_text="With a digest: one email collecting the calls that waited meanwhile.",
    )
    email = forms.CharField(label="Email address", required=False, max_length=254)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        problems = notify_preference_problems(
            mode=data.get("mode", ""),
            digest_minutes=data.get("digest_minutes"),
            email=str(data.get("email") or "").strip(),
        )
        for field, problem in problems.items():
            self.add_error(field, problem)
        return data


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def notify_settings(request: HttpRequest) -> HttpResponse:
    user: Any = request.user  # logged in (login_required)
    saved = notify_preference_of(user)
    initial = {"mode": saved.mode, "digest_minutes": saved.digest_minutes, "email": user.email}
    form = NotifyPreferenceForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            notify_preference_set(
                user=user, mode=data["mode"], digest_minutes=data["digest_minutes"],
                email=str(data["email"] or "").strip(),
            )  # fmt: skip
        except services.ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Your notification settings are saved.")
            return redirect("notify_settings")
    return render(request, "tools_app/notify_settings.html", {"form": form})
