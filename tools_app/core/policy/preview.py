"""What a reviewer is shown for each part of a command: the part, and why it is held.

It combines dangerous.py and risky_commands.py, which both build on the shell analysis
(`tools_app.core.shell`); it is a module of its own, not a method of `CommandAnalysis`, so
that the shell analysis imports no policy and the policy modules import each other in
one direction only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tools_app.core.policy.dangerous import command_danger
from tools_app.core.policy.risky_commands import command_approval_reasons
from tools_app.core.policy.targets import secret_targets
from tools_app.core.shell.commands import CommandAnalysis


def command_review(
    analysis: CommandAnalysis, workspace: Path, secret_patterns: tuple[str, ...]
) -> tuple[list[dict[str, Any]], set[str]]:
    """The policy's part of run_command's preview (`tools.base.ReviewCommand`): the parts
    with why each is held, and the secret files the command names. The engine passes it
    to the tools, which import no policy."""
    named = {path for _, path, _ in secret_targets(analysis, workspace, secret_patterns)}
    return parts_for_preview(analysis), named


def parts_for_preview(analysis: CommandAnalysis) -> list[dict[str, Any]]:
    """The parsed simple commands as JSON-able dicts, for a reviewer's preview.

    `why` lists, for each command, what makes it dangerous, need a person, or
    impossible to check; an empty list means nothing in it did.
    """
    parts = []
    for command in analysis.commands:
        danger = command_danger(command)
        why = [*([danger] if danger else []), *command_approval_reasons(command)]
        parts.append({**command.as_dict(), "why": [*why, *command.notes]})
    return parts
