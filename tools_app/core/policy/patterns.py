"""Command patterns: `rm -rf /`, `curl | sh`, `npm install` as admins write them.

A pattern is a shell snippet parsed like any command. A one-command pattern matches a
simple command with the same program (same family: `sh` is also `bash`, `python3` is
`python`) whose flags include the pattern's flags (`-rf` is the set {r, f}; for `rm`,
`--recursive` and `-R` are `r`, `--force` is `f`) and whose other arguments include the
pattern's, in order. So `rm -rf /` also catches `sudo /bin/rm --force -r /` and
`npm install` catches `npm install lodash`. `A | B` matches when a command matching A
feeds a command matching B through a pipe, directly or through later stages.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from tools_app.core.shell.command_types import SimpleCommand
from tools_app.core.shell.commands import CommandAnalysis, analyse_command
from tools_app.core.shell.wrappers import SHELLS

_VERSIONED = re.compile(r"^(python|pip|perl|ruby|node|php)[\d.]*$")
_RM_ALIASES = {"--recursive": "r", "R": "r", "--force": "f", "--dir": "d"}
FLAG_ALIASES: dict[str, dict[str, str]] = {
    "rm": _RM_ALIASES,
    "cp": {"--recursive": "r", "R": "r", "--force": "f"},
    "chmod": {"--recursive": "R"},
    "chown": {"--recursive": "R"},
    "chgrp": {"--recursive": "R"},
    "git": {"--force": "f"},
}


def family(program: str) -> str:
    """Programs that are interchangeable for matching: every shell is `sh`."""
    if program in SHELLS:
        return "sh"
    match = _VERSIONED.match(program)
    return match.group(1) if match else program


@dataclass(frozen=True)
class Shape:
    """A command reduced to what patterns compare: program family, flags, other words."""

    program: str
    flags: frozenset[str]
    positionals: tuple[str, ...]


@lru_cache(maxsize=8192)
def shape_of(command: SimpleCommand) -> Shape:
    """The program, flags and words of a command (cached: every pattern asks again)."""
    aliases = FLAG_ALIASES.get(command.program, {})
    flags: set[str] = set()
    positionals: list[str] = []
    options_done = False
    for arg in command.args:
        if options_done or arg == "-" or not arg.startswith("-"):
            positionals.append(normalise_word(arg))
        elif arg == "--":
            options_done = True
        elif arg.startswith("--"):
            name = arg.split("=", 1)[0]
            flags.update(
                {aliases.get(name, name), arg} if "=" in arg else {aliases.get(name, name)}
            )
        else:
            flags.update(aliases.get(letter, letter) for letter in arg[1:])
    return Shape(family(command.program), frozenset(flags), tuple(positionals))


def normalise_word(word: str) -> str:
    """`//` and trailing `/.` spell the same path; patterns compare the plain form."""
    if not word.startswith("/"):
        return word
    return re.sub(r"/+", "/", posixpath.normpath(word))


def _in_order(wanted: tuple[str, ...], present: tuple[str, ...]) -> bool:
    remaining = iter(present)
    return all(any(word == item for item in remaining) for word in wanted)


def shape_matches(pattern: Shape, command: SimpleCommand) -> bool:
    actual = shape_of(command)
    return (
        pattern.program == actual.program
        and pattern.flags <= actual.flags
        and _in_order(pattern.positionals, actual.positionals)
    )


@dataclass(frozen=True)
class CommandPattern:
    """A compiled pattern: pipeline stages, or several commands that must all occur."""

    source: str
    stages: tuple[Shape, ...] = ()
    each: tuple[Shape, ...] = ()


@lru_cache(maxsize=4096)
def compile_pattern(text: str) -> CommandPattern | None:
    """The pattern, or None when the snippet holds no command that can be parsed."""
    analysis = analyse_command(text)
    if not analysis.commands:
        return None
    if analysis.stages:
        line = analysis.stages[0]
        stages = tuple(shape_of(analysis.commands[stage[0]]) for stage in line if stage)
        return CommandPattern(text, stages=stages)
    return CommandPattern(text, each=tuple(shape_of(c) for c in analysis.commands))


def pattern_match(pattern: CommandPattern, analysis: CommandAnalysis) -> str | None:
    """The matched part of the command (for a reason), or None."""
    commands = analysis.commands
    if pattern.stages:
        return _pipeline_match(pattern.stages, analysis)
    found: list[str] = []
    for shape in pattern.each:
        hit = next((c.text for c in commands if shape_matches(shape, c)), None)
        if hit is None:
            return None
        found.append(hit)
    return "; ".join(found)


def _pipeline_match(stages: tuple[Shape, ...], analysis: CommandAnalysis) -> str | None:
    def extend(index: int, rest: tuple[Shape, ...], chain: list[str]) -> str | None:
        if not rest:
            return " | ".join(chain)
        for nxt, command in enumerate(analysis.commands):
            if analysis.pipes_into(index, nxt) and shape_matches(rest[0], command):
                hit = extend(nxt, rest[1:], [*chain, command.text])
                if hit:
                    return hit
        return None

    for start, command in enumerate(analysis.commands):
        if shape_matches(stages[0], command):
            hit = extend(start, stages[1:], [command.text])
            if hit:
                return hit
    return None


def first_match(patterns: Iterable[str], analysis: CommandAnalysis) -> tuple[str, str] | None:
    """(pattern, matched part) of the first pattern that matches the command."""
    for text in patterns:
        pattern = compile_pattern(text)
        if pattern is not None:
            hit = pattern_match(pattern, analysis)
            if hit is not None:
                return text, hit
    return None
