"""Channels as a file (issue #25), like policies: `export_channels` prints every channel
and Slack link without a secret, `import_channels` reads it back; a file with a missing
secret, a host not allowed, an unknown Slack user (or policy, group, field) is refused
whole, naming the channel and the field, and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command

from tests.integration.notify_servers import Receiver, serve
from tools_app import services
from tools_app.models import AgentSession, Channel, Delivery, Policy, SlackUser

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
SECRETS = ("hook-secret-4242", "xoxb-bot-token-4242", "signing-secret-4242")


@pytest.fixture(autouse=True)
def local_channels(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AGENTWEB_NOTIFY_HOSTS = ["127.0.0.1"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]  # the servers are local


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver(secret=SECRETS[0])
    server = serve(found)
    yield found
    server.shutdown()


def configured(base: str, reviewer: User) -> None:
    hook = Channel.objects.create(
        name="hook", kind="webhook", url=f"{base}/hook", secret=SECRETS[0],
        rules=["builtin:*"], sessions=[7],
    )  # fmt: skip
    hook.policies.add(Policy.objects.get(name="default"))
    Channel.objects.create(
        name="team", kind="slack", url=f"{base}/api", secret=SECRETS[1],
        signing_secret=SECRETS[2], slack_channel="C0TEAM", interactive=True, escalation=True,
    )  # fmt: skip
    mail = Channel.objects.create(name="oncall", kind="email", recipients=["ops@example.com"])
    mail.groups.add(Group.objects.create(name="oncall"))
    SlackUser.objects.create(slack_id="U0RITA", user=reviewer)


def export() -> str:
    out = StringIO()
    call_command("export_channels", stdout=out)
    return out.getvalue()


def import_file(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "channels.json"
    path.write_text(json.dumps(data))
    out = StringIO()
    call_command("import_channels", str(path), stdout=out)
    return out.getvalue()


def test_channels_export_without_secrets_and_import_back(
    receiver: Receiver, reviewer: User, tmp_path: Path, workspace: Path
) -> None:
    configured(receiver.url, reviewer)
    printed = export()
    assert not any(secret in printed for secret in SECRETS) and "secret" not in printed
    data = json.loads(printed)
    assert [c["name"] for c in data["channels"]] == ["hook", "oncall", "team"]
    assert data["slack_users"] == [{"slack_id": "U0RITA", "user": "rita"}]
    hook = data["channels"][0]
    assert (hook["policies"], hook["rules"], hook["sessions"]) == (["default"], ["builtin:*"], [7])

    # re-imported over themselves, without secrets: the saved ones are kept
    assert "Imported 3 channels" in import_file(tmp_path, data)
    assert Channel.objects.get(name="team").signing_secret == SECRETS[2]
    # into an empty installation: the secrets are given in the file
    Channel.objects.all().delete()
    SlackUser.objects.all().delete()
    data["channels"][0]["secret"] = SECRETS[0]
    data["channels"][2] |= {"secret": SECRETS[1], "signing_secret": SECRETS[2]}
    assert "1 Slack users" in import_file(tmp_path, data)
    assert json.loads(export()) == json.loads(printed)

    # the imported webhook signs with the imported secret: the receiver's check passes
    Channel.objects.filter(name="hook").update(sessions=[], rules=[])
    session = AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace), creator=reviewer,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "A=1\n"}
    )
    hook_sent = [r for r in receiver.received if r.path == "/hook"]
    assert len(hook_sent) == 1 and hook_sent[0].signed
    assert Delivery.objects.get(channel__name="hook").state == "sent"


def channel(**fields: Any) -> dict[str, Any]:
    return {"name": "new-hook", "kind": "webhook", "url": "http://127.0.0.1:9/h",
            "secret": "s", **fields}  # fmt: skip


BAD_FILES = [
    ({"channels": [channel(secret="")]}, "channel 'new-hook': secret: A webhook needs a secret"),
    ({"channels": [channel(url="https://evil.example/h")]},
     "channel 'new-hook': url: evil.example is not an allowed notification host"),
    ({"channels": [], "slack_users": [{"slack_id": "U0NOBODY", "user": "nobody"}]},
     "Slack user 'U0NOBODY': there is no agentweb user 'nobody'"),
    ({"channels": [], "slack_users": [{"slack_id": "rita", "user": "rita"}]},
     "Slack user 'rita': 'rita' is not a Slack user id"),
    ({"channels": [channel(policies=["nope"])]}, "channel 'new-hook': there is no policy 'nope'"),
    ({"channels": [channel(groups=["ops"])]}, "there is no group 'ops'"),
    ({"channels": [channel(kind="email", url="", secret="", recipients=["not-mail"])]},
     "recipients: 'not-mail' is not an email address"),
    ({"channels": [channel(kind="slack", url="", secret="xoxb-1", interactive=True)]},
     "signing_secret: Approve and Deny buttons need the signing secret"),
    ({"channels": [channel(colour="red")]}, "unknown field 'colour'"),
    ({"channels": [channel(sessions=["\u00b2"])]}, "sessions: '\u00b2' is not a session id"),
    ({"channels": [channel(enabled="yes")]}, "`enabled` is true or false"),
    ({"channels": [channel(), channel()]}, "A channel name appears twice"),
    ({"channels": [channel(name="bad name!")]}, "`name` is a slug"),
    ([], "A channels file holds one JSON object"),
]  # fmt: skip


@pytest.mark.django_db  # nothing is sent: each in a transaction rolled back, cheaply
@pytest.mark.parametrize(("data", "error"), BAD_FILES)
def test_a_bad_channels_file_is_a_clear_error_that_changes_nothing(
    reviewer: User, tmp_path: Path, data: Any, error: str
) -> None:
    configured("http://127.0.0.1:9", reviewer)
    before = export()
    if isinstance(data, dict):  # a good change alongside: refused with the rest
        good = {"name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/changed"}
        data = {**data, "channels": [good, *data["channels"]]}
    with pytest.raises(CommandError) as refused:
        import_file(tmp_path, data)
    assert error in str(refused.value)
    assert "Traceback" not in str(refused.value)
    assert export() == before
    assert Channel.objects.get(name="hook").secret == SECRETS[0]
