"""Sessions, tool calls, messages, events, policies with rules and skills; the other tables
(decisions, tokens, projects, pull requests …) live in `tables/` and are imported here."""

from __future__ import annotations

import json

from django.conf import settings
from django.db import models

from tools_app.core import outcomes
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.rendering import spelled
from tools_app.tables.projects import default_project_id


def default_protected_paths() -> list[str]:
    """A new policy starts from the `default` policy's values (as imported files do)."""
    return list(DEFAULT_POLICY["protected_paths"])


def default_secret_paths() -> list[str]:
    return list(DEFAULT_POLICY["secret_paths"])


def default_blocked_commands() -> list[str]:
    return list(DEFAULT_POLICY["blocked_commands"])


def default_command_hosts() -> list[str]:
    return list(DEFAULT_POLICY["command_hosts"])


class Policy(models.Model):
    """What agents may do; see tools_app/policy/engine.py for the order of evaluation."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    protected_paths = models.JSONField(default=default_protected_paths, blank=True)
    blocked_commands = models.JSONField(default=default_blocked_commands, blank=True)
    approval_commands = models.JSONField(default=list, blank=True)
    max_diff_lines = models.PositiveIntegerField(default=500)
    require_approval_above = models.PositiveIntegerField(default=200)
    secret_paths = models.JSONField(default=default_secret_paths, blank=True)
    web_allow_hosts = models.JSONField(default=list, blank=True)
    web_write_hosts = models.JSONField(default=list, blank=True)
    command_network = models.BooleanField(
        default=False,
        help_text="A command the policy allows gets its class's hosts without a person "
        "(off: only once a person approves it, or a rule allows it). Never the whole network.",
    )
    command_hosts = models.JSONField(default=default_command_hosts, blank=True)
    require_distinct_reviewer = models.BooleanField(
        default=False, help_text="A session's creator may deny but not approve its calls."
    )
    builtin_approvals = models.PositiveIntegerField(
        default=1,
        help_text="How many distinct people (none the session's creator) approve a call a "
        "built-in check sends to a person; a rule's own approvals say it for its calls.",
    )
    command_timeout_limit = models.PositiveIntegerField(
        default=600, help_text="Seconds: a command asking for a longer timeout needs a person."
    )
    approval_timeout_seconds = models.PositiveIntegerField(default=3600)
    escalate_after_seconds = models.PositiveIntegerField(
        default=0,
        help_text="Seconds: a call still waiting this long goes to the escalation channels "
        "too (0: never).",
    )
    version = models.PositiveIntegerField(default=1, editable=False)
    updated_at = models.DateTimeField(auto_now=True)
    # A new random value whenever one of its rules is written, whatever wrote it: set by
    # database triggers on the rules' table (migration 0027, `sql/rules_revision.py`).
    # While it is unchanged, a spec made from its rules is used again without reading them.
    rules_revision = models.CharField(max_length=32, blank=True, default="", editable=False)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.name


class Verdict(models.TextChoices):
    """What the policy answers about a call (`policy.Verdict`): a rule's verdict and the
    one a tool call got. A person's answer is a `Decision`."""

    ALLOW = "allow"
    DENY = "deny"
    REQUIRE_APPROVAL = "require_approval"


HOSTS_HELP = '{"add": [HOST…], "remove": [HOST…], "only": [HOST…]} for the commands it decides.'


class PolicyRule(models.Model):
    """`{tool, args: {NAME: PATTERN}, decision, reason}`, applied in `position` order;
    its `decision` (the policy file's key) is the verdict it gives."""

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="rules")
    position = models.PositiveIntegerField(default=0)
    tool = models.CharField(max_length=200, help_text="A tool name or a glob such as `*`.")
    args = models.JSONField(
        default=dict, blank=True, help_text='{"NAME": "glob" or "re:regex"}, all must match.'
    )
    decision = models.CharField(max_length=20, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # Made by "approve & remember": it stands for `created_by`'s approval, so under
    # require_distinct_reviewer it never allows a call in a session they created.
    remembered = models.BooleanField(default=False)
    # Widened by a reviewer who is not a policy admin: it never allows a call a risky
    # built-in approval (protected or secret path, risky command, pull request …) sends
    # to a person. An admin may clear it to vouch for the rule.
    reviewer_bounded = models.BooleanField(
        default=False,
        help_text="Widened by a reviewer who is not a policy admin: never allows a call "
        "that a protected or secret path, a risky or opaque command or a pull request "
        "sends to a person. Clear it to make the rule an admin's.",
    )
    # A require_approval rule's quorum: this many distinct people approve (of this group,
    # when named), none of them the session's creator.
    approvals = models.PositiveSmallIntegerField(
        default=1, help_text="How many distinct people must approve (require_approval only)."
    )
    approvers = models.CharField(
        max_length=150, blank=True, help_text="The group they must belong to (empty: any reviewer)."
    )
    # `core/policy/types.HostChange`; a remembered rule's `only` is its approved grant.
    hosts = models.JSONField(null=True, blank=True, help_text=HOSTS_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["policy", "position", "id"]

    def __str__(self) -> str:
        return f"rule {self.pk}: {self.decision} {self.tool} {self.args}"


class AgentSession(models.Model):
    """One agent's work on a repository, in its own workspace clone."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        WAITING = "waiting"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Kind(models.TextChoices):
        AGENT = "agent", "agent session"
        CLI = "cli", "command line call"
        # An agent that runs its own tools (Claude Code …) and asks agentweb through its
        # hooks: no clone, no agent loop; its calls are judged from their input alone.
        GATEWAY = "gateway", "agent gateway session"

    # The statuses a session ends in: the one place they are written.
    FINISHED_STATUSES = frozenset({Status.DONE, Status.FAILED, Status.CANCELLED})

    task = models.TextField()
    repo = models.CharField(max_length=1000)
    workspace = models.CharField(max_length=1000)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.AGENT)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="sessions")
    # Who sees and decides it (tools_app/access.py): chosen when it starts, never moved.
    project = models.ForeignKey(
        "tools_app.Project",
        on_delete=models.PROTECT,
        default=default_project_id,
        related_name="sessions",
    )
    model = models.CharField(max_length=200, blank=True)
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    total_changed_lines = models.PositiveIntegerField(default=0)
    changed_since_approval = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    summary = models.TextField(blank=True)
    files_changed = models.JSONField(default=list, blank=True)
    # The tracked paths its policy calls secret, found by the worker host after the clone:
    # what the pages say when the workspace is on another host than theirs.
    tracked_secrets = models.JSONField(default=list, blank=True)
    # The agent runtime (sessions with a `model`): the conversation lives in AgentMessage.
    system_prompt = models.TextField(blank=True)
    # The skills the task activated at the start: [{"skill": NAME, "words": [TRIGGER, ...]}].
    active_skills = models.JSONField(default=list, blank=True)
    depth = models.PositiveSmallIntegerField(default=0)
    parent_call = models.OneToOneField(
        "ToolCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="subagent"
    )
    iterations = models.PositiveIntegerField(default=0)
    max_iterations = models.PositiveIntegerField(default=50)
    token_budget = models.PositiveIntegerField(default=0, help_text="0: no budget.")
    subagent_tokens_in = models.PositiveIntegerField(default=0)
    subagent_tokens_out = models.PositiveIntegerField(default=0)
    # Older turns folded into a summary: the model sees the task, the summary, and the
    # messages from `context_start` on.
    context_start = models.PositiveIntegerField(default=0)
    context_summary = models.TextField(blank=True)
    # Who is asking the model for the next turn right now (host:pid), claimed once.
    turn_runner = models.CharField(max_length=300, blank=True)
    turn_started_at = models.DateTimeField(null=True, blank=True)
    # The Celery queue of the worker host that holds the workspace.
    worker_queue = models.CharField(max_length=200, blank=True)
    # A gateway session: the directory the agent works in, on its own machine, and the
    # agent's own session id (a sub-agent's: "SESSION/AGENT").
    cwd = models.CharField(max_length=4096, blank=True)
    external_id = models.CharField(max_length=300, blank=True)
    last_event_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            # One agentweb session per (token user, the agent's session id).
            models.UniqueConstraint(
                fields=["creator", "external_id"],
                condition=~models.Q(external_id=""),
                name="one_session_per_external_id",
            )
        ]

    def __str__(self) -> str:
        return spelled(f"session {self.pk}: {self.task[:60]}")


class ToolCall(models.Model):
    """One tool call and everything that was decided and done about it (an audit row)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # received; the policy has not decided yet
        AWAITING_APPROVAL = "awaiting_approval"
        APPROVED = "approved"
        DENIED = "denied"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        EXPIRED = "expired"
        CANCELLED = "cancelled"

    class Outcome(models.TextChoices):
        """What the run changed (`core/outcomes.py`); blank: not recorded."""

        APPLIED = "applied"
        HELD = "held", "held for a person"
        REFUSED = "refused", "refused whole"
        NOTHING = "nothing", "nothing to apply"
        NOT_APPLICABLE = "not_applicable", "not judged"

    class Network(models.TextChoices):
        """A command's network: given it, not given it, tried and not there, or a
        connection the egress proxy refused (a host outside its grant)."""

        GRANTED = "granted"
        WITHHELD = "withheld"
        MISSING = "missing"
        REFUSED = "refused"

    FINAL_STATUSES = frozenset(
        {Status.SUCCEEDED, Status.FAILED, Status.DENIED, Status.EXPIRED, Status.CANCELLED}
    )

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="tool_calls")
    tool = models.CharField(max_length=200)
    args = models.JSONField(default=dict, blank=True)
    args_hash = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices)
    # The policy's verdict; empty until judged, or when the arguments were invalid.
    verdict = models.CharField(max_length=20, blank=True, choices=Verdict.choices)
    reason = models.TextField(blank=True)
    rule = models.CharField(max_length=200, blank=True)
    policy_version = models.PositiveIntegerField(null=True, blank=True)
    preview = models.JSONField(null=True, blank=True)
    result = models.TextField(blank=True)
    changed_lines = models.PositiveIntegerField(null=True, blank=True)
    from_cache = models.BooleanField(default=False)
    # What its run changed, beside the status: a sentence a person reads, the call its
    # held effect waits as, and a command's network (blank: not recorded).
    outcome = models.CharField(max_length=20, blank=True, choices=Outcome.choices)
    outcome_detail = models.TextField(blank=True)
    held_call = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    network = models.CharField(max_length=10, blank=True, choices=Network.choices)
    # A command's hosts, fixed when judged ({"hosts": [...]}; None: no network), and each
    # connection its run tried (`Connection.as_json`), as the egress proxy saw it.
    egress = models.JSONField(null=True, blank=True)
    connections = models.JSONField(default=list, blank=True)
    # "host:pid" of the process running the call, to tell a crash from a long run.
    runner = models.CharField(max_length=300, blank=True)
    # For a call the runtime made: "<message index>:<position>" of the model's tool use.
    agent_key = models.CharField(max_length=40, blank=True)
    # A gateway call: the agent's own tool name and input, verbatim (what will run), the
    # id of its tool use, and when the hook was last given a final answer for it.
    native_tool = models.CharField(max_length=200, blank=True)
    native_input = models.JSONField(null=True, blank=True)
    tool_use_id = models.CharField(max_length=200, blank=True)
    hook_answered_at = models.DateTimeField(null=True, blank=True)
    # The quorum it waits for (`core/policy/types.Quorum`): how many distinct people
    # approve, of which group (empty: any reviewer). One approval is a plain decision.
    approvals_needed = models.PositiveSmallIntegerField(default=1)
    approvers = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    # When its next task was last sent: the sweep resends only what looks lost.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["status", "expires_at"]),
            # The calls a hook's retry may join (`services/gateway._calls_wanted`): few,
            # where the session's calls can be thousands. The condition has no parameter,
            # so SQLite can prove that query's WHERE implies it.
            models.Index(
                fields=["session", "native_tool"],
                condition=models.Q(hook_answered_at=None),
                name="unanswered_calls_by_tool",
            ),
        ]
        permissions = [("decide_toolcall", "Can approve or deny tool calls")]
        constraints = [
            # A model's tool use becomes one call, however often its turn is resumed.
            models.UniqueConstraint(
                fields=["session", "agent_key"],
                condition=~models.Q(agent_key=""),
                name="one_call_per_tool_use",
            ),
            # A gateway's tool use is one call, however often its hook event is sent.
            models.UniqueConstraint(
                fields=["session", "tool_use_id"],
                condition=~models.Q(tool_use_id=""),
                name="one_call_per_native_tool_use",
            ),
        ]

    def __str__(self) -> str:
        return spelled(f"tool call {self.pk}: {self.tool} ({self.status})")

    @property
    def args_json(self) -> str:
        return json.dumps(self.args, indent=2, ensure_ascii=False)

    @property
    def badge(self) -> str:
        """The status with what the run changed: "succeeded · nothing applied: …"."""
        return outcomes.badge(self.status, self.outcome_detail)


class AgentMessage(models.Model):
    """One message of a session's conversation with its model (runtime/conversation.py)."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="messages")
    index = models.PositiveIntegerField()
    role = models.CharField(max_length=20)
    content = models.JSONField()
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "index"]
        constraints = [
            # Claims a place in the conversation: a turn or its results are recorded once.
            models.UniqueConstraint(fields=["session", "index"], name="one_message_per_index")
        ]

    def __str__(self) -> str:
        return f"message {self.index} of session {self.session_id} ({self.role})"


class Event(models.Model):
    """A session's event log: every state change in `seq` order, replayed on reconnect."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=50)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="event_seq_per_session")
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} #{self.seq} {self.type}"


class CachedResult(models.Model):
    """A read-only tool's result, kept per session until a write makes it stale.

    `scope` is the workspace-relative path the result depends on: a file for
    read_file, a directory for listings and searches, "." for the whole tree."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="cache")
    tool = models.CharField(max_length=200)
    key = models.CharField(max_length=64)
    scope = models.CharField(max_length=1000)
    result = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "key"], name="cache_entry_per_session_key")
        ]

    def __str__(self) -> str:
        return f"cached {self.tool} {self.scope}"


class Skill(models.Model):
    """A skill injects tools (and instructions) when a task matches one of its triggers."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    triggers = models.JSONField(default=list, blank=True)
    instructions = models.TextField(blank=True)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    times_activated = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SkillTool(models.Model):
    """A tool a skill injects, with its JSON Schema and how it runs."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    input_schema = models.JSONField(default=dict, blank=True)
    executor = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["skill", "name"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "name"], name="skill_tool_name_unique")
        ]

    def __str__(self) -> str:
        return f"{self.skill.name}.{self.name}"


# Tables in their own modules, imported so that Django and `tools_app.models` know them.
from tools_app.tables.audit import AuditEntry as AuditEntry  # noqa: E402
from tools_app.tables.channels import Channel as Channel  # noqa: E402
from tools_app.tables.channels import Delivery as Delivery  # noqa: E402
from tools_app.tables.channels import DeliveryAttempt as DeliveryAttempt  # noqa: E402
from tools_app.tables.channels import NotifyPreference as NotifyPreference  # noqa: E402
from tools_app.tables.channels import SlackUser as SlackUser  # noqa: E402
from tools_app.tables.credentials import EgressCredential as EgressCredential  # noqa: E402
from tools_app.tables.decisions import Approval as Approval  # noqa: E402
from tools_app.tables.decisions import Decision as Decision  # noqa: E402
from tools_app.tables.mcp_connections import McpConnection as McpConnection  # noqa: E402
from tools_app.tables.projects import Project as Project  # noqa: E402
from tools_app.tables.pull_requests import PullRequest as PullRequest  # noqa: E402
from tools_app.tables.sign_in import SignInFailure as SignInFailure  # noqa: E402
from tools_app.tables.tokens import ApiToken as ApiToken  # noqa: E402
from tools_app.tables.upstreams import UpstreamServer as UpstreamServer  # noqa: E402
from tools_app.tables.upstreams import UpstreamTool as UpstreamTool  # noqa: E402
