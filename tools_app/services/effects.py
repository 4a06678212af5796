"""A command's effect: applied whole, held whole for a person, or refused whole.

The effect handler runs in the worker while the command's copy-on-write scratch still
exists. An effect that waits for a person is copied to a store under AGENTWEB_VAR and
becomes its own tool call (`apply_command_effect`, never offered to agents) whose
preview is the whole diff; approving it applies exactly those bytes, if the workspace
still matches (the tool is `tools/held_effect.py`, run like any other).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from tools_app.core import command_effects, engine, outcomes
from tools_app.core.egress.grant import Connection
from tools_app.core.policy.types import PolicySpec, SessionCounters
from tools_app.core.tools import git_runner
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.catalogue import EFFECT_TOOL
from tools_app.core.tools.effect import Effect
from tools_app.core.tools.effect_apply import apply_effect, hold_effect
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.shell import UNSANDBOXED_NOTE
from tools_app.models import AgentSession, ToolCall
from tools_app.services.lifecycle import POLICY, effect_store, tool_call_create
from tools_app.services.policies import load_policy_or_denial
from tools_app.services.sessions import session_count_lines

NOTES_SHOWN = 20
Status = ToolCall.Status


class EffectJudge:
    """The judge for what `call`'s command changed: its answer is a note for the agent,
    and `outcome` keeps what became of the change for the call's record."""

    def __init__(self, *, call: ToolCall, approved: bool) -> None:
        self.call, self.approved = call, approved
        self.outcome: outcomes.CallOutcome | None = None

    def __call__(self, effect: Effect) -> str:
        session = AgentSession.objects.select_related("policy").get(pk=self.call.session_id)
        spec = load_policy_or_denial(session.policy)
        if not isinstance(spec, PolicySpec):
            self.outcome = outcomes.refused(spec.reason)
            return f"note: nothing the command changed was applied: {spec.reason}"
        try:
            note, self.outcome = _judge_and_apply(
                self.call, session, spec, effect, approved=self.approved
            )
        except ToolError as exc:
            self.outcome = outcomes.refused(str(exc))
            raise
        return note


def effect_handler(*, call: ToolCall, approved: bool) -> EffectJudge:
    return EffectJudge(call=call, approved=approved)


def command_outcome(
    context: ToolContext, result: str, connections: tuple[Connection, ...] = ()
) -> outcomes.CallOutcome | None:
    """What a run's command changed, whether it had the network and what it reached
    (None: it ran no command)."""
    judge = context.effect_handler
    return outcomes.command_outcome(
        judge.outcome if isinstance(judge, EffectJudge) else None,
        unsandboxed=result.endswith(UNSANDBOXED_NOTE),
        granted=context.sandbox.egress is not None,
        output=result,
        connections=connections,
    )


def _judge_and_apply(
    call: ToolCall, session: AgentSession, spec: PolicySpec, effect: Effect, *, approved: bool
) -> tuple[str, outcomes.CallOutcome]:
    """The whole effect applies, waits for a person, or is refused: never a part of it.
    The note for the agent, and the outcome for the call's record."""
    workspace = Path(session.workspace)
    removed = command_effects.removed_trees(workspace, effect)
    below = [path for files in removed.values() for path in files or []]
    ignored = git_runner.ignored_paths(workspace, [*(e.path for e in effect.entries), *below])
    counters = SessionCounters(
        total_changed_lines=session.total_changed_lines,
        changed_since_approval=session.changed_since_approval,
    )
    verdict = command_effects.judge_effect(
        spec, effect, workspace, counters, ignored=ignored, approved=approved,
        removed=removed, index_unchanged=_index_unchanged(workspace, effect),
    )  # fmt: skip
    if verdict.action == "refuse":
        note = f"note: nothing the command changed was applied: {verdict.reason}"
        return note, outcomes.effect_outcome(verdict)
    whole = effect.only(set(verdict.paths))
    if verdict.action == "hold":
        held = effect_hold(call=call, effect=whole, verdict=verdict)
        shown = ", ".join(sorted(verdict.paths)[:NOTES_SHOWN])
        more = len(verdict.paths) - NOTES_SHOWN
        note = (
            f"note: nothing the command changed is in the workspace yet: all of it waits for "
            f"a reviewer (tool call {held.pk}): {shown}{f' and {more} more' if more > 0 else ''}."
            f" Why: {verdict.reason}"
        )
        return note, outcomes.effect_outcome(verdict, held_call=held.pk)
    notes = apply_effect(workspace, whole)
    if verdict.changed_lines:
        session_count_lines(
            session_id=session.pk, lines=verdict.changed_lines, approved_by_human=approved
        )
    return _as_notes(notes), outcomes.effect_outcome(verdict)


def _index_unchanged(workspace: Path, effect: Effect) -> bool:
    """True unless the command rewrote `.git/index` with other entries than the
    workspace's (what `git add` does, unlike the stat refresh of `git status`)."""
    index = next((e for e in effect.entries if e.path == command_effects.GIT_INDEX), None)
    if index is None:
        return True
    if index.kind != "file":
        return False  # deleted or replaced: a change to .git like any other
    listing = ["ls-files", "--stage", "-v", "-z"]
    upper_index = str(effect.blobs / command_effects.GIT_INDEX)
    try:
        before = git_runner.run_git(workspace, listing)
        after = git_runner.run_git(
            workspace, listing, env=git_runner.git_env({"GIT_INDEX_FILE": upper_index})
        )
    except ToolError:
        return False
    return before == after


def _as_notes(notes: list[str]) -> str:
    shown = notes[:NOTES_SHOWN]
    if len(notes) > NOTES_SHOWN:
        shown.append(f"… and {len(notes) - NOTES_SHOWN} more changes")
    return "\n".join(f"note: {note}" for note in shown)


def effect_hold(
    *, call: ToolCall, effect: Effect, verdict: command_effects.EffectVerdict
) -> ToolCall:
    """Keep an effect's held part and open its own call, awaiting a person."""
    session = call.session
    held = hold_effect(effect, effect_store())
    digest = held.digest()
    args = {"command_call": call.pk, "effect": digest}
    changed = verdict.changed_lines
    preview = {
        "command": call.args.get("command") or (call.preview or {}).get("command", ""),
        "command_call": call.pk,
        "files": [e.path for e in held.entries],
        "diff": command_effects.effect_diff(Path(session.workspace), held),
        "changed_lines": changed,
        "state": {"effect": digest},
    }
    reason = f"the command's changes wait for a person: {verdict.reason}"
    # born waiting, as any call that waits: its event, the session's wait, the channels
    return tool_call_create(
        "hold_effect", by=POLICY, session=session, tool=EFFECT_TOOL, args=args,
        args_hash=engine.args_hash(EFFECT_TOOL, args), verdict="require_approval",
        reason=reason, rule="builtin:command-effect", preview=preview, changed_lines=changed,
        policy_version=session.policy.version,
        expires_at=timezone.now() + timedelta(seconds=session.policy.approval_timeout_seconds),
    )  # fmt: skip
