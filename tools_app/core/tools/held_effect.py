"""apply_command_effect: the internal tool that applies a command's effect a person
approved. The lifecycle opens its call, awaiting a person, when the policy holds an
effect (`services/effects.py`); agents are never offered it."""

from __future__ import annotations

from pydantic import Field

from tools_app.core.tools.base import ToolArgs, ToolContext
from tools_app.core.tools.effect_apply import apply_effect, drop_held_effect, load_held_effect
from tools_app.core.tools.errors import ToolError

DESCRIPTION = "Apply exactly the held effect of a command that a person approved."


class ApplyEffectArgs(ToolArgs):
    command_call: int = Field(description="The command's tool call, whose effect is held.")
    effect: str = Field(max_length=64, description="The held effect's digest.")


def apply_command_effect(ctx: ToolContext, args: ApplyEffectArgs) -> str:
    """Apply the held bytes, if the workspace still matches what was shown; then forget
    them. Nothing is applied, and they stay held, when anything differs."""
    if ctx.effect_store is None:
        raise ToolError("Not applied: this context has no store of held effects.")
    try:
        effect = load_held_effect(ctx.effect_store, args.effect)
        notes = apply_effect(ctx.workspace, effect)
    except ToolError as exc:
        raise ToolError(f"Not applied: {exc}") from None
    drop_held_effect(ctx.effect_store, args.effect)
    return "\n".join(notes) or "Nothing to apply."
