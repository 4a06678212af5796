"""Where a shell command writes (redirections, `tee`, the usual file movers), and
which paths it names at all (`named_paths`: the secret ones need a person).

The sandbox also stops unapproved commands from writing `.git` and protected paths;
this lets the policy ask a person first, with the path named, instead of letting the
command fail half-way.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from tools_app.core.policy.paths import command_target
from tools_app.core.policy.patterns import shape_of
from tools_app.core.shell.command_types import SimpleCommand
from tools_app.core.shell.commands import CommandAnalysis
from tools_app.core.tools.paths import in_git_dir, protected_match, workspace_roots_kept

_ALL_POSITIONALS = frozenset(
    {"tee", "rm", "rmdir", "unlink", "shred", "truncate", "touch", "mkdir", "sed", "perl"}
)
_LAST_POSITIONAL = frozenset({"cp", "mv", "ln", "install", "rsync"})


def _named_targets(command: SimpleCommand) -> list[str]:
    program = command.program
    if program in {"sed", "perl"} and not any(a.startswith("-i") for a in command.args):
        return []
    positionals = list(shape_of(command).positionals)
    if program in _ALL_POSITIONALS:
        return positionals
    if program in _LAST_POSITIONAL and len(positionals) > 1:
        return positionals[-1:]
    if program == "dd":
        return [a[3:] for a in command.args if a.startswith("of=")]
    return []


def _raw_targets(command: SimpleCommand) -> list[str]:
    found = [r.target for r in command.redirects if r.writes]
    return found + _named_targets(command)


def _next_cwd(cwd: str | None, command: SimpleCommand, workspace: Path) -> str | None:
    """Follow `cd DIR` so that `cd .git && echo x > config` is seen for what it is."""
    if command.program not in {"cd", "pushd"}:
        return cwd
    args = [a for a in command.args if not a.startswith("-")]
    if len(args) != 1 or command.dynamic:
        return None
    return command_target(workspace, cwd or ".", args[0])


def write_targets(analysis: CommandAnalysis, workspace: Path) -> Iterator[tuple[str, str]]:
    """(command text, workspace-relative path) for each write inside the workspace."""
    cwd: str | None = "."
    for command in analysis.commands:
        cwd = _next_cwd(cwd, command, workspace)
        for raw in _raw_targets(command):
            path = command_target(workspace, cwd or ".", raw)
            if path is not None:
                yield command.source or command.text, posixpath.normpath(path)


def named_paths(analysis: CommandAnalysis, workspace: Path) -> Iterator[tuple[str, str]]:
    """(command text, workspace-relative path) for every word of every simple command
    that names a path inside the workspace: program, arguments, assignments and
    redirect targets, also the value of `--opt=VALUE` and curl's `@FILE`. Words known
    only at run time are not read (the sandbox masks what they reach)."""
    cwd: str | None = "."
    for command in analysis.commands:
        cwd = _next_cwd(cwd, command, workspace)
        words = [w for n, w in enumerate(command.argv) if n not in command.dynamic]
        words += [a.split("=", 1)[1] for a in command.assignments if "=" in a]
        words += [r.target for r in command.redirects]
        for word in words:
            for raw in _spellings(word):
                path = _inside(workspace, cwd or ".", raw)
                if path is not None:
                    yield command.source or command.text, posixpath.normpath(path)


def _inside(workspace: Path, cwd: str, word: str) -> str | None:
    """Where a word lands as a path, or None (`~user` of no one, a name too long …)."""
    try:
        return command_target(workspace, cwd, word)
    except (RuntimeError, OSError, ValueError):
        return None


SecretTarget = tuple[str, str, str]  # command text, workspace-relative path, pattern
_judgment: ContextVar[dict[tuple[int, Path, tuple[str, ...]], Any] | None] = ContextVar(
    "secret_targets_of_one_judgment", default=None
)


@contextmanager
def one_judgment() -> Iterator[None]:
    """Within, `secret_targets` of the same command, workspace and patterns is found
    once: a call's preview and its checks both ask, and each word is resolved on the
    filesystem (symlinks followed), a fifth of an allowed hook's work asked twice; and
    the workspace's own real path is found once, not once per word. Only within one
    judgment: a later call is judged on the filesystem as it is then."""
    token = _judgment.set({})
    try:
        with workspace_roots_kept():
            yield
    finally:
        _judgment.reset(token)


def secret_targets(
    analysis: CommandAnalysis, workspace: Path, patterns: Sequence[str]
) -> tuple[SecretTarget, ...]:
    """(command text, path, pattern) for each path the command names that is secret."""
    if not patterns:
        return ()
    found = _judgment.get()
    if found is None:
        return _secret_targets(analysis, workspace, patterns)
    key = (id(analysis), workspace, tuple(patterns))
    if key not in found:  # the analysis is kept with its result: its id stays its own
        found[key] = (analysis, _secret_targets(analysis, workspace, patterns))
    targets: tuple[SecretTarget, ...] = found[key][1]
    return targets


def _secret_targets(
    analysis: CommandAnalysis, workspace: Path, patterns: Sequence[str]
) -> tuple[SecretTarget, ...]:
    return tuple(
        (text, path, pattern)
        for text, path in named_paths(analysis, workspace)
        if (pattern := protected_match(patterns, path)) and not in_git_dir(path)
    )


def _spellings(word: str) -> list[str]:
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    return found + [w[1:] for w in found if w.startswith("@")]
