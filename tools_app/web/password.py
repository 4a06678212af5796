"""A person's own password, changed by them: the old one first (a wrong one counts against
password sign-in's limits, so a borrowed browser cannot guess it), Django's validators on
the new one, every other browser signed in as them signed out, and the change in the audit
trail. Accounts that sign in through the provider have no password to change here."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm
from django.http import HttpRequest, HttpResponse
from django.urls import reverse_lazy

from tools_app.services.audit import Action, Via, audit_record
from tools_app.web.sign_in_forms import counted


class CountedPasswordChangeForm(PasswordChangeForm):
    request: HttpRequest | None = None

    def clean_old_password(self) -> str:
        old: str = counted(self.request, self.user.get_username(), super().clean_old_password)
        return old


class PasswordChange(auth_views.PasswordChangeView):
    template_name = "tools_app/password_change.html"
    form_class = CountedPasswordChangeForm
    success_url = reverse_lazy("password_change")

    def get_form(self, form_class: Any = None) -> Any:
        form = super().get_form(form_class)
        form.request = self.request
        return form

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        user: Any = self.request.user
        return {
            **super().get_context_data(**kwargs),
            "has_password": user.has_usable_password(),
            "sso_name": settings.AGENTWEB_OIDC_PROVIDER_NAME if settings.AGENTWEB_SSO else "",
        }

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user: Any = request.user
        if not user.has_usable_password():  # signs in through the provider only
            response = self.get(request, *args, **kwargs)
            response.status_code = 403
            return response
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)  # saved; this browser stays signed in
        user = form.user
        audit_record(
            action=Action.ACCOUNT_PASSWORD, via=Via.BROWSER, actor=user, object_type="user",
            object_id=user.pk, object_repr=user.get_username(),
            reason="changed by its owner; other browsers signed in as them are signed out",
        )  # fmt: skip
        messages.success(
            self.request,
            "Your password was changed. Other browsers signed in as you are signed out; your "
            "API tokens keep working (revoke them on the tokens page if one was exposed).",
        )
        return response
