"""Forms: the policy forms show lists one item a line and validate with the policy loader."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.models import Group

from tools_app.core.policy.loader import validate_policy_dict
from tools_app.core.policy.types import POLICY_SETTINGS, PolicyField
from tools_app.core.tools.registry import REGISTRY
from tools_app.models import EgressCredential, Policy, PolicyRule
from tools_app.services.credentials import credential_problems


class LinesField(forms.CharField):
    """A list of strings edited as one item a line."""

    widget = forms.Textarea(attrs={"rows": 6, "cols": 60})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


def _policy_groups() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The settings by admin section, sections in PolicySpec's order; in each, the lists
    (tall text areas) come first."""
    groups: dict[str, list[PolicyField]] = {}
    for spec_field in POLICY_SETTINGS:
        groups.setdefault(spec_field.group, []).append(spec_field)
    return tuple(
        (group, tuple(f.name for f in sorted(members, key=lambda f: f.kind != "list")))
        for group, members in groups.items()
    )


POLICY_GROUPS = _policy_groups()


class PolicyForm(forms.ModelForm[Policy]):
    class Meta:
        model = Policy
        fields = ("name", "description", *(name for _, names in POLICY_GROUPS for name in names))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for spec_field in POLICY_SETTINGS:
            if spec_field.kind == "list":
                self.fields[spec_field.name] = LinesField(required=False, help_text=spec_field.help)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        data = {key: value for key, value in cleaned.items() if key != "description"}
        data.setdefault("name", "policy")
        for problem in validate_policy_dict(data):
            field = problem.field.split(".")[0].split("[")[0]
            target = field if field in self.fields else None
            self.add_error(target, f"{problem.field}: {problem.message}")
        return cleaned


class PolicyRuleForm(forms.ModelForm[PolicyRule]):
    class Meta:
        model = PolicyRule
        fields = (
            "position", "tool", "args", "decision", "reason", "approvals", "approvers", "hosts",
        )  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["approvals"].required = False  # left empty: one approval, as before
        if "hosts" in self.fields:
            self.fields["hosts"].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("tool") or not cleaned.get("decision"):
            return cleaned
        rule = {key: cleaned.get(key) for key in ("tool", "args", "decision", "reason")}
        rule["args"] = rule["args"] or {}
        rule["reason"] = rule["reason"] or ""
        cleaned["approvals"] = count = cleaned.get("approvals") or 1
        group = cleaned.get("approvers") or ""
        if count > 1 or group:
            rule["approvals"] = {"count": count, "group": group}
            if group and not Group.objects.filter(name=group).exists():
                self.add_error("approvers", f"No group is named {group!r}.")
        if cleaned.get("hosts") is not None:
            rule["hosts"] = cleaned["hosts"]
        for problem in validate_policy_dict({"name": "rule-check", "rules": [rule]}):
            field = problem.field.removeprefix("rules[0].").split(".")[0]
            field = "approvers" if problem.field.endswith(".group") else field
            self.add_error(
                field if field in self.fields else None, f"{problem.field}: {problem.message}"
            )
        return cleaned


class TryCallForm(forms.Form):
    """A sample call for the admin's "Try a call": a core tool and its arguments as JSON."""

    tool = forms.ChoiceField(choices=[])
    args = forms.CharField(
        label="Arguments (JSON)",
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        initial="{}",
        help_text='A JSON object, for example {"path": ".github/workflows/ci.yml"}.',
    )
    session = forms.IntegerField(
        required=False,
        min_value=1,
        help_text="Optional: judge the call against this session's workspace and counters.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tool_field = self.fields["tool"]
        assert isinstance(tool_field, forms.ChoiceField)
        tool_field.choices = [(name, name) for name in sorted(REGISTRY)]

    def clean_args(self) -> dict[str, Any]:
        try:
            value = json.loads(self.cleaned_data["args"])
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("The arguments must be a JSON object: {...}.")
        return value


class EgressCredentialForm(forms.ModelForm[EgressCredential]):
    """A credential's host, header and project; its secret is typed, never shown back
    (the field is always empty: left empty on a change, the stored secret stays)."""

    secret_value = forms.CharField(
        label="Secret",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="The header's value (e.g. `Bearer …`). Write-only: it is never shown; "
        "leave empty to keep the stored one.",
    )

    class Meta:
        model = EgressCredential
        fields = ("host", "header", "project")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        secret = cleaned.get("secret_value") or None
        if self.instance.pk is None and secret is None:
            self.add_error("secret_value", "A new credential needs its secret.")
        problems = credential_problems(
            host=cleaned.get("host") or "", header=cleaned.get("header") or "", secret=secret
        )
        for name, message in problems.items():
            self.add_error("secret_value" if name == "secret" else name, message)
        return cleaned
