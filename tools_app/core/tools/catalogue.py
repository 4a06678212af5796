"""What each tool is, as plain data: the one place every reader of these facts looks.

The policy (read-only tools, path arguments, file writes), the engine (cache keys, what
a call makes stale), the cache and crash recovery (may an interrupted run be re-run)
all derive their sets from `CATALOGUE`.

This module is plain data on purpose, apart from the registry: the policy package
imports it and must stay cheap to import, while the registry (`tools/registry.py`)
loads every tool module, httpx and GitPython among them. The registry attaches to each
entry what running the tool needs (its args model, its function, its preview) and
refuses to start when the two lists disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CATALOGUE",
    "EFFECT_TOOL",
    "FILE_WRITE_TOOLS",
    "INTERNAL",
    "PATH_ARGS",
    "READ_ONLY_TOOLS",
    "CacheScope",
    "ToolFacts",
    "Writes",
    "cached_with",
    "facts_for",
    "is_skill_tool",
    "is_upstream_tool",
    "qualified_skill_tool",
    "skill_facts",
    "split_skill_tool",
    "upstream_facts",
]

# Where a cached result is kept and what makes it stale:
#   "file"      keyed by its `path`; a write to that file makes it stale;
#   "tree"      keyed by its `path` directory; a write anywhere below makes it stale;
#   "worktree"  any file write makes it stale (git status, git diff);
#   "history"   only a call that may change anything makes it stale (git log: commits).
CacheScope = Literal["file", "tree", "worktree", "history"]
# What a call changes in the workspace: nothing, the file its `path` names, or anything
# (a command, a commit, a branch switch, a pull request, a tool this module does not know).
Writes = Literal["nothing", "path", "anything"]


@dataclass(frozen=True)
class ToolFacts:
    """What a tool is, for everyone who decides about a call without running it.

    `read_only` is the policy's notion: a call that only reads is allowed "because it
    only reads" when nothing else objects. It is a bool, or a predicate on the call's
    arguments for a tool that only sometimes reads (`git_branch` listing).
    `rerunnable`: a run interrupted by a crash may be run again (same result twice).
    `runs_command`: it runs a shell command, so without the copy-on-write sandbox no
    rule may let it run without a person (run_command, a skill's command tool).
    `counts_lines`: a successful run adds its `changed_lines` to the session's count.
    `internal`: never offered to agents nor judged by the policy (the lifecycle creates
    its calls, awaiting a person).
    What the approvals card shows: `card`, the preview partial for its kind (command,
    pull, fetch, subagent, skill; empty: a diff or the arguments as JSON);
    `edit_field`, the argument a reviewer edits in a text area for "Edit & approve"
    (other tools: the whole arguments as JSON); `shows_diff`, the preview is a diff;
    `shows_host`, the card names the host the call reaches.
    `free_defaults`: arguments whose value changes nothing the policy judges (a
    command's timeout), with the default the args model fills in: "approve & remember"
    leaves such an argument out of the rule when the call had it at that default, as
    an argument the agent did not send (`core/policy/remember.py`).
    """

    name: str
    read_only: bool | Callable[[Mapping[str, Any]], bool] = False
    path_args: tuple[str, ...] = ()
    cache: CacheScope | None = None
    writes: Writes = "anything"
    rerunnable: bool = False
    runs_command: bool = False
    counts_lines: bool = False
    internal: bool = False
    card: str = ""
    edit_field: str | None = None
    shows_diff: bool = False
    shows_host: bool = False
    free_defaults: tuple[tuple[str, object], ...] = ()

    def reads_only(self, args: Mapping[str, Any]) -> bool:
        return self.read_only(args) if callable(self.read_only) else self.read_only


def _lists_branches(args: Mapping[str, Any]) -> bool:
    return args.get("action") == "list"


def _reader(name: str, cache: CacheScope, path_args: tuple[str, ...] = ()) -> ToolFacts:
    """A tool that only reads: cached, changes nothing, safe to run again."""
    return ToolFacts(name, True, path_args, cache, writes="nothing", rerunnable=True)


_PATH = ("path",)

CATALOGUE: Mapping[str, ToolFacts] = {
    facts.name: facts
    for facts in (
        _reader("read_file", "file", _PATH),
        ToolFacts(
            "write_file",
            path_args=_PATH,
            writes="path",
            rerunnable=True,
            counts_lines=True,
            edit_field="content",
            shows_diff=True,
        ),
        ToolFacts(
            "edit_file",
            path_args=_PATH,
            writes="path",
            counts_lines=True,
            edit_field="new_string",
            shows_diff=True,
        ),
        ToolFacts(
            "run_command", runs_command=True, card="command", free_defaults=(("timeout", 120.0),)
        ),
        _reader("search_codebase", "tree", _PATH),
        _reader("list_files", "tree", _PATH),
        # Not "only reads" for the policy (it ends the task), yet it changes nothing.
        ToolFacts("task_done", writes="nothing"),
        _reader("git_status", "worktree"),
        _reader("git_diff", "worktree"),
        ToolFacts("git_commit", path_args=("files",), shows_diff=True),
        _reader("git_log", "history"),
        ToolFacts("git_branch", read_only=_lists_branches),
        ToolFacts("create_pull_request", card="pull"),
        ToolFacts("spawn_subagent", writes="nothing", card="subagent"),
        ToolFacts(
            "web_fetch",
            writes="nothing",
            card="fetch",
            shows_host=True,
            free_defaults=(("max_length", 50_000),),
        ),
    )
}

# The tool call that applies a held command effect (`services/effects.py`): the
# lifecycle creates it, agents are never offered it, so it is not in `CATALOGUE` (the
# registry's agent tools); it changes anything and must not run twice, like an unknown
# tool; the lines it applies count as a person's.
EFFECT_TOOL = "apply_command_effect"
INTERNAL: Mapping[str, ToolFacts] = {
    EFFECT_TOOL: ToolFacts(EFFECT_TOOL, counts_lines=True, internal=True, shows_diff=True)
}

READ_ONLY_TOOLS = frozenset(name for name, f in CATALOGUE.items() if f.read_only is True)
FILE_WRITE_TOOLS = frozenset(name for name, f in CATALOGUE.items() if f.writes == "path")
PATH_ARGS: Mapping[str, tuple[str, ...]] = {
    name: f.path_args for name, f in CATALOGUE.items() if f.path_args
}


def facts_for(tool: str) -> ToolFacts:
    """A tool's facts, the internal effect tool's included; an unknown tool (a skill's)
    is assumed to change anything, never to only read, and never to be safe to run
    twice. A skill tool's card shows its executor (`skill_facts` knows more)."""
    known = CATALOGUE.get(tool) or INTERNAL.get(tool)
    if known is not None:
        return known
    if is_upstream_tool(tool):
        return upstream_facts(tool)
    return skill_facts(tool) if is_skill_tool(tool) else ToolFacts(tool)


def skill_facts(name: str, *, runs_command: bool = False) -> ToolFacts:
    """A skill tool's facts: an unknown tool's, shown on a skill card."""
    return ToolFacts(name, runs_command=runs_command, card="skill")


def cached_with(scope: CacheScope) -> list[str]:
    """The tools whose results are cached with this scope, sorted."""
    return sorted(name for name, f in CATALOGUE.items() if f.cache == scope)


# A skill's tool is named `skill.tool` wherever a call is stored and judged: core tool
# names never hold a dot, so the two can never be confused.
SKILL_SEPARATOR = "."


def qualified_skill_tool(skill: str, tool: str) -> str:
    return f"{skill}{SKILL_SEPARATOR}{tool}"


def is_skill_tool(name: str) -> bool:
    return SKILL_SEPARATOR in name and not is_upstream_tool(name)


# A third-party MCP server's tool is judged and stored as `mcp.SERVER.TOOL`
# (`core/upstreams/definitions.py`); no skill may be named `mcp`.
UPSTREAM_PREFIX = "mcp."


def is_upstream_tool(name: str) -> bool:
    return name.startswith(UPSTREAM_PREFIX)


def upstream_facts(name: str) -> ToolFacts:
    """An upstream tool's facts: an unknown tool's (it may change anything, and never
    runs twice), shown on an MCP card. Whether it only reads is its pinned definition's
    annotations, which the policy reads from the call (`CallFacts.executor`)."""
    return ToolFacts(name, card="mcp")


def split_skill_tool(name: str) -> tuple[str, str]:
    """(`skill`, `tool`) of a qualified skill tool name."""
    skill, _, tool = name.partition(SKILL_SEPARATOR)
    return skill, tool
