"""Forms: the policy forms show lists one item a line and validate with the policy loader."""

from __future__ import annotations

from typing import Any

from django import forms

from tools_app.models import Policy, PolicyRule
from tools_app.policy import validate_policy_dict


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


class PolicyForm(forms.ModelForm[Policy]):
    protected_paths = LinesField(required=False, help_text="Gitignore-style patterns, one a line.")
    blocked_commands = LinesField(required=False, help_text="Commands to deny, one a line.")
    approval_commands = LinesField(
        required=False, help_text="Commands that need approval, beyond the built-in set."
    )
    secret_paths = LinesField(
        required=False,
        help_text="Patterns of files holding credentials: reading one needs a person; "
        "search never shows their contents.",
    )
    web_allow_hosts = LinesField(required=False, help_text="Hosts web_fetch may reach.")
    web_write_hosts = LinesField(
        required=False,
        help_text="Hosts web_fetch may send a body or a method other than GET/HEAD to "
        "without a person.",
    )

    class Meta:
        model = Policy
        fields = (
            "name",
            "description",
            "protected_paths",
            "secret_paths",
            "max_diff_lines",
            "require_approval_above",
            "blocked_commands",
            "approval_commands",
            "command_network",
            "web_allow_hosts",
            "web_write_hosts",
            "require_distinct_reviewer",
            "approval_timeout_seconds",
        )

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
        fields = ("position", "tool", "args", "decision", "reason")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("tool") or not cleaned.get("decision"):
            return cleaned
        rule = {key: cleaned.get(key) for key in ("tool", "args", "decision", "reason")}
        rule["args"] = rule["args"] or {}
        rule["reason"] = rule["reason"] or ""
        for problem in validate_policy_dict({"name": "rule-check", "rules": [rule]}):
            field = problem.field.removeprefix("rules[0].").split(".")[0]
            self.add_error(
                field if field in self.fields else None, f"{problem.field}: {problem.message}"
            )
        return cleaned
