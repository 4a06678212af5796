"""The per-session cache of read-only results, and what a change makes stale."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.db.models import Q

from tools_app.core import engine
from tools_app.core.tools.catalogue import cached_with
from tools_app.models import CachedResult, ToolCall


def lookup(call: ToolCall) -> str | None:
    key = engine.cache_key(call.tool, call.args, Path(call.session.workspace))
    if key is None:
        return None
    entry = CachedResult.objects.filter(session_id=call.session_id, key=key.key).first()
    return entry.result if entry else None


@transaction.atomic(savepoint=False)
def after_success(call: ToolCall, result: str) -> None:
    """Store a cacheable result, or drop what the call may have made stale."""
    workspace = Path(call.session.workspace)
    key = engine.cache_key(call.tool, call.args, workspace)
    if key is not None:
        entry = CachedResult(
            session_id=call.session_id, key=key.key, tool=call.tool, scope=key.scope, result=result
        )
        # One INSERT … ON CONFLICT DO UPDATE, where update_or_create took five statements.
        CachedResult.objects.bulk_create(
            [entry],
            update_conflicts=True,
            unique_fields=["session", "key"],
            update_fields=["tool", "scope", "result"],
        )
        return
    invalidate(call.session_id, engine.invalidation_for(call.tool, call.args, workspace))


def invalidate(session_id: int, stale: engine.Invalidation) -> None:
    entries = CachedResult.objects.filter(session_id=session_id)
    if stale.everything:
        entries.delete()
        return
    condition = Q(pk__in=[])
    for path in stale.paths:
        condition |= Q(tool__in=cached_with("file"), scope=path)
        listings = [path, *engine.parent_dirs(path)]
        condition |= Q(tool__in=cached_with("tree"), scope__in=listings)
    if stale.git_state:
        condition |= Q(tool__in=cached_with("worktree"))
    entries.filter(condition).delete()
