"""spawn_subagent: child sessions, their reports, tokens and approvals. The turns run in
this process (`eager`); cancelling a family while a real worker runs it is marked `worker`.

Neither has a `fast` model, so a sub-agent falls back to its parent's model:
the same script, replayed from its first step as a new conversation. A script that starts
with spawn_subagent therefore nests until the depth cap (2) stops the deepest child."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User

from tests.helpers import Worker
from tests.integration.agent_helpers import (
    done,
    messages,
    results,
    script,
    start_agent,
    tool,
    wait_for,
    wait_status,
)
from tests.integration.helpers import Api
from tools_app import services
from tools_app.models import AgentMessage, AgentSession, Policy, ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]

CI = ".github/workflows/ci.yml"
SPAWN = tool("spawn_subagent", title="Look around", description="Map the repo.", modelRole="fast")


def family(root_id: int) -> list[AgentSession]:
    """The session, its child and its grandchild."""
    chain = [AgentSession.objects.get(pk=root_id)]
    while child := AgentSession.objects.filter(parent=chain[-1]).first():
        chain.append(child)
    return chain


def own_tokens(session: AgentSession) -> tuple[int, int]:
    replies = AgentMessage.objects.filter(session=session, role="assistant")
    return sum(r.tokens_in for r in replies), sum(r.tokens_out for r in replies)


def test_sub_agents_inherit_report_back_and_stop_at_the_depth_cap(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    model = script(tmp_path, [SPAWN, done("level finished", ("notes.md",))])
    parent_id = start_agent(alice, workspace, model)
    assert wait_status(parent_id).status == "done"
    parent, child, grandchild = family(parent_id)
    for young, old in ((child, parent), (grandchild, child)):
        assert (young.parent_id, young.depth, young.status) == (old.pk, old.depth + 1, "done")
        assert (young.workspace, young.repo, young.model) == (old.workspace, old.repo, old.model)
        assert (young.policy_id, young.creator_id) == (old.policy_id, old.creator_id)
        assert young.task == "Look around\n\nMap the repo."
        assert young.parent_call == ToolCall.objects.get(session=old, tool="spawn_subagent")
        assert young.max_iterations == 30
    capped = results(grandchild.pk)[0]
    assert capped["is_error"] and "nest at most 2 deep" in capped["content"]
    assert not AgentSession.objects.filter(parent=grandchild).exists()
    report = results(parent_id)[0]["content"]
    assert report.startswith(f"Sub-agent session {child.pk} ended: done.")
    assert "Summary: level finished" in report and "Files changed: notes.md" in report
    assert f"Tokens: {child.tokens_in} in, {child.tokens_out} out." in report
    assert "sub-agent (depth" not in parent.system_prompt
    assert "sub-agent (depth 1)" in child.system_prompt


def test_a_failed_sub_agent_is_a_failed_call_with_its_reason(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    parent_id = start_agent(alice, workspace, script(tmp_path, [SPAWN, {"say": "Hmm."}]))
    assert wait_status(parent_id).status == "failed"
    parent, child, grandchild = family(parent_id)
    assert [s.status for s in (child, grandchild)] == ["failed", "failed"]
    assert grandchild.summary.startswith("The agent stopped without calling task_done.")
    report = results(parent_id)[0]
    assert report["is_error"]
    assert report["content"].startswith(f"Error: Sub-agent session {child.pk} ended: failed.")
    assert f"Summary: {child.summary}" in report["content"]
    spawn = ToolCall.objects.get(session=parent, tool="spawn_subagent")
    assert spawn.status == "failed" and report["content"] == f"Error: {spawn.result}"


def test_a_parent_counts_its_sub_agents_tokens_separately_too(
    alice: Api, workspace: Path, tmp_path: Path
) -> None:
    parent_id = start_agent(alice, workspace, script(tmp_path, [SPAWN, done()]))
    wait_status(parent_id)
    parent, child, grandchild = family(parent_id)
    assert (grandchild.subagent_tokens_in, grandchild.subagent_tokens_out) == (0, 0)
    assert (child.subagent_tokens_in, child.subagent_tokens_out) == (
        grandchild.tokens_in,
        grandchild.tokens_out,
    )
    assert (parent.subagent_tokens_in, parent.subagent_tokens_out) == (
        child.tokens_in,
        child.tokens_out,
    )
    for session in (parent, child, grandchild):
        mine_in, mine_out = own_tokens(session)
        assert mine_in > 0 and mine_out > 0
        assert session.tokens_in == mine_in + session.subagent_tokens_in
        assert session.tokens_out == mine_out + session.subagent_tokens_out


def test_a_sub_agents_protected_write_waits_under_the_four_eyes_rule(
    alice: Api, rita: Api, creator: User, reviewer: User, workspace: Path, tmp_path: Path
) -> None:
    Policy.objects.filter(name="default").update(require_distinct_reviewer=True)
    creator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    alice_reviews = Api(services.api_token_create(user=creator, scope="review"))
    steps = [SPAWN, tool("write_file", path=CI, content="name: ci\n"), done("CI added")]
    parent_id = start_agent(alice, workspace, script(tmp_path, steps))
    for depth in (2, 1, 0):  # the deepest agent writes first, then each parent in turn
        waiting = wait_for(
            lambda d=depth: ToolCall.objects.filter(
                session__depth=d, session__in=family(parent_id), status="awaiting_approval"
            ).first(),
            what=f"the write at depth {depth}",
        )
        assert waiting.tool == "write_file" and waiting.session.status == "waiting"
        assert waiting.pk in [item["id"] for item in rita.get("/approvals").json()["items"]]
        path = f"/tool-calls/{waiting.pk}/decision"
        refused = alice_reviews.post(path, {"decision": "approve"})
        assert refused.status_code == 403, refused.content
        assert rita.post(path, {"decision": "approve"}).status_code == 200
    assert wait_status(parent_id).status == "done"
    assert [s.status for s in family(parent_id)] == ["done", "done", "done"]
    assert Path(family(parent_id)[0].workspace, CI).read_text() == "name: ci\n"
    writes = ToolCall.objects.filter(tool="write_file", status="succeeded")
    assert writes.count() == 3
    assert {call.human.user_id for call in writes} == {reviewer.pk}


@pytest.mark.worker
def test_cancelling_a_parent_cancels_its_waiting_sub_agents(
    alice: Api, workspace: Path, tmp_path: Path, stack: Worker
) -> None:
    steps = [SPAWN, tool("write_file", path=CI, content="x\n"), done()]
    parent_id = start_agent(alice, workspace, script(tmp_path, steps))
    waiting = wait_for(
        lambda: ToolCall.objects.filter(status="awaiting_approval").first(), what="a wait"
    )
    assert waiting.session.depth == 2
    assert alice.post(f"/sessions/{parent_id}/cancel", {}).status_code == 200
    assert [s.status for s in family(parent_id)] == ["cancelled"] * 3
    waiting.refresh_from_db()
    assert waiting.status == "cancelled"
    spawns = ToolCall.objects.filter(tool="spawn_subagent").exclude(status="failed")
    assert {call.status for call in spawns} == {"cancelled"}
    counts = {s.pk: len(messages(s.pk)) for s in family(parent_id)}
    stack.wait_idle()  # a turn task still in flight would have added a message
    assert {s.pk: len(messages(s.pk)) for s in family(parent_id)} == counts
