"""The new-session form: each field checked the way `session_start` checks it, so a
mistake is shown on its field instead of as one message for the whole form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings

from tools_app import access
from tools_app.errors import ServiceError
from tools_app.models import Policy
from tools_app.runtime.providers.specs import ROLE_SETTINGS
from tools_app.services import workspaces
from tools_app.services.providers import model_roles, model_spec_resolve


class SessionForm(forms.Form):
    repo = forms.CharField(
        label="Repository",
        max_length=1000,
        help_text="A path on the server or a git URL; the session works in its own clone.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    task = forms.CharField(
        label="Task",
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="What the agent should do, as you would tell a colleague.",
    )
    model = forms.CharField(
        label="Model",
        max_length=200,
        required=False,
        help_text="A role (fast, coder, architect) or a spec such as openai:gpt-4.1. "
        "Empty: an external agent sends the tool calls.",
        widget=forms.TextInput(
            attrs={"list": "model-roles", "autocomplete": "off", "spellcheck": "false"}
        ),
    )
    project = forms.ChoiceField(
        label="Project",
        required=False,
        help_text="Who sees and decides its calls. Empty: the project that owns the "
        "repository, else default.",
    )
    policy = forms.ChoiceField(
        label="Policy",
        required=False,
        help_text="What the agent may do unasked. Empty: the project's policy, else default.",
    )

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(Policy.objects.order_by("name").values_list("name", flat=True))
        policy = self.fields["policy"]
        assert isinstance(policy, forms.ChoiceField)
        policy.choices = [("", "The project's policy"), *((name, name) for name in names)]
        project = self.fields["project"]
        assert isinstance(project, forms.ChoiceField)
        mine = access.seen_projects(user).values_list("name", flat=True) if user else []
        project.choices = [("", "By repository"), *((name, name) for name in mine)]

    def clean_repo(self) -> str:
        try:
            return workspaces.check_repo(self.cleaned_data["repo"], settings.AGENTWEB_REPO_ROOTS)
        except workspaces.WorkspaceError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean_task(self) -> str:
        task = str(self.cleaned_data["task"])
        if not task.strip():
            raise forms.ValidationError("Say what the agent should do.")
        return task

    def clean_model(self) -> str:
        model = str(self.cleaned_data.get("model") or "").strip()
        if model:
            try:
                model_spec_resolve(model)
            except ServiceError as exc:
                raise forms.ValidationError(str(exc).removeprefix("`model`: ")) from exc
        return model


@dataclass(frozen=True)
class RoleHint:
    """A model role as the form explains it: its spec, or the setting that would give one."""

    role: str
    spec: str  # "" when the role is not configured
    setting: str  # the environment variable that configures it


def configured_roles() -> list[RoleHint]:
    """Each role with its spec or the setting to set, for the form's hints."""
    return [
        RoleHint(role=role, spec=spec, setting=ROLE_SETTINGS[role])
        for role, spec in model_roles().items()
    ]
