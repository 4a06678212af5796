"""A command read as plain literal words, or refused: the first step of gate mode's proof.

bashlex (the analysis everywhere else) parses bash's whole grammar and so must agree
with bash on all of it; a proof cannot rest on that. This reader accepts a tiny subset
whose meaning is certain, character by character, and refuses everything else:

* words of letters, digits and `_ @ % + = : , . / -` (any letter or digit of any script),
  `'single-quoted'` text, and `"double-quoted"` text without `$ \\` \\ ! "`;
* simple commands joined by `&&`, `||`, `;`, a newline or `|`;
* redirections: `< FILE`, output to `/dev/null`, and `N>&M` between 0, 1 and 2.

So no expansion, substitution, arithmetic, subscript, glob, brace, tilde, comment,
here-document, process substitution, background job, subshell or group can appear,
and every word's value is exactly what the program receives. Assignments are refused
by the proof (a first word holding `=`). Pure Python, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Redirect", "Script", "Simple", "Unproven", "read_script"]

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
_DOUBLE_QUOTE_UNSAFE = frozenset('$`\\!"')
_BLANKS = frozenset(" \t")
_JOINERS = ("&&", "||", ";", "\n", "|")
_REDIRECTS = ("&>>", "&>", ">>", ">&", "<&", "<<", "<>", ">|", "<(", ">(", ">", "<")
_STD_FDS = frozenset({"0", "1", "2"})


class Unproven(ValueError):
    """The command falls outside the subset whose meaning is certain; says where."""


@dataclass(frozen=True)
class Redirect:
    """One redirection: `op` (`<`, `>`, `>>`, `&>`, `&>>`, `>&`), its fd and target."""

    op: str
    target: str
    fd: str = ""


@dataclass
class Simple:
    """One simple command: its words' values, where each word and its whole text end in
    the command (insertion points for the proof's narrowing), its redirections, and the
    joiner before it."""

    words: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    word_starts: list[int] = field(default_factory=list)
    word_ends: list[int] = field(default_factory=list)
    end: int = 0

    @property
    def program_end(self) -> int:
        return self.word_ends[0]

    joined_by: str = ""


@dataclass(frozen=True)
class Script:
    """The simple commands of a command string, in order."""

    commands: tuple[Simple, ...]


def read_script(text: str) -> Script:
    """The simple commands of `text`, or `Unproven` naming what is outside the subset."""
    return _Reader(text).read()


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.commands: list[Simple] = []
        self.current = Simple()

    def read(self) -> Script:
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in _BLANKS:
                self.at += 1
            elif self._joiner() or self._redirect(fd=""):
                continue
            elif char == "&":
                raise Unproven("`&` runs a command in the background")
            else:
                self._word()
        self._finish_command(last=True)
        return Script(tuple(self.commands))

    def _joiner(self) -> bool:
        for joiner in _JOINERS:
            if self.text.startswith(joiner, self.at):
                if joiner == "|" and self.text.startswith("|&", self.at):
                    raise Unproven("`|&` (a pipe that also takes stderr) is not plain")
                if joiner == ";" and self.text.startswith(";;", self.at):
                    raise Unproven("`;;` belongs to a case statement")
                self._finish_command(last=False)
                self.at += len(joiner)
                self.current = Simple(joined_by=";" if joiner == "\n" else joiner)
                return True
        return False

    def _finish_command(self, *, last: bool) -> None:
        command = self.current
        if not command.words:
            if last and not command.redirects and not self.commands and not command.joined_by:
                raise Unproven("the command is empty")
            if last and not command.redirects and command.joined_by == ";":
                return  # a trailing `;` or newline ends the last command
            raise Unproven("a command is missing around a `&&`, `||`, `;` or `|`")
        command.end = self._end_of_text()
        self.commands.append(command)

    def _end_of_text(self) -> int:
        end = self.at
        while end > 0 and self.text[end - 1] in _BLANKS:
            end -= 1
        return end

    def _redirect(self, fd: str) -> bool:
        for op in _REDIRECTS:
            if self.text.startswith(op, self.at):
                break
        else:
            return False
        if op in {"<<", "<>", ">|", "<(", ">(", "<&"}:
            raise Unproven(
                f"`{op}` (a here-document, process substitution or duplication) is not plain"
            )
        if op.startswith("&") and fd:
            raise Unproven(f"`{fd}{op}` is not a plain redirection")
        self.at += len(op)
        while self.at < len(self.text) and self.text[self.at] in _BLANKS:
            self.at += 1
        target = self._value_with_kind()[0]
        if not target:
            raise Unproven(f"`{op}` has no target")
        self.current.redirects.append(Redirect(op, target, fd))
        return True

    def _word(self) -> None:
        start = self.at
        value, bare_digits = self._value_with_kind()
        if bare_digits and self.at < len(self.text) and self.text[self.at] in "<>":
            self._redirect(fd=value)
            return
        self.current.word_starts.append(start)
        self.current.word_ends.append(self.at)
        self.current.words.append(value)

    def _value_with_kind(self) -> tuple[str, bool]:
        """One word's value; and whether it was bare digits (a redirection's fd)."""
        parts: list[str] = []
        bare = True
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in _BLANKS or char in "\n;|&<>":
                break
            if char == "'":
                parts.append(self._quoted("'", frozenset()))
                bare = False
            elif char == '"':
                parts.append(self._quoted('"', _DOUBLE_QUOTE_UNSAFE))
                bare = False
            elif self._literal(char):
                parts.append(char)
                self.at += 1
            else:
                raise Unproven(_why_not(char))
        value = "".join(parts)
        if value.startswith("="):  # even after empty quotes: `''=ls` is expanded by zsh
            raise Unproven("a word starting with `=` (zsh's equals expansion: a program's path)")
        return value, bare and value.isdigit()

    def _literal(self, char: str) -> bool:
        """A character that is itself and nothing more, in bash and in zsh (the shell of
        Claude Code on macOS): not `~`, `^` or `#`, which zsh's extended globbing reads
        as pattern operators anywhere in a word (`.e^x` matches `.env`)."""
        return char in _SAFE or (char.isalnum() and not char.isascii())

    def _quoted(self, quote: str, unsafe: frozenset[str]) -> str:
        end = self.text.find(quote, self.at + 1)
        if end < 0:
            raise Unproven(f"a {quote} quote is never closed")
        inner = self.text[self.at + 1 : end]
        bad = next((c for c in inner if c in unsafe), None)
        if bad is not None:
            raise Unproven(f"{_name(bad)} inside double quotes is expanded by the shell")
        if quote == "'" and self.text.startswith("'", end + 1):
            raise Unproven("`''` inside single quotes is a quote in zsh (rc_quotes), not in bash")
        self.at = end + 1
        return inner


_NAMES = {
    "$": "`$` (an expansion or substitution)",
    "`": "a backquote (a command substitution)",
    "\\": "a backslash escape",
    "!": "`!` (negation or history expansion)",
    '"': "a double quote",
    "*": "`*` (a glob)",
    "?": "`?` (a glob)",
    "[": "`[` (a glob, subscript or test)",
    "]": "`]`",
    "{": "`{` (a brace expansion or group)",
    "}": "`}`",
    "(": "`(` (a subshell, function or pattern)",
    ")": "`)`",
    "~": "`~` (a tilde expansion, or zsh's pattern operator: quote it, 'HEAD~1')",
    "^": "`^` (zsh's pattern operator: quote it, 'HEAD^')",
    "#": "`#` (a comment)",
}


def _name(char: str) -> str:
    return _NAMES.get(char, f"the character {char!r}")


def _why_not(char: str) -> str:
    return f"{_name(char)} is not a plain literal"
