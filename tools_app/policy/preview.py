"""What a reviewer is shown for each part of a command: the part, and why it is held.

It combines dangerous.py and approvals.py, which both build on commands.py; it is a
module of its own, not a method of `CommandAnalysis`, so that commands.py imports
neither of them and the policy modules import each other in one direction only.
"""

from __future__ import annotations

from typing import Any

from tools_app.policy.commands import CommandAnalysis
from tools_app.policy.dangerous import command_danger
from tools_app.policy.risky_commands import command_approval_reasons


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
