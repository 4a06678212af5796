"""Gate mode: the verdict on a call that runs on a machine agentweb does not control.

There is no sandbox behind it, so nothing passes unseen unless it is proven harmless (a
command: `core.gate`'s proof), changes nothing (an effect-free tool), reads only what
cannot be secret, or an explicit rule allows it. What reads a whole tree is narrowed so
that the policy's secret files stay out. The file-system checks are made again
case-folded and normalised, as the agent's file system may compare names. No Django.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tools_app.core.gate import Fence, any_case, anywhere, fold, prove_command
from tools_app.core.gateway.mapping import SEARCH_EXCLUSIONS
from tools_app.core.gateway.native import NOT_SANDBOXED, Mapped
from tools_app.core.policy.types import PolicySpec, Verdict
from tools_app.core.tools.jsonsafe import storable_args
from tools_app.core.tools.netguard import host_allowed, parse_target
from tools_app.core.tools.paths import protected_match

__all__ = ["Gated", "Native", "gate"]


@dataclass(frozen=True)
class Gated:
    """Gate mode's verdict; and, when it narrowed the call, the agent's input to run
    (`runs`), agentweb's arguments for it and what the narrowing did."""

    verdict: Verdict
    runs: dict[str, Any] | None = None
    args: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()


def gate(
    mapped: Mapped,
    args: Mapping[str, Any],
    verdict: Verdict,
    policy: PolicySpec,
    native: Native,
) -> Gated:
    """Gate mode: nothing runs unseen on the agent's machine unless it is proven harmless
    (a command: `core.gate`), changes nothing (an effect-free tool) or an explicit rule
    allows it. The file-system checks are made again case-folded and normalised, as the
    agent's file system may compare names (macOS, Windows). An explicit rule's verdict
    stands, but for a write into `.git`, which no rule allows."""
    folded = _folded_path_verdict(mapped, args, policy)
    if folded is not None and (folded.kind == "deny" or not verdict.rule.startswith("rule ")):
        return Gated(folded if _stricter(folded, verdict) else verdict)
    if verdict.kind != "allow" or verdict.rule.startswith("rule "):
        return Gated(_named_for_gateway(mapped, verdict))
    if mapped.kind == "no_effect":
        return Gated(
            Verdict("allow", f"{mapped.tool} changes nothing in the workspace", "gateway:no-effect")
        )
    if mapped.kind in {"mcp", "unknown"}:
        return Gated(_unknown_tool(mapped))
    if mapped.tool == "run_command":
        return _prove(mapped, args, policy, native)
    if mapped.tool == "web_fetch":
        return Gated(_network(args, policy))
    if mapped.tool == "search_codebase":
        return _search(verdict, policy, native)
    return Gated(verdict)


@dataclass(frozen=True)
class Native:
    """The agent's own call: its tool's name, its input, and the session's directory."""

    tool: str
    input: Mapping[str, Any]
    cwd: str


def _prove(mapped: Mapped, args: Mapping[str, Any], policy: PolicySpec, native: Native) -> Gated:
    command, where = mapped.sent or (str(args.get("command", "")), native.cwd)
    fence = Fence(native.cwd or "/", tuple(policy.protected_paths), tuple(policy.secret_paths))
    proof = prove_command(command, where, fence)
    if not proof.proven:
        reason = (
            f"gate mode cannot prove this command harmless: {proof.reason}. It "
            f"{NOT_SANDBOXED}, so a person approves it unless a policy rule allows it"
        )
        return Gated(Verdict("require_approval", reason, "gateway:not-proven"))
    reason = (
        "gate mode proved it harmless: every program and option is on its list of those "
        "that only read, every word is a plain literal, and every path is inside the "
        "session's directory and neither protected nor secret"
    )
    verdict = Verdict("allow", reason, "gateway:proven")
    if not proof.narrowed:
        return Gated(verdict)
    full = str(args["command"])  # the mapping may have put a `cd` in front of what was sent
    prefix = full[: len(full) - len(command)] if full.endswith(command) else ""
    runs = {**storable_args(dict(native.input)), "command": proof.narrowed}
    narrowed = {**args, "command": prefix + proof.narrowed}
    return Gated(verdict, runs, narrowed, proof.notes)


def _search(verdict: Verdict, policy: PolicySpec, native: Native) -> Gated:
    """A content search reads every file below its path, hidden ones too: narrowed to
    leave the secret files out where the agent's search takes exclusions, else a person
    decides."""
    patterns = [p.strip() for p in policy.secret_paths if p.strip() and not p.startswith("#")]
    if not patterns:
        return Gated(verdict)
    key = SEARCH_EXCLUSIONS.get(native.tool)
    if key is None:
        return Gated(
            Verdict(
                "require_approval",
                f"{native.tool} reads every file below its path, secret ones included, and "
                "takes no exclusions gate mode could add; a person approves it unless a "
                "policy rule allows it",
                "gateway:search-not-narrowed",
            )
        )
    given = str(native.input.get(key) or "").strip()
    excludes = " ".join("!" + any_case(anywhere(p)) for p in patterns)
    runs = {**storable_args(dict(native.input)), key: f"{given} {excludes}".strip()}
    note = f"{native.tool} leaves out the policy's secret files (`{key}` exclusions)"
    return Gated(verdict, runs, None, (note,))


def _network(args: Mapping[str, Any], policy: PolicySpec) -> Verdict:
    """A fetch from the agent's machine may carry anything it read out: it passes
    unseen only to a host the policy names (`web_allow_hosts`, or an allow rule)."""
    url = str(args.get("url", ""))
    try:
        target = parse_target(url)
    except ValueError as exc:
        return Verdict("deny", f"web_fetch of {url} cannot be judged: {exc}", "gateway:network")
    if host_allowed(target, tuple(policy.web_allow_hosts)):
        return Verdict(
            "allow", f"{target.host} is in the policy's web_allow_hosts", "gateway:network"
        )
    return Verdict(
        "require_approval",
        f"web_fetch reaches {target.host} from the agent's machine, which could carry out "
        "what the agent read; a person approves it unless the policy names the host "
        "(web_allow_hosts, or an allow rule)",
        "gateway:network",
    )


_WRITES = frozenset({"write_file", "edit_file"})
_READS = frozenset({"read_file", "list_files", "search_codebase"})
_SEVERITY = {"allow": 0, "require_approval": 1, "deny": 2}


def _stricter(one: Verdict, other: Verdict) -> bool:
    return _SEVERITY[one.kind] > _SEVERITY[other.kind]


def _folded_path_verdict(
    mapped: Mapped, args: Mapping[str, Any], policy: PolicySpec
) -> Verdict | None:
    """The path checks once more on the name case-folded and normalised: `.GIT/hooks`,
    `.GitHub/workflows`, `.ENV` are the lower-case ones where the agent's disk folds
    case."""
    if mapped.kind != "core" or mapped.tool not in _WRITES | _READS:
        return None
    path = str(args.get("path", ""))
    folded = fold(posixpath.normpath(path)) if path else ""
    if not folded or folded.startswith("/") or folded.startswith("../"):
        return None  # outside: the invariant already denies it
    if mapped.tool in _WRITES and ".git" in folded.split("/"):
        return Verdict(
            "deny",
            f"{path} is inside a .git directory (compared as the agent's file system may "
            "compare names, case-folded); no tool writes there",
            "invariant:git-dir",
        )
    checks = [("secret", policy.secret_paths, "builtin:secret-path")]
    if mapped.tool in _WRITES:
        checks.insert(0, ("protected", policy.protected_paths, "builtin:protected-path"))
    for kind, patterns, rule in checks:
        pattern = protected_match([fold(p) for p in patterns], folded)
        if pattern is not None:
            reason = (
                f"{path} matches the {kind} pattern {pattern} (compared case-folded, as the "
                "agent's file system may)"
            )
            return Verdict("require_approval", reason, rule)
    return None


def _unknown_tool(mapped: Mapped) -> Verdict:
    what = "an MCP tool" if mapped.kind == "mcp" else "a tool agentweb does not know"
    return Verdict(
        "require_approval",
        f"{mapped.tool} is {what}; it {NOT_SANDBOXED}, so a person approves it unless "
        "a policy rule allows it by name",
        f"gateway:{mapped.kind}-tool",
    )


def _named_for_gateway(mapped: Mapped, verdict: Verdict) -> Verdict:
    """The skill-tool check also fires on `native.…` names (they hold a dot), and the MCP
    upstreams' check on `mcp.…` names: say what the tool really is."""
    if verdict.rule not in ("builtin:skill-tool", "builtin:mcp-tool") or mapped.kind == "core":
        return verdict
    if mapped.kind == "no_effect":
        return Verdict(
            "allow", f"{mapped.tool} changes nothing in the workspace", "gateway:no-effect"
        )
    return _unknown_tool(mapped)
