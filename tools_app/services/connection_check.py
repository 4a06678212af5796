"""`agentweb-hook check` and "Test the connection": is a developer's hook wired right?

The answer comes from a dry run on the same judging road as a real hook event
(`load_policy_or_denial`, then `core.gateway.judging.prepare_native` with the agent's own tool
names and input shapes), so it cannot drift from what the gateway would decide. Nothing is
stored: no session, no tool call, no event, nothing in anyone's inbox (the token's
last-used time is the one write, made by authenticating it).
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

import agentweb_hook
from tools_app.core.gateway.judging import prepare_native
from tools_app.core.policy.types import PolicySpec, SessionCounters, Verdict
from tools_app.errors import NotFound, ServiceError
from tools_app.models import ApiToken, Policy
from tools_app.services.policies import load_policy_or_denial, policy_named

# The oldest hook this server takes: older ones read its answers by rules that changed
# (raise it with any change of the hook's protocol).
HOOK_MINIMUM_VERSION = "1.0"
HOOK_USER_AGENT = "agentweb-hook/"
# Where the dry run's calls run: a project directory of the agent's (the policy judges
# paths relative to it; nothing is read there).
CHECK_CWD = "/agentweb-check/project"
POLICY_NAME_CHARS = 100  # Policy.name's length
ENV_CONTENT = "AGENTWEB_CHECK=1\n"


@dataclass(frozen=True)
class Probe:
    """One tool use, in an agent's own shape, and what the policy must answer for it."""

    name: str
    native_tool: str
    native_input: dict[str, Any]
    wanted: str  # "allow": runs at once; "hold": never runs without a person


def _probes(shell: str, write: tuple[str, dict[str, Any]]) -> tuple[Probe, Probe]:
    return (
        Probe("allows ls", shell, {"command": "ls"}, "allow"),
        Probe("holds a write of .env", write[0], write[1], "hold"),
    )


_CLAUDE_WRITE = ("Write", {"file_path": f"{CHECK_CWD}/.env", "content": ENV_CONTENT})
_CODEX_PATCH = "*** Begin Patch\n*** Add File: .env\n+AGENTWEB_CHECK=1\n*** End Patch\n"
# Each agent's `ls` and `.env` write as its hook sends them (agentweb_hook's formats).
PROBES: dict[str, tuple[Probe, Probe]] = {
    "claude-code": _probes("Bash", _CLAUDE_WRITE),
    "codex": _probes("Bash", ("apply_patch", {"command": _CODEX_PATCH})),
    "gemini": _probes("run_shell_command", ("write_file", _CLAUDE_WRITE[1])),
}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@functools.cache  # asked on every hook answer
def server_version() -> str:
    try:
        return importlib.metadata.version("agentweb")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "unknown"


def hook_versions() -> dict[str, str]:
    """What a hook is told of versions: the one served for download, the oldest taken."""
    return {"served": agentweb_hook.__version__, "minimum": HOOK_MINIMUM_VERSION}


def hook_version_headers() -> dict[str, str]:
    return {
        "X-Agentweb-Version": server_version(),
        "X-Agentweb-Hook-Version": agentweb_hook.__version__,
        "X-Agentweb-Hook-Minimum": HOOK_MINIMUM_VERSION,
    }


def hook_client_version(user_agent: str) -> str | None:
    """The version in `User-Agent: agentweb-hook/X.Y`, None for any other client."""
    if not user_agent.startswith(HOOK_USER_AGENT):
        return None
    return user_agent[len(HOOK_USER_AGENT) :].split(" ", 1)[0][:20]


def hook_client_refusal(user_agent: str) -> str | None:
    """Why this server refuses the hook that sent `user_agent`: older than the minimum."""
    version = hook_client_version(user_agent)
    if version is None or not agentweb_hook.older(version, HOOK_MINIMUM_VERSION):
        return None
    return (
        f"agentweb-hook {version} is older than {HOOK_MINIMUM_VERSION}, the oldest this "
        f"server accepts: download the current one from {hook_download_url()}"
    )


def hook_download_url() -> str:
    return settings.AGENTWEB_BASE_URL.rstrip("/") + "/api/hooks/agentweb-hook.py"


# --- the check -------------------------------------------------------------------------


def connection_check(
    *, token: ApiToken, policy_name: str, agent: str, user_agent: str = ""
) -> dict[str, Any]:
    """The report `GET /api/hooks/check` answers. Raises NotFound naming an unknown policy,
    ServiceError naming a malformed policy name or an unknown agent."""
    probes = _agent_probes(agent)
    policy = _policy(policy_name)
    spec = load_policy_or_denial(policy)
    checks = [
        Check("server", True, f"agentweb {server_version()} answered"),
        *_hook_check(user_agent),
        _token_check(token),
        _policy_check(policy, spec),
        *(_dry_run(spec, probe) for probe in probes),
    ]
    return {
        "ok": all(check.ok for check in checks),
        "server_version": server_version(),
        "user": token.user.get_username(),
        "policy": policy.name,
        "agent": agent,
        "hook": hook_versions(),
        "checks": [asdict(check) for check in checks],
    }


def _agent_probes(agent: str) -> tuple[Probe, Probe]:
    probes = PROBES.get(agent)
    if probes is None:
        known = ", ".join(PROBES)
        raise ServiceError(f"There is no agent {agent[:50]!r}: `agent` is one of {known}.")
    return probes


def _policy(name: str) -> Policy:
    if "\x00" in name or len(name) > POLICY_NAME_CHARS:
        raise ServiceError(
            f"`policy` must be a policy's name (at most {POLICY_NAME_CHARS} characters, no NUL)."
        )
    try:
        return policy_named(name)
    except ServiceError as exc:
        raise NotFound(f"{exc} Ask an admin for the policy's name, or leave it out.") from exc


def _hook_check(user_agent: str) -> list[Check]:
    """The calling hook's version, when it is a hook that says it (a browser does not)."""
    version = hook_client_version(user_agent)
    if version is None:
        return []
    served = agentweb_hook.__version__
    refusal = hook_client_refusal(user_agent)
    if refusal is not None:
        return [Check("hook version", False, refusal)]
    if agentweb_hook.older(version, served):
        detail = f"agentweb-hook {version} works; {served} is served for download: update it"
        return [Check("hook version", True, detail)]
    return [Check("hook version", True, f"agentweb-hook {version} is current")]


def _token_check(token: ApiToken) -> Check:
    who = token.user.get_username()
    if token.scope != ApiToken.Scope.AGENT:
        detail = f"a {token.scope} token of {who}: hooks need an `agent` token"
        return Check("token", False, detail)
    return Check("token", True, f"an agent token of {who} ({token.prefix}…)")


def _policy_check(policy: Policy, spec: PolicySpec | Verdict) -> Check:
    if isinstance(spec, Verdict):
        return Check("policy", False, spec.reason)
    return Check("policy", True, f"policy {policy.name!r}, version {policy.version}")


def _dry_run(spec: PolicySpec | Verdict, probe: Probe) -> Check:
    """What the gateway would answer this tool use, judged as a real hook event is."""
    if isinstance(spec, Verdict):
        return Check(probe.name, False, f"every call is denied: {spec.reason}")
    _, prepared = prepare_native(
        spec, probe.native_tool, probe.native_input, CHECK_CWD, SessionCounters()
    )
    reason = prepared.verdict.reason if prepared.verdict else prepared.error
    said = f"{probe.native_tool} {_shown(probe)}"
    if prepared.status == "approved":
        return Check(probe.name, probe.wanted == "allow", f"{said} would run at once: {reason}")
    if prepared.status == "awaiting_approval":
        return Check(
            probe.name, probe.wanted == "hold", f"{said} would wait for a person: {reason}"
        )
    if prepared.status == "denied":  # stricter than a wait: it never runs either
        return Check(probe.name, probe.wanted == "hold", f"{said} would be refused: {reason}")
    return Check(probe.name, False, f"{said} cannot be judged: {reason}")


def _shown(probe: Probe) -> str:
    if "file_path" in probe.native_input:
        return ".env"
    command = str(probe.native_input.get("command", ""))
    return "of .env" if "Add File" in command else repr(command)
