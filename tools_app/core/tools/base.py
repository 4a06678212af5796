"""The shape every tool shares: an args model and one function (the one error type is in
`errors.py`)."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

from tools_app.core.egress.grant import Connection, EgressGrant
from tools_app.core.tools import jsonsafe
from tools_app.core.tools.arguments import validate_model
from tools_app.core.tools.catalogue import ToolFacts

__all__ = [
    "MAX_COMMAND_CHARS",
    "MAX_NAME_CHARS",
    "MAX_PATH_CHARS",
    "MAX_TEXT_CHARS",
    "Judge",
    "Judged",
    "Preview",
    "ReviewCommand",
    "SandboxOptions",
    "ToolArgs",
    "ToolContext",
    "ToolSpec",
]

# Bounds the args models state in their JSON Schema, so that a model reads them and an
# absurd value is refused by name before any tool touches the disk or a subprocess.
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
MAX_NAME_CHARS = 255  # a branch, a title, a method: one line
MAX_COMMAND_CHARS = 100_000  # a command line, a regex, a commit message
MAX_TEXT_CHARS = 5_000_000  # a whole file's content (the API refuses bodies over 10 MB)

if TYPE_CHECKING:
    from tools_app.core.policy.types import Verdict
    from tools_app.core.shell.commands import CommandAnalysis
    from tools_app.core.tools.effect import Effect
    from tools_app.core.tools.forge import ForgeSettings
    from tools_app.core.tools.git_view import ObjectView


class ToolArgs(BaseModel):
    """Base for every tool's arguments: unknown keys and wrong types are refused.

    Every argument, at any depth, is also refused when it holds what no tool can use
    and no store can keep: a lone surrogate or NUL in text, an integer beyond 64 bits,
    NaN or infinity, or nesting deeper than `jsonsafe.MAX_DEPTH`. The check runs
    before the type check, so it names the argument instead of crashing later.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _storable_value(cls, value: object, info: ValidationInfo) -> object:
        found = jsonsafe.problem(value, where=info.field_name or "argument")
        if found:
            raise ValueError(found)
        return value


@dataclass(frozen=True)
class SandboxOptions:
    """What a command may reach.

    A command runs copy-on-write (`tools/overlay.py`) in a network namespace of its own:
    it never shares the worker's network. With `egress` (an `EgressGrant`, which the
    services compute from the policy) its only way out is agentweb's egress proxy, which
    lets through the grant's hosts and nothing else (`core/egress/`); without one it has
    no network at all. `network` (the policy grants network) and `approved` (a reviewer
    approved the command) say what was meant; they open nothing by themselves.
    What it changes is its effect, which the policy judges against `protected_paths`;
    the sandbox itself makes nothing read-only inside the workspace view.
    """

    network: bool = False
    approved: bool = False
    egress: EgressGrant | None = None
    protected_paths: tuple[str, ...] = ()
    web_allow_hosts: tuple[str, ...] = ()
    # Files whose contents search never shows (the policy's `secret_paths`).
    secret_paths: tuple[str, ...] = ()
    # Workspace-relative secret files a command sees as empty (`tools/secret_files.py`).
    masked_files: tuple[str, ...] = ()
    # The secret files a person approved this command to see (its preview's list).
    secrets_visible: tuple[str, ...] = ()
    # Filtered object stores shown over the workspace's git object directories, so that
    # no secret file's content can be read from git (`tools/git_view.py`).
    object_views: tuple[ObjectView, ...] = ()


@dataclass(frozen=True)
class ToolContext:
    """Where a tool runs and with what limits."""

    workspace: Path
    sandbox: SandboxOptions = field(default_factory=SandboxOptions)
    # Asked about once a second while a command runs: True ends it (a cancelled session).
    should_stop: Callable[[], bool] | None = None
    # Recorded in a commit trailer (`Agentweb-Session: <id>`) so a commit names its session.
    session_id: int | None = None
    # (name, email) for author and committer: never the server user's git config.
    git_author: tuple[str, str] = ("agentweb", "agentweb@localhost")
    # The workspace state the call's preview described (a file's content hash, the tree a
    # commit records, the head a pull request pushes): the tool runs only against it.
    preview_state: Mapping[str, Any] | None = None
    # Where create_pull_request opens pull requests; None: nowhere (the tool says so).
    forge: ForgeSettings | None = None
    # Judges and applies what a command changed in its copy-on-write view (the engine's
    # policy) and returns a note for the agent; None: nothing a command does is applied.
    effect_handler: Callable[[Effect], str] | None = None
    # What the policy says about a command, for run_command's preview: passed in by the
    # engine (`policy.preview.command_review`), so that the tools import no policy.
    review_command: ReviewCommand | None = None
    # Where effects held for a person are kept (apply_command_effect reads them there).
    effect_store: Path | None = None
    # Starts spawn_subagent's child session (the agent runtime's); None: no runtime.
    start_subagent: Callable[[], None] | None = None
    # The value of a secret an http skill tool names, or None when it is not offered.
    secrets: Callable[[str], str | None] | None = None
    # Given every connection a command tried through its egress proxy, once it has run
    # (the services store them on the call); None: they are only summed up in the output.
    on_connections: Callable[[tuple[Connection, ...]], None] | None = None


# Each simple command of a command with why it is held (the preview's "parts"), and the
# workspace paths it names that the secret patterns cover: called with the analysis, the
# workspace and the secret patterns.
ReviewCommand = Callable[
    ["CommandAnalysis", Path, tuple[str, ...]], tuple[list[dict[str, Any]], set[str]]
]


# How a tool shows a reviewer what a call would do, before it runs: called with the
# context, the validated args model and the validated arguments as a dict; returns the
# preview and the lines the call would change (None: no count). Raises ToolError when
# the call cannot work.
Preview = Callable[[ToolContext, Any, dict[str, Any]], tuple[dict[str, Any], int | None]]


@dataclass(frozen=True)
class Judged:
    """A spec's last word on a call (`ToolSpec.judge`): the verdict to record, and the
    arguments and preview it stands for (narrowed, when the spec narrowed the call)."""

    verdict: Verdict
    args: dict[str, Any]
    preview: dict[str, Any] | None


# What a spec adds to the policy's verdict, for a call the policy's checks cannot follow
# all the way (one that runs on an agent's own machine): called with the validated
# arguments, the verdict and the preview, after the engine's own checks.
Judge = Callable[[dict[str, Any], "Verdict", dict[str, Any] | None], Judged]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the engine prepares and runs it, whatever its kind (core, internal,
    skill): what it is (`facts`: the policy's and the card's), what the model reads, its
    arguments, how to preview it (None: no preview) and how to run it. The policy
    judges a call by the spec's name.

    The arguments are an args model (core and internal tools) or, for a tool described
    by JSON Schema (a skill's), `check`: raw arguments in, the arguments as stored out,
    a ToolError naming every bad one. `executor` is what the policy knows of how a skill
    tool runs. `judge` (None: the policy's verdict stands) is the spec's last word on the
    verdict: gate mode, for a tool use an agent runs on its own machine.
    """

    facts: ToolFacts
    description: str
    args_model: type[ToolArgs] | None
    run: Callable[[ToolContext, Any], str]
    preview: Preview | None = None
    check: Callable[[object], dict[str, Any]] | None = None
    input_schema: Mapping[str, Any] | None = None
    executor: Mapping[str, Any] | None = None
    judge: Judge | None = None

    @property
    def name(self) -> str:
        return self.facts.name

    def json_schema(self) -> dict[str, Any]:
        if self.args_model is None:
            return dict(self.input_schema or {"type": "object"})
        return copy.deepcopy(_model_schema(self.args_model))

    def validate(self, raw: object) -> tuple[Any, dict[str, Any]]:
        """What `run` and `preview` take, and the arguments as stored; a ToolError names
        every bad argument and what it needs."""
        if self.args_model is None:
            if self.check is None:
                raise TypeError(f"{self.name}: a spec without an args model needs `check`")
            args = self.check(raw)
            return args, args
        validated = validate_model(self.name, self.args_model, raw)
        return validated, validated.model_dump(exclude_none=True)

    def parsed(self, args: Mapping[str, Any]) -> Any:
        """What `run` takes, from arguments validated (and stored) before."""
        if self.args_model is None:
            return dict(args)
        return self.args_model.model_validate(dict(args))


@functools.cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, made once a process: pydantic builds it afresh on every call
    (8 % of an agent turn's CPU when every turn offered the tools to the model)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema
