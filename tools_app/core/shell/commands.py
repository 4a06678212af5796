"""Command analysis: every simple command a shell string would run.

The parser is bashlex: it is pure Python (no shell is ever started to look at a
command), it returns bash's own grammar as a full AST including command substitution
and process substitution nodes, and whatever it cannot parse raises, which is turned
into an `opaque` reason so that such a command is never allowed without a person.
bashlex nodes are untyped, so they are handled as `Any` here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from tools_app.core.shell.command_types import Redirect, SimpleCommand
from tools_app.core.shell.programs import (
    command_notes,
    reads_code_from_stdin,
    reads_only,
    unknown_wrapper_tail,
)
from tools_app.core.shell.wrappers import SHELLS, find_exec_commands, unwrap

__all__ = ["CommandAnalysis", "analyse_command"]

MAX_DEPTH = 8
_QUOTED_HEREDOC = re.compile(r"(?<!<)<<(-?)[ \t]*(?:'([^'\n]+)'|\"([^\"\n]+)\"|\\(\w+))")
_TIME_KEYWORD = re.compile(
    r"(^|[;&|(){}\n!]|\b(?:then|do|else)\b)([ \t]*)(time(?:[ \t]+-p)?)(?=[ \t])"
)


@dataclass(frozen=True)
class CommandAnalysis:
    """What a command string would run; `opaque` says why it cannot be fully known."""

    text: str
    commands: tuple[SimpleCommand, ...] = ()
    opaque: tuple[str, ...] = ()
    stages: tuple[tuple[tuple[int, ...], ...], ...] = ()

    @property
    def pipelines(self) -> tuple[tuple[int, ...], ...]:
        """Each pipeline as the command indices of its stages, in order."""
        return tuple(tuple(i for stage in line for i in stage) for line in self.stages)

    def pipes_into(self, first: int, second: int) -> bool:
        """True when command `first` feeds, directly or through later stages, `second`."""
        for line in self.stages:
            where = {i: n for n, stage in enumerate(line) for i in stage}
            if first in where and second in where and where[first] < where[second]:
                return True
        return False

    @property
    def reads_only(self) -> bool:
        """Every command is a known read-only program that writes no file: the fast path."""
        return not self.opaque and all(reads_only(c) for c in self.commands)


@dataclass
class _Builder:
    """Collects commands while one command string is walked."""

    text: str
    depth: int = 0
    quoted_heredocs: frozenset[str] = frozenset()
    commands: list[SimpleCommand] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    stages: list[tuple[tuple[int, ...], ...]] = field(default_factory=list)

    def note(self, reason: str) -> None:
        if reason not in self.opaque:
            self.opaque.append(reason)

    def add(self, command: SimpleCommand) -> int:
        self.commands.append(command)
        return len(self.commands) - 1

    def attach(self, indices: list[int], notes: list[str]) -> list[int]:
        """Record `notes` as opaque reasons, and on each command they belong to."""
        for reason in notes:
            self.note(reason)
        for index in indices:
            command = self.commands[index]
            added = tuple(n for n in notes if n not in command.notes)
            if added:
                self.commands[index] = _replace(command, notes=command.notes + added)
        return indices

    def merge(
        self, sub: CommandAnalysis, wrappers: tuple[str, ...], parent: int | None
    ) -> list[int]:
        """Take in the analysis of a nested script (`bash -c`), renumbered."""
        offset = len(self.commands)
        for command in sub.commands:
            nested_parent = command.parent + offset if command.parent is not None else parent
            self.commands.append(
                _replace(command, wrappers=wrappers + command.wrappers, parent=nested_parent)
            )
        for line in sub.stages:
            self.stages.append(tuple(tuple(i + offset for i in st) for st in line))
        for reason in sub.opaque:
            self.note(reason)
        return list(range(offset, len(self.commands)))

    def result(self) -> CommandAnalysis:
        return CommandAnalysis(
            self.text, tuple(self.commands), tuple(self.opaque), tuple(self.stages)
        )


def _replace(command: SimpleCommand, **changes: Any) -> SimpleCommand:
    return replace(command, **changes)


def analyse_command(command: str) -> CommandAnalysis:
    """Parse `command` into the simple commands it would run (never raises)."""
    return _analyse(command, 0)


@lru_cache(maxsize=2048)
def _analyse(text: str, depth: int) -> CommandAnalysis:
    if not text.strip():
        return CommandAnalysis(text)
    if depth > MAX_DEPTH:
        return CommandAnalysis(text, opaque=("nests shells too deeply to be checked",))
    prepared, quoted = _prepare(text)
    try:
        trees = _parse(prepared)
    except Exception as exc:  # bashlex raises many kinds of errors; all mean "unknown"
        return CommandAnalysis(text, opaque=(f"cannot be parsed ({_short(exc)})",))
    builder = _Builder(prepared, depth, quoted)
    try:
        for tree in trees:
            _walk(builder, tree)
    except RecursionError:
        builder.note("is nested too deeply to be checked")
    return _finish(builder, text)


def _parse(prepared: str) -> list[Any]:
    # Imported here: bashlex builds its parser's tables on import (0.4 s of CPU), which
    # only a process that reads a command should pay (not every daphne, worker or
    # manage.py command that starts).
    import bashlex  # type: ignore[import-untyped, unused-ignore]

    try:
        return list(bashlex.parse(prepared))
    except Exception:
        if "[[" not in prepared:
            raise
    # `[[ … ]]` is not in bashlex's grammar; as `[ … ]` it parses, and any operator
    # inside only adds commands or redirections to check, never hides one.
    return list(bashlex.parse(prepared.replace("[[", " [").replace("]]", "] ")))


def _prepare(text: str) -> tuple[str, frozenset[str]]:
    """Rewrite, keeping every offset, the two spellings bashlex gets wrong.

    A quoted here-document delimiter (`<<'EOF'`) makes bashlex fail; its body is
    literal, so the delimiter is unquoted and remembered. The `time` keyword is
    not implemented by bashlex; it only times the pipeline after it, so it is blanked.
    """
    quoted: set[str] = set()

    def unquote(match: re.Match[str]) -> str:
        name = match.group(2) or match.group(3) or match.group(4)
        quoted.add(name)
        replacement = f"<<{match.group(1)}{name}"
        return replacement + " " * (len(match.group(0)) - len(replacement))

    text = _QUOTED_HEREDOC.sub(unquote, text)
    text = _TIME_KEYWORD.sub(lambda m: m.group(1) + m.group(2) + " " * len(m.group(3)), text)
    return text, frozenset(quoted)


def _short(exc: Exception) -> str:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return message[:120]


def _finish(builder: _Builder, original: str) -> CommandAnalysis:
    """Post-walk checks that need the whole picture (who is fed on standard input)."""
    result = builder.result()
    for line in result.stages:
        for stage in line[1:]:
            for index in stage:
                if reads_code_from_stdin(result.commands[index]):
                    builder.note(
                        f"pipes text into {result.commands[index].program}, "
                        "which runs it without it being checked"
                    )
    result = builder.result()
    return CommandAnalysis(original, result.commands, result.opaque, result.stages)


# --- walking bashlex nodes -------------------------------------------------------------


def _walk(builder: _Builder, node: Any) -> list[int]:
    """Record the commands under `node`; return their indices (for pipeline stages)."""
    kind = node.kind
    if kind == "command":
        return _command(builder, node)
    if kind == "pipeline":
        return _pipeline(builder, node)
    if kind == "compound":
        found = _walk_all(builder, node.list)
        return _apply_redirects(builder, found, getattr(node, "redirects", []))
    if kind in {"list", "for", "while", "until", "if", "function"}:
        return _walk_all(builder, node.parts)
    if kind in {"word", "assignment"}:
        _substitutions(builder, node, None)
        return []
    if kind in {"reservedword", "operator", "pipe", "parameter", "tilde", "heredoc"}:
        return []
    builder.note(f"uses shell syntax ({kind}) that cannot be checked")
    return []


def _walk_all(builder: _Builder, nodes: list[Any]) -> list[int]:
    found: list[int] = []
    for part in nodes:
        found.extend(_walk(builder, part))
    return found


def _pipeline(builder: _Builder, node: Any) -> list[int]:
    stages: list[tuple[int, ...]] = []
    for part in node.parts:
        if part.kind in {"pipe", "reservedword"}:
            continue
        stages.append(tuple(_walk(builder, part)))
    if len(stages) > 1:
        builder.stages.append(tuple(stages))
    return [i for stage in stages for i in stage]


def _apply_redirects(builder: _Builder, found: list[int], redirect_nodes: list[Any]) -> list[int]:
    """`{ a; b; } > f`: the redirection applies to every command inside."""
    redirects = tuple(_redirect(builder, node, None) for node in redirect_nodes)
    for index in found:
        command = builder.commands[index]
        builder.commands[index] = _replace(command, redirects=command.redirects + redirects)
    return found


def _command(builder: _Builder, node: Any) -> list[int]:
    words: list[Any] = []
    assignments: list[Any] = []
    redirect_nodes: list[Any] = []
    for part in node.parts:
        if part.kind == "word":
            words.append(part)
        elif part.kind == "assignment":
            assignments.append(part)
        elif part.kind == "redirect":
            redirect_nodes.append(part)
        else:
            _walk(builder, part)
    argv = tuple(str(word.word) for word in words)
    dynamic = frozenset(i for i, word in enumerate(words) if _is_dynamic(builder, word))
    produced = _add_unwrapped(builder, node, argv, dynamic, assignments)
    parent = produced[0] if len(produced) == 1 else None
    redirects = tuple(_redirect(builder, r, parent) for r in redirect_nodes)
    for index in produced:
        command = builder.commands[index]
        builder.commands[index] = _replace(command, redirects=command.redirects + redirects)
        _check_stdin_script(builder, builder.commands[index], redirect_nodes)
    for item in (*words, *assignments):
        _substitutions(builder, item, parent)
    return produced


def _add_unwrapped(
    builder: _Builder,
    node: Any,
    argv: tuple[str, ...],
    dynamic: frozenset[int],
    assignments: list[Any],
) -> list[int]:
    """Add the command that really runs, or the commands of the script it runs."""
    notes: list[str] = []
    if argv and _BRACE_WORD.match(argv[0]):
        notes.append(f"builds its command from a brace expansion ({argv[0]})")
        argv, dynamic = (*_expand_braces(argv[0]), *argv[1:]), frozenset()
    unwrapped = unwrap(argv)
    wrappers = unwrapped.wrappers
    if unwrapped.script is not None:
        notes.extend(_script_notes(wrappers))
        if not dynamic.intersection(unwrapped.script_words):
            sub = _analyse(unwrapped.script, builder.depth + 1)
            return builder.attach(builder.merge(sub, wrappers, None), notes)
        notes.append(f"passes `{wrappers[-1]}` a script built at run time, which cannot be checked")
    start = unwrapped.start
    command = SimpleCommand(
        argv=argv[start:],
        assignments=(*(str(a.word) for a in assignments), *unwrapped.assignments),
        wrappers=wrappers,
        source=builder.text[node.pos[0] : node.pos[1]],
        dynamic=frozenset(i - start for i in dynamic if i >= start),
    )
    index = _add_noted(builder, command)
    return builder.attach([index, *_add_held(builder, index)], notes)


def _script_notes(wrappers: tuple[str, ...]) -> list[str]:
    notes = ["uses eval, which runs a string as a command"] if "eval" in wrappers else []
    for feeder in ("xargs", "parallel"):
        if feeder in wrappers:
            notes.append(f"{feeder} runs a shell script with arguments only known at run time")
    return notes


def _add_held(builder: _Builder, outer: int) -> list[int]:
    """Commands held in another's arguments: `find -exec CMD`, `mywrapper CMD`."""
    command = builder.commands[outer]
    produced: list[int] = []
    if command.program == "find":
        for exec_argv in find_exec_commands(command.argv):
            produced.extend(_add_nested(builder, outer, exec_argv, "find -exec"))
    hidden = unknown_wrapper_tail(command)
    if hidden is not None:
        note = (
            f"runs `{command.program}`, which may run `{hidden[0]}` as a command: "
            "checked as that command too"
        )
        nested = _add_nested(builder, outer, hidden, f"{command.program}?", known=True)
        produced.extend(builder.attach([outer, *nested], [note])[1:])
    return produced


def _add_noted(builder: _Builder, command: SimpleCommand) -> int:
    index = builder.add(command)
    builder.attach([index], command_notes(command))
    return index


def _add_nested(
    builder: _Builder, outer: int, argv: tuple[str, ...], label: str, known: bool = False
) -> list[int]:
    """A command held in another's arguments (`find -exec`), unwrapped and checked.

    `known` says the arguments it gets are all in `argv` (not names found at run time).
    """
    source = builder.commands[outer]
    unwrapped = unwrap(argv)
    wrappers = (*source.wrappers, label, *unwrapped.wrappers)
    if unwrapped.script is not None:
        produced = builder.merge(_analyse(unwrapped.script, builder.depth + 1), wrappers, None)
        note = f"{label} runs a shell script on names only known at run time"
    else:
        inner = SimpleCommand(argv[unwrapped.start :], wrappers=wrappers, source=source.source)
        produced = [_add_noted(builder, inner)] if inner.argv else []
        note = f"{label} runs `{inner.program}` on names only known at run time"
        known = known or reads_only(inner)
    if not known and produced:
        builder.attach([outer, *produced], [note])
    return produced


_BRACE_WORD = re.compile(r"^\{[^{}]*,[^{}]*\}$")


def _expand_braces(word: str) -> tuple[str, ...]:
    """`{rm,-rf,/}` in command position is the command `rm -rf /` to bash."""
    return tuple(word[1:-1].split(","))


def _is_dynamic(builder: _Builder, word: Any) -> bool:
    """True when a word's value depends on run time ($X, $(...), $'...')."""
    source = builder.text[word.pos[0] : word.pos[1]]
    if "$'" in source or '$"' in source:
        builder.note("uses $'...' quoting, which cannot be checked")
        return True
    return _has_expansion(word)


def _has_expansion(node: Any) -> bool:
    for part in getattr(node, "parts", None) or []:
        if part.kind in {"parameter", "commandsubstitution", "processsubstitution"}:
            return True
        if _has_expansion(part):
            return True
    return False


_SUBSTITUTION_REASONS = {
    "$": "uses command substitution $(...), which cannot be checked before it runs",
    "`": "uses backticks `...` (command substitution), which cannot be checked before it runs",
    "<": "uses process substitution <(...), which cannot be checked before it runs",
    ">": "uses process substitution >(...), which cannot be checked before it runs",
}


def _substitutions(builder: _Builder, node: Any, parent: int | None) -> None:
    """Walk the commands inside $(...), `...`, <(...) and >(...) of a word."""
    for part in getattr(node, "parts", None) or []:
        if part.kind in {"commandsubstitution", "processsubstitution"}:
            opener = builder.text[part.pos[0] : part.pos[0] + 1]
            builder.note(_SUBSTITUTION_REASONS.get(opener, _SUBSTITUTION_REASONS["$"]))
            for index in _walk(builder, part.command):
                command = builder.commands[index]
                if command.parent is None:
                    builder.commands[index] = _replace(command, parent=parent)
        else:
            _substitutions(builder, part, parent)


def _redirect(builder: _Builder, node: Any, parent: int | None) -> Redirect:
    fd = node.input if isinstance(getattr(node, "input", None), int) else None
    output = node.output
    if isinstance(output, int):
        return Redirect(str(node.type), f"&{output}", fd)
    _substitutions(builder, output, parent)
    heredoc = getattr(node, "heredoc", None)
    if heredoc is not None and str(output.word) not in builder.quoted_heredocs:
        body = str(heredoc.value)
        if "$(" in body or "`" in body:
            builder.note(
                "uses command substitution inside a here-document, which cannot be checked"
            )
    if node.type == "<<<" and _has_expansion(output):
        builder.note("uses a here-string with expansion, which cannot be checked")
    return Redirect(str(node.type), str(output.word), fd)


def _check_stdin_script(builder: _Builder, command: SimpleCommand, redirects: list[Any]) -> None:
    """`bash <<EOF … EOF` and `python <<< '…'` run code that arrives on stdin."""
    if not reads_code_from_stdin(command):
        return
    for node in redirects:
        if node.type not in {"<<", "<<-", "<<<"} or isinstance(node.output, int):
            continue
        heredoc = getattr(node, "heredoc", None)
        body = str(heredoc.value).rsplit("\n", 1)[0] if heredoc is not None else node.output.word
        if command.program in SHELLS or re.sub(r"[\d.]+$", "", command.program) in SHELLS:
            builder.merge(_analyse(str(body), builder.depth + 1), (f"{command.program} <<",), None)
        builder.note(f"feeds a script to {command.program} on standard input, unchecked")
