"""Hosts in the policy and connections on the record (issue 35): the dry run and the card
say which hosts a command gets, what runs after an approval gets exactly that, a
remembered rule carries its grant and never more, each connection a command tried is on
its call (API, card, timeline, audit export), and a credential is stored write-only:
refused at save when it could reach too much, and never shown anywhere."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client

from tests.integration.gateway_helpers import Hook
from tests.integration.helpers import Api
from tests.unit import package_registries as registries
from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.core.egress.grant import Connection
from tools_app.core.tools.effect import Effect
from tools_app.models import (
    AgentSession,
    AuditEntry,
    EgressCredential,
    Policy,
    PolicyRule,
    ToolCall,
)
from tools_app.services import connections, effects, tool_calls

pytestmark = pytest.mark.django_db
TOKEN = "Bearer npm_s3cr3t-t0ken-4-tests"
CORP = "npm.corp.example"
ADD_CREDENTIAL = "/admin/tools_app/egresscredential/add/"


@pytest.fixture(autouse=True)
def tasks_in_process(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def policy() -> Policy:
    """The default policy, whose npm class also reaches the team's own registry."""
    policy = Policy.objects.get(name="default")
    policy.command_hosts = [*policy.command_hosts, f"npm {CORP}"]
    policy.save()
    return policy


@pytest.fixture
def session(workspace: Path, creator: User, policy: Policy) -> AgentSession:
    return AgentSession.objects.create(
        task="add a dependency", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=policy, creator=creator,
    )  # fmt: skip


@pytest.fixture
def admin_browser(superuser: User) -> Client:
    browser = Client()
    browser.force_login(superuser)
    return browser


@pytest.fixture
def credential(admin_browser: Client, policy: Policy) -> EgressCredential:
    answer = admin_browser.post(
        ADD_CREDENTIAL, {"host": CORP, "header": "Authorization", "secret_value": TOKEN}
    )
    assert answer.status_code == 302, answer.content.decode()
    return EgressCredential.objects.get()


def run(session: AgentSession, command: str) -> ToolCall:
    return services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": command}
    )


def card(browser: Client, call: ToolCall) -> str:
    answer = browser.get(f"/approvals/cards/{call.pk}/")
    assert answer.status_code == 200
    return answer.content.decode()


def export_of(browser: Client, fmt: str = "jsonl") -> str:
    answer = browser.get(f"/audit/export/?format={fmt}")
    assert answer.status_code == 200

    async def read() -> bytes:
        return b"".join([chunk async for chunk in answer.streaming_content])

    return async_to_sync(read)().decode()


# --- credentials: write-only, refused when they could reach too much -----------------------


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("*", "matches every host"),
        ("*.com", "every host under .com"),
        ("10.1.2.3", "is an IP address"),
        ("localhost", "loopback name"),
        ("127.0.0.1", "loopback or link-local"),
        ("169.254.169.254", "loopback or link-local"),
        ("npm.elsewhere.example", "no policy lets commands reach"),
    ],
)
def test_a_credential_that_could_go_too_far_is_refused_at_save_and_nothing_is_stored(
    admin_browser: Client, policy: Policy, host: str, words: str
) -> None:
    answer = admin_browser.post(
        ADD_CREDENTIAL, {"host": host, "header": "Authorization", "secret_value": TOKEN}
    )
    page = answer.content.decode()
    assert answer.status_code == 200 and words in page
    assert TOKEN not in page  # not even typed back into the form
    assert not EgressCredential.objects.exists()
    assert not AuditEntry.objects.filter(object_type="egress_credential").exists()


def test_a_credential_is_write_only_and_the_audit_says_set_or_replaced(
    admin_browser: Client, credential: EgressCredential
) -> None:
    assert credential.secret == TOKEN and credential.host == CORP
    change = f"/admin/tools_app/egresscredential/{credential.pk}/change/"
    for page in (admin_browser.get(change), admin_browser.get(ADD_CREDENTIAL[:-4])):
        assert page.status_code == 200 and TOKEN not in page.content.decode()
    kept = admin_browser.post(change, {"host": CORP, "header": "X-Token", "secret_value": ""})
    assert kept.status_code == 302
    credential.refresh_from_db()
    assert (credential.header, credential.secret) == ("X-Token", TOKEN)
    admin_browser.post(change, {"host": CORP, "header": "X-Token", "secret_value": "Bearer new"})
    credential.refresh_from_db()
    assert credential.secret == "Bearer new"
    said = list(
        AuditEntry.objects.filter(object_type="egress_credential")
        .order_by("id")
        .values_list("details__secret", flat=True)
    )
    assert said == ["set", "kept", "replaced"]
    trail = json.dumps(list(AuditEntry.objects.values()), default=str)
    assert TOKEN not in trail and "Bearer new" not in trail


# --- the dry run and the card say which hosts -----------------------------------------------


def test_the_dry_run_shows_the_hosts_a_command_would_get(
    rita: Api, admin_browser: Client, policy: Policy
) -> None:
    body = {"tool": "run_command", "args": {"command": "npm install left-pad"}}
    answer = rita.post("/policies/default/evaluate", body).json()
    assert answer["decision"] == "require_approval"
    assert answer["hosts"] == ["registry.npmjs.org", CORP]
    unknown = {"tool": "run_command", "args": {"command": "curl https://example.com"}}
    assert rita.post("/policies/default/evaluate", unknown).json()["hosts"] is None
    tried = admin_browser.post(
        f"/admin/tools_app/policy/{policy.pk}/try/",
        {"tool": "run_command", "args": json.dumps(body["args"])},
    )
    assert f'<td class="hosts">registry.npmjs.org, {CORP}</td>' in tried.content.decode()


def test_the_card_before_approval_names_the_hosts_and_which_get_a_credential(
    session: AgentSession, admin_browser: Client, credential: EgressCredential, rita: Api
) -> None:
    call = run(session, "npm install left-pad")
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    assert call.egress == {"hosts": ["registry.npmjs.org", CORP]}
    shown = card(admin_browser, call)
    if (call.preview or {}).get("sandboxed") is not False:
        assert (
            f"off now; approving opens only registry.npmjs.org, {CORP} "
            f"(a credential is added for {CORP})"
        ) in shown
    assert TOKEN not in shown
    assert (
        '<p class="meta remember-hosts">The commands it allows reach at most what approving '
        f"this one opens: registry.npmjs.org, {CORP}.</p>"
    ) in shown
    body = rita.get(f"/tool-calls/{call.pk}").json()
    assert body["egress"] == {"hosts": ["registry.npmjs.org", CORP]}
    assert TOKEN not in json.dumps(body)


def test_what_runs_after_approval_gets_exactly_the_grant_the_card_showed(
    session: AgentSession, policy: Policy, credential: EgressCredential
) -> None:
    """The grant is fixed when the call is judged: a policy change before the approval
    neither widens nor narrows it; the credentials are read when it runs."""
    call = run(session, "npm install left-pad")
    policy.command_hosts = ["npm registry.npmjs.org evil.example.com"]
    policy.save()
    options = tool_calls.tool_context(session, ToolCall.objects.get(pk=call.pk)).sandbox
    assert options.egress is not None and options.network
    assert options.egress.hosts == ("registry.npmjs.org", CORP)
    assert [(c.host, c.header, c.value) for c in options.egress.credentials] == [
        (CORP, "Authorization", TOKEN)
    ]
    assert TOKEN not in repr(options.egress)


def test_an_edited_command_is_judged_again_and_gets_the_hosts_of_what_was_approved(
    session: AgentSession, reviewer: User, rita: Api
) -> None:
    call = run(session, "npm install left-pad")
    edited = {"command": "pip install --no-index requests"}  # fails at once: no index
    answer = rita.post(
        f"/tool-calls/{call.pk}/decision", {"decision": "approve", "args": edited}
    ).json()
    assert answer["args"]["command"] == edited["command"]
    assert answer["egress"] == {"hosts": ["pypi.org", "files.pythonhosted.org"]}


# --- remembered rules carry their grant -----------------------------------------------------


def test_a_remembered_npm_install_rule_gets_the_registry_and_nothing_else(
    session: AgentSession, policy: Policy, superuser: User
) -> None:
    first = run(session, "npm install left-pad")
    services.tool_call_decide(
        call=first, user=superuser, scope="session", decision="approve", remember=True,
        rule_args={"command": "npm install *"},
    )  # fmt: skip
    rule = PolicyRule.objects.get(remembered=True)
    assert rule.hosts == {"add": [], "remove": [], "only": ["registry.npmjs.org", CORP]}
    # The policy's npm class grows afterwards: the remembered rule does not follow it.
    Policy.objects.filter(pk=policy.pk).update(
        command_hosts=["npm registry.npmjs.org npm.corp.example mirror.example.org"]
    )
    verdict = services.policy_evaluate(
        policy=Policy.objects.get(pk=policy.pk), tool="run_command",
        args={"command": "npm install --offline is-even"}, workspace=Path(session.workspace),
        counters=tool_calls.session_counters(session),
    )  # fmt: skip
    assert verdict.kind == "allow" and verdict.rule == f"rule {rule.pk}"
    assert verdict.egress is not None and verdict.egress.hosts == ("registry.npmjs.org", CORP)
    curl = services.policy_evaluate(
        policy=Policy.objects.get(pk=policy.pk), tool="run_command",
        args={"command": "pip install requests"}, workspace=Path(session.workspace),
        counters=tool_calls.session_counters(session),
    )  # fmt: skip
    assert curl.egress is None or "registry.npmjs.org" not in curl.egress.hosts


# --- every connection on the record ---------------------------------------------------------


def test_each_connection_is_on_the_call_its_card_the_timeline_and_the_audit_export(
    session: AgentSession, admin_browser: Client, rita: Api
) -> None:
    """The sandbox hands the proxy's record to `on_connections` when the command ends;
    a refused host makes the outcome say so, never a plain success."""
    call = ToolCall.objects.create(
        session=session, tool="run_command", args={"command": "npm ci"},
        status=ToolCall.Status.RUNNING, verdict="allow", egress={"hosts": ["registry.npmjs.org"]},
    )  # fmt: skip
    context = tool_calls.tool_context(session, call)
    assert context.on_connections is not None
    context.on_connections(
        (
            Connection("registry.npmjs.org", 443, 1_200, 3_400_000, True),
            Connection("evil.example", 443, 0, 0, False, "not in this command's hosts"),
        )
    )
    assert len(ToolCall.objects.get(pk=call.pk).connections) == 2
    assert context.effect_handler is not None  # the command changed no file
    context.effect_handler(Effect(entries=(), refused=(), blobs=Path(session.workspace)))
    outcome = effects.command_outcome(context, "added 12 packages", connections.logged(context))
    tool_calls._tool_call_finish(call, ToolCall.Status.SUCCEEDED, "added 12 packages",
                                 outcome=outcome)  # fmt: skip

    body = rita.get(f"/tool-calls/{call.pk}").json()
    assert body["network"] == "refused" and body["status"] == "succeeded"
    assert "the proxy refused evil.example:443" in body["outcome_detail"]
    assert body["connections"][1] == {
        "host": "evil.example", "port": 443, "sent": 0, "received": 0,
        "allowed": False, "reason": "not in this command's hosts",
    }  # fmt: skip
    facts = "registry.npmjs.org:443 allowed, 1.2 kB sent, 3.4 MB received"
    assert facts in card(admin_browser, call)
    timeline = admin_browser.get(f"/sessions/{session.pk}/").content.decode()
    assert facts in timeline and "evil.example:443 refused" in timeline
    exported = [json.loads(line) for line in export_of(admin_browser).splitlines()]
    (entry,) = [e for e in exported if e["action"] == "tool_call.outcome"]
    assert entry["details"]["connections"][0]["host"] == "registry.npmjs.org"
    assert entry["details"]["network"] == "refused"


def test_no_secret_reaches_the_api_the_pages_or_the_exports(
    session: AgentSession, admin_browser: Client, credential: EgressCredential, rita: Api
) -> None:
    call = run(session, "npm install left-pad")
    pages = [
        rita.get(f"/tool-calls/{call.pk}").content.decode(),
        rita.get(f"/sessions/{session.pk}/tool-calls").content.decode(),
        rita.get("/policies/default").content.decode(),
        card(admin_browser, call),
        admin_browser.get("/admin/tools_app/egresscredential/").content.decode(),
        admin_browser.get(f"/sessions/{session.pk}/").content.decode(),
        export_of(admin_browser),
        export_of(admin_browser, "csv"),
    ]
    assert all(TOKEN not in page for page in pages)


# --- end to end, through the egress proxy ---------------------------------------------------

NPM_INSTALL = (
    "npm install --no-audit --no-fund --no-update-notifier --fetch-retries=0 --prefix /tmp/app"
)


@pytest.fixture
def npm_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[registries.Registry]:
    """A small npm registry on 127.0.0.1, named `registry.test` through the proxy's
    test allowance."""
    registry, server = registries.npm_registry("registry.test", "http")
    monkeypatch.setenv("AGENTWEB_EGRESS_TEST_HOSTS", f"registry.test=127.0.0.1:{registry.port}")
    yield registry
    server.shutdown()
    server.server_close()


@pytest.mark.sandbox
@requires_cow
def test_a_remembered_npm_install_rule_runs_the_next_install_with_the_registry_only(
    session: AgentSession, policy: Policy, superuser: User, npm_registry: registries.Registry
) -> None:
    """The issue's case: approving & remembering `npm install *` lets the next install
    reach the registry, and a registry it was not approved for is refused and recorded."""
    Policy.objects.filter(pk=policy.pk).update(command_hosts=["npm registry.test"])
    package = registries.NPM_PACKAGE
    first = run(session, f"{NPM_INSTALL} --registry http://registry.test/ {package}")
    assert first.status == ToolCall.Status.AWAITING_APPROVAL
    services.tool_call_decide(
        call=first, user=superuser, scope="session", decision="approve", remember=True,
        rule_args={"command": "npm install *"},
    )  # fmt: skip
    first = services.tool_call_execute(tool_call_id=first.pk)
    assert first.status == ToolCall.Status.SUCCEEDED, first.result
    again = run(session, f"{NPM_INSTALL} --registry http://registry.test/ {package}")
    assert (again.status, again.rule, again.egress) == (
        ToolCall.Status.SUCCEEDED, f"rule {PolicyRule.objects.get(remembered=True).pk}",
        {"hosts": ["registry.test"]},
    )  # fmt: skip
    assert [(c["host"], c["port"], c["allowed"]) for c in again.connections] == [
        ("registry.test", 80, True)
    ]
    assert again.network == "granted" and again.connections[0]["received"] > 0
    elsewhere = run(session, f"{NPM_INSTALL} --registry http://mirror.test/ {package}")
    assert [(c["host"], c["allowed"]) for c in elsewhere.connections] == [("mirror.test", False)]
    assert elsewhere.network == "refused"
    assert "the proxy refused mirror.test:80" in elsewhere.outcome_detail


@pytest.mark.usefixtures("no_hook_wait", "policy")
def test_a_gateway_command_gets_no_grant_the_agents_machine_runs_it(claude: Hook) -> None:
    claude.pre("Bash", {"command": "npm install left-pad"})
    call = ToolCall.objects.get(native_tool="Bash")
    assert call.status == ToolCall.Status.AWAITING_APPROVAL and call.egress is None
