from __future__ import annotations
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from tools_app import services
from tools_app.models import AgentSession, Policy

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

def test_count(workspace, creator):
    session = AgentSession.objects.create(task="t", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"), creator=creator)
    services.tool_call_run_in_process(session=session, tool="read_file", args={"path": "README.md"})
    session = AgentSession.objects.get(pk=session.pk)
    call = services.tool_call_receive(session=session, tool="read_file", args={"path": "src/app.py"})
    with CaptureQueriesContext(connection) as q:
        services.tool_call_evaluate(tool_call_id=call.pk)
    for x in q.captured_queries:
        print(x["sql"][:150])
    print("N", len(q))
    assert 0
