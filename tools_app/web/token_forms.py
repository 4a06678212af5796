"""The forms that make a token: the tokens page's and the Connect page's. Each mistake is
shown on its field; the scope rule is `access.may_take_token_scope`, the one the service
holds too."""

from __future__ import annotations

from typing import Any

from django import forms

from tools_app import access
from tools_app.core.agent_connect import INTEGRATIONS
from tools_app.models import ApiToken
from tools_app.selectors.agent_connect import policy_choices

NEVER = "never"
EXPIRY_CHOICES = [("7", "in 7 days"), ("30", "in 30 days"), ("90", "in 90 days"),
                  ("365", "in a year"), (NEVER, "never")]  # fmt: skip
DEFAULT_EXPIRY = "90"


def expiry_field() -> forms.ChoiceField:
    return forms.ChoiceField(
        label="Expires",
        choices=EXPIRY_CHOICES,
        initial=DEFAULT_EXPIRY,
        help_text="An expired token stops working; make a new one then. "
        "Revoke a token as soon as you no longer need it.",
    )


def project_field(user: Any) -> forms.ChoiceField:
    mine = access.seen_projects(user).values_list("name", flat=True)
    return forms.ChoiceField(
        label="Project",
        required=False,
        choices=[("", "By the agent's folder"), *((name, name) for name in mine)],
        help_text="The project of the sessions its hooks start: who sees and decides "
        "their calls. Empty: the project whose repositories claim the agent's folder, "
        "else default.",
    )


def expiry_days(choice: str) -> int | None:
    return None if choice == NEVER else int(choice)


class TokenForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        error_messages={"required": "Name the token, so that you know it in the list."},
        help_text="What it is for, such as “laptop Claude Code”: the list shows it.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    scope = forms.ChoiceField(
        label="Scope",
        choices=[
            (ApiToken.Scope.AGENT, "agent: start and follow sessions, send tool calls, hooks"),
            (ApiToken.Scope.REVIEW, "review: everything you may do, deciding calls included"),
        ],
        initial=ApiToken.Scope.AGENT,
        widget=forms.RadioSelect,
        help_text="A review token is only for reviewers (the reviewers group): it decides calls.",
    )
    expires = expiry_field()

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.fields["project"] = project_field(user)

    def clean_name(self) -> str:
        return " ".join(str(self.cleaned_data["name"]).split())

    def clean_scope(self) -> str:
        scope = str(self.cleaned_data["scope"])
        if not access.may_take_token_scope(self.user, scope):
            raise forms.ValidationError(
                "Only reviewers may take a review token: take an agent token, or ask an "
                "admin to add you to the reviewers group."
            )
        return scope


class ConnectForm(forms.Form):
    agent = forms.ChoiceField(
        label="Your agent",
        choices=[(name, it.label) for name, it in INTEGRATIONS.items()],
        initial="claude-code",
        widget=forms.RadioSelect,
    )
    policy = forms.ChoiceField(
        label="Policy",
        choices=policy_choices,
        initial="default",
        help_text="What your agent may do without a person (hooks only: an MCP client "
        "names the policy when it starts a session).",
    )
    expires = expiry_field()

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"] = project_field(user)
