"""Gate mode's proof that a command only reads, and reads nothing secret.

A command of an agent that runs its own tools (Claude Code, Codex, Gemini CLI) runs on a
machine agentweb does not control: no sandbox, no effect judged afterwards. So it may
pass without a person only when it is *proven* harmless, from its text alone:

1. `words.read_script` reads it as plain literal words (or refuses it);
2. every program is on `programs.PROGRAMS` (or is `git` with a listed subcommand, `cd`
   or `find`), and every option it is given is one of that program's, spelled in full;
3. every path it names — operands, option values, `< FILE` — lies inside the session's
   directory, and, compared after Unicode normalisation and case folding (macOS and
   Windows fold case), is not in a `.git` directory nor matches a protected or secret
   pattern; output goes nowhere but the terminal and `/dev/null`.

What reads a whole tree (`rg`, `git diff`, `git show`, `git log -p`) is *narrowed*: the
proof appends the exclusions that keep the policy's secret files out (`--iglob '!PAT'`,
`:(exclude)` pathspecs); the narrowed command is what the agent is told to run.

Whatever is not proven waits for a person; the reason says which word failed. Pure
Python, no Django.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from tools_app.core.gate.programs import (
    FIND_FLAGS,
    FIND_PRIMARIES,
    GIT_GLOBAL,
    GIT_LOG_NAMES_ONLY,
    GIT_SHOWS_CONTENT,
    GIT_SUBCOMMANDS,
    PATTERN_OPTIONS,
    PROGRAMS,
    Kind,
    Program,
)
from tools_app.core.gate.words import Simple, Unproven, read_script
from tools_app.core.policy.defaults import HOME_SECRET_PATHS
from tools_app.core.tools.paths import protected_match

__all__ = ["Fence", "Proof", "any_case", "anywhere", "fold", "prove_command"]

_NUMBER = re.compile(r"[+-]?\d+[A-Za-z]{0,3}")
_KEYWORD = re.compile(r"[A-Za-z0-9_.,:+=-]+")
_OBJECT_ID = re.compile(r"[0-9a-fA-F]{4,64}")
_DESCRIBED = re.compile(r"-g[0-9a-fA-F]+$")  # git reads `ANY-gHEX` as the object HEX
# Settings that stop a repository's config from running programs (fsmonitor, hooks of
# an index write, a pager), and git from taking a bare repository the agent could have
# written (git 2.38 and later).
_GIT_SAFE_SETTINGS = (
    " --no-pager --no-optional-locks -c safe.bareRepository=explicit"
    " -c core.fsmonitor=false -c core.hooksPath=/dev/null -c log.showSignature=false"
    " -c gpg.program=false -c gpg.openpgp.program=false -c gpg.x509.program=false"
    " -c gpg.ssh.program=false"
)
# No repository above the session's directory (a dotfiles home, a monorepo around it),
# and no fetch of a missing object (a partial clone's promisor remote runs its command).
_GIT_ENVIRONMENT = "GIT_CEILING_DIRECTORIES={ceiling} GIT_NO_LAZY_FETCH=1 GIT_ALLOW_PROTOCOL=none "
# Diff drivers a repository's .gitattributes may name, with commands in its config; a
# submodule's own diff (diff.submodule=diff), which takes none of these options; and
# blame's ignore-revs file, whose first line it prints in its error.
_GIT_DIFF_OPTIONS = " --no-ext-diff --no-textconv --submodule=short"
_GIT_DIFFS = {
    "diff": _GIT_DIFF_OPTIONS,
    "show": _GIT_DIFF_OPTIONS,
    "log": _GIT_DIFF_OPTIONS,
    "blame": " --no-textconv --no-ignore-revs-file",
}
_SIGNATURE = re.compile(r"%[-+ ]?G")  # `%G?`, `%+GS`: a signature, checked by gpg
_BACKREFERENCE = re.compile(r"\\[1-9]")
_REVISION = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_@+.~^/-]*")
_MACHINE_SECRETS = re.compile(
    "|".join(re.escape("/" + p.removeprefix("~/").rstrip("/")) + "(/|$)" for p in HOME_SECRET_PATHS)
    + r"|^/proc/[^/]+/(environ|mem|cmdline)$"
)
_HARMLESS_OUTPUT = "/dev/null"


@dataclass(frozen=True)
class Fence:
    """What the proof checks paths against: the session's directory (absolute) and the
    policy's protected and secret patterns."""

    root: str
    protected: tuple[str, ...] = ()
    secret: tuple[str, ...] = ()

    def folded(self) -> Fence:
        return Fence(
            self.root,
            tuple(fold(p) for p in self.protected),
            tuple(fold(p) for p in self.secret),
        )


@dataclass(frozen=True)
class Proof:
    """Proven or not; why not; and the command narrowed, when the proof narrowed it."""

    proven: bool
    reason: str = ""
    narrowed: str = ""
    notes: tuple[str, ...] = ()


def fold(text: str) -> str:
    """A path or pattern as a case-folding, normalising file system compares it."""
    return unicodedata.normalize("NFKC", text).casefold()


def prove_command(command: str, where: str, fence: Fence) -> Proof:
    """Whether `command`, run in `where`, is proven to only read non-secret files inside
    the session's directory; narrowed where a whole tree is read."""
    try:
        return _Prover(command, fence).prove(where)
    except Unproven as exc:
        return Proof(False, str(exc))


@dataclass
class _Prover:
    command: str
    fence: Fence
    dirs: set[str] = field(default_factory=set)
    insertions: list[tuple[int, str]] = field(default_factory=list)
    given: set[str] = field(default_factory=set)  # the options of the command being read
    notes: list[str] = field(default_factory=list)
    walked: list[str] = field(default_factory=list)  # what the agent's machine checks first

    def prove(self, where: str) -> Proof:
        self.fence = self.fence.folded()
        root = posixpath.normpath(self.fence.root or "/")
        start = posixpath.normpath(posixpath.join(root, where or "."))
        if not _within(start, root):
            raise Unproven(f"it runs in {where}, outside the session's directory {root}")
        self.dirs = {start}
        self._walk(root, posixpath.relpath(start, root))
        for simple in read_script(self.command).commands:
            self._simple(simple)
        narrowed = self.command
        # From the end back; at one place, the last added first, so they read in order.
        ordered = sorted(enumerate(self.insertions), key=lambda i: (i[1][0], i[0]), reverse=True)
        for _, (at, text) in ordered:
            narrowed = narrowed[:at] + text + narrowed[at:]
        if self.walked:
            narrowed = _only_plain_files(list(dict.fromkeys(self.walked)), narrowed)
            self.notes.append(
                "it runs only if no path it names is a symbolic link or a special file "
                "(checked on the agent's machine first)"
            )
        changed = narrowed if narrowed != self.command else ""
        return Proof(True, "", changed, tuple(dict.fromkeys(self.notes)))

    # --- one simple command -----------------------------------------------------------

    def _simple(self, simple: Simple) -> None:
        for redirect in simple.redirects:
            self._redirect(redirect.op, redirect.target, redirect.fd)
        program, args = simple.words[0], simple.words[1:]
        if "=" in program:
            raise Unproven(f"`{program}` sets a variable")
        if "/" in program:
            raise Unproven(f"`{program}` runs a program by its path, not one gate mode knows")
        if program == "cd":
            self._cd(args, simple)
        elif program == "find":
            self._find(args)
        elif program == "git":
            self._git(args, simple)
        elif program in PROGRAMS:
            operands = self._options(program, PROGRAMS[program], args)
            self._operands(program, PROGRAMS[program], operands, simple)
        else:
            raise Unproven(
                f"`{program}` is not one of the programs gate mode has proven to only read"
            )

    def _redirect(self, op: str, target: str, fd: str) -> None:
        if op == "<":
            self._path(target, "reads")
        elif op == ">&" and fd in {"", "1", "2"} and target in {"1", "2"}:
            return
        elif target != _HARMLESS_OUTPUT:
            raise Unproven(f"`{fd}{op} {target}` writes a file")

    def _cd(self, args: list[str], simple: Simple) -> None:
        if len(args) != 1 or args[0].startswith("-"):
            raise Unproven("`cd` is proven only with one directory inside the session's")
        for directory in list(self.dirs):
            self.dirs.add(self._path(args[0], "enters", base=directory)[0])
        if not args[0].startswith(("/", "./", "../")) and args[0] not in {".", ".."}:
            # `cd NAME` looks in CDPATH's directories first; `cd ./NAME` only here
            self.insertions.append((simple.word_starts[1], "./"))

    # --- options and operands -----------------------------------------------------------

    def _options(self, name: str, spec: Program, args: list[str]) -> list[tuple[str, bool]]:
        """The operands (with whether they came after `--`), every option checked."""
        operands: list[tuple[str, bool]] = []
        self.given = set()
        ended = not spec.takes_options
        words = iter(args)
        for word in words:
            if ended or word == "-" or not word.startswith("-"):
                operands.append((word, ended))
            elif word == "--":
                ended = True
            elif word.startswith("--"):
                self._long(name, spec, word, words)
            elif spec.numeric_option and word[1:].isdigit():
                continue
            else:
                self._short(name, spec, word, words)
        return operands

    def _long(self, name: str, spec: Program, word: str, words: Iterable[str]) -> None:
        option, has_value, value = word.partition("=")
        self.given.add(option)
        kind = spec.long.get(option)
        if kind is None and option in spec.optional:
            if has_value:
                self._value(spec.optional[option], value, f"{name} {option}")
            return
        if kind is None:
            raise Unproven(f"`{name} {option}` is not an option gate mode has proven to only read")
        if kind == "flag":
            if has_value:
                raise Unproven(f"`{name} {option}` takes no value")
            return
        if not has_value:
            value = _next(words, f"{name} {option}")
        self._value(kind, value, f"{name} {option}")

    def _short(self, name: str, spec: Program, word: str, words: Iterable[str]) -> None:
        for at, letter in enumerate(word[1:], start=1):
            self.given.add(f"-{letter}")
            if letter in spec.attached:  # its value, if any, is the rest of this word
                if word[at + 1 :]:
                    self._value(spec.attached[letter], word[at + 1 :], f"{name} -{letter}")
                return
            kind = spec.short.get(letter)
            if kind is None:
                raise Unproven(
                    f"`{name} -{letter}` is not an option gate mode has proven to only read"
                )
            if kind != "flag":
                value = word[at + 1 :] or _next(words, f"{name} -{letter}")
                self._value(kind, value, f"{name} -{letter}")
                return

    def _value(self, kind: Kind, value: str, option: str) -> None:
        if kind == "num" and not _NUMBER.fullmatch(value):
            raise Unproven(f"`{option}` takes a number, got `{value}`")
        if kind == "word" and not _KEYWORD.fullmatch(value):
            raise Unproven(f"`{option}` takes a plain keyword, got `{value}`")
        if kind == "format" and _SIGNATURE.search(value):
            raise Unproven(f"`{option}` with `%G` checks signatures: git runs gpg")
        if kind == "regex" and _BACKREFERENCE.search(value):
            raise Unproven(f"`{option}` with a backreference (`\\1`) may take forever to match")
        if kind == "path":
            self._path(value, "reads")

    def _operands(
        self, name: str, spec: Program, operands: list[tuple[str, bool]], simple: Simple
    ) -> None:
        if spec.operands == "none" and operands:
            raise Unproven(f"`{name}` is proven only without operands")
        if spec.max_operands is not None and len(operands) > spec.max_operands:
            raise Unproven(f"`{name}` with more than {spec.max_operands} operands writes a file")
        if spec.operands in {"text", "none"}:
            return
        paths = [value for value, _ in operands]
        if spec.operands == "pattern_then_paths" and not self.given & PATTERN_OPTIONS:
            if paths:  # the pattern, read as `-e`'s value is
                self._value(spec.short.get("e", "text"), paths[0], f"{name}'s pattern")
            paths = paths[1:]
        for path in paths:
            if path.startswith("+"):
                raise Unproven(
                    f"`{name} {path}`: a word starting with `+` is an option to some "
                    "programs (`tail +f` follows a file forever)"
                )
            self._path(path, "reads")
        if spec.recursive and "--files" not in self.given:  # names are not contents
            self._narrow_search(simple)

    # --- find and git -------------------------------------------------------------------

    def _find(self, args: list[str]) -> None:
        at = 0
        while at < len(args) and not args[at].startswith("-"):
            self._path(args[at], "lists")
            at += 1
        while at < len(args):
            word = args[at]
            if word in FIND_FLAGS:
                at += 1
            elif word in FIND_PRIMARIES and at + 1 < len(args):
                self._value(FIND_PRIMARIES[word], args[at + 1], f"find {word}")
                at += 2
            else:
                raise Unproven(f"`find {word}` is not a test gate mode has proven to only read")

    def _git(self, args: list[str], simple: Simple) -> None:
        globals_given = 0
        while globals_given < len(args) and args[globals_given] in GIT_GLOBAL:
            globals_given += 1
        args = args[globals_given:]
        if not args or args[0] not in GIT_SUBCOMMANDS:
            what = f"`git {args[0]}`" if args else "`git` alone"
            raise Unproven(f"{what} is not a git command gate mode has proven to only read")
        sub, spec = args[0], GIT_SUBCOMMANDS[args[0]]
        # the subcommand is the word after `git` and its global options
        self._harden_git(sub, simple, sub_end=simple.word_ends[1 + globals_given])
        operands = self._options(f"git {sub}", spec, args[1:])
        for value, after_dashes in operands:
            if not after_dashes and spec.operands == "revisions_or_paths":
                _revision(sub, value)
            if spec.operands != "text":
                self._path(value, "reads", walks=False)  # git reads a link as a link
        if spec.operands == "none" and operands:
            raise Unproven(f"`git {sub}` is proven only without operands")
        shows = sub in GIT_SHOWS_CONTENT or bool(self.given - GIT_LOG_NAMES_ONLY)
        if shows and sub in {"diff", "show", "log"}:  # blame's operands are checked paths
            self._narrow_git(sub, simple)

    def _harden_git(self, sub: str, simple: Simple, sub_end: int) -> None:
        """What a repository's own config or attributes could make git run, switched off
        in the command the agent is told to run: the repository may have come from
        anywhere (a clone, an unpacked archive), and its config from whoever wrote it."""
        root = posixpath.normpath(self.fence.root or "/")
        ceiling = shlex.quote(posixpath.dirname(root))
        self.insertions.append((simple.word_starts[0], _GIT_ENVIRONMENT.format(ceiling=ceiling)))
        # not `-c core.worktree`: git reads that from the repository's config file alone
        worktree = f" --work-tree={shlex.quote(root)}"
        self.insertions.append((simple.program_end, _GIT_SAFE_SETTINGS + worktree))
        self.notes.append(
            "git takes only the repository of the session's directory, with that directory "
            "as its work tree; runs no fsmonitor, hook, pager, signature check or fetch; "
            "and writes no index (environment, -c settings, --no-optional-locks)"
        )
        if sub in _GIT_DIFFS:
            self.insertions.append((sub_end, _GIT_DIFFS[sub]))
            self.notes.append(f"git {sub} runs no external diff or textconv driver")

    # --- paths --------------------------------------------------------------------------

    def _walk(self, directory: str, value: str) -> None:
        """The places the machine walks through to reach `value` from `directory`, as
        the kernel walks them (`a/../b` goes through `a`): the proof reads names only,
        so each must turn out to be no symbolic link (which could lead to a secret or
        out of the session's directory) and no device, FIFO or socket (which may never
        end) before the command runs."""
        walked = directory
        for part in value.split("/"):
            if part in {"", "."}:
                continue
            walked = posixpath.join(walked, part)
            if part != "..":
                self.walked.append(walked)

    def _path(self, value: str, verb: str, base: str = "", walks: bool = True) -> list[str]:
        """The absolute places `value` may name (one per possible current directory);
        `walks`: the program follows a link it names (git does not)."""
        if not value:
            raise Unproven(f"an empty path is not a plain path to {verb.rstrip('s')}")
        if value == "-":
            return []
        root = posixpath.normpath(self.fence.root or "/")
        places = []
        for directory in [base] if base else sorted(self.dirs):
            full = posixpath.normpath(posixpath.join(directory, value))
            if not _within(full, root):
                secret = " (a secret of the machine)" if _MACHINE_SECRETS.search(fold(full)) else ""
                raise Unproven(f"it {verb} `{value}`, outside the session's directory{secret}")
            self._covered(value, verb, posixpath.relpath(full, root))
            places.append(full)
            if walks:
                self._walk(directory, value)
        return places

    def _covered(self, value: str, verb: str, relative: str) -> None:
        folded = fold(relative)
        if ".git" in folded.split("/"):
            raise Unproven(f"it {verb} `{value}`, inside a .git directory")
        for kind, patterns in (("secret", self.fence.secret), ("protected", self.fence.protected)):
            pattern = protected_match(patterns, folded)
            if pattern is not None:
                raise Unproven(f"it {verb} `{value}`, a {kind} path (`{pattern}`)")

    # --- narrowing ------------------------------------------------------------------------

    def _narrow_search(self, simple: Simple) -> None:
        """The exclusions go right after `rg`, before any `--` (after it they would be
        paths), and as globs they outrank the repository's ignore files (a `.ignore`
        of `!.env` or `!.git/` brings nothing back)."""
        patterns = [p for p in self.fence.secret if p.strip() and not p.startswith("#")]
        excluded = [*patterns, ".git"]
        globs = " ".join(f"--iglob {shlex.quote('!' + anywhere(p))}" for p in excluded)
        self.insertions.append((simple.program_end, " " + globs))
        self.notes.append("rg leaves out .git and the policy's secret files (--iglob '!PATTERN')")

    def _narrow_git(self, sub: str, simple: Simple) -> None:
        """`:(exclude)` pathspecs at the end; without `--` git takes a word starting
        `:(` as a pathspec, so the operands before keep their meaning."""
        patterns = [p for p in self.fence.secret if p.strip() and not p.startswith("#")]
        if not patterns:
            return
        magic = ":(top,exclude,icase,glob)"
        # A pattern names a file or a directory: `.env` and `.env/x` alike.
        globs = [glob for p in patterns for glob in (anywhere(p), anywhere(p) + "/**")]
        excludes = " ".join(shlex.quote(magic + glob) for glob in globs)
        self.insertions.append((simple.end, f" {excludes}"))
        self.notes.append(f"git {sub} leaves out the policy's secret files (:(exclude) pathspecs)")


def _only_plain_files(walked: list[str], command: str) -> str:
    """`command`, run only when none of the `walked` places is a symbolic link or a
    special file: shell builtins alone, the same in bash and zsh, as one compound
    command (a `cd DIR &&` in front of it still guards all of it)."""
    places = " ".join(shlex.quote(place) for place in walked)
    odd = " || ".join(f'test -{kind} "$agentweb_path"' for kind in "LpcbS")
    return (
        f"{{ for agentweb_path in {places}; do if {odd}; then "
        'echo "agentweb: $agentweb_path is a symbolic link or a special file, which gate '
        'mode does not read unseen" >&2; break; fi; agentweb_path=; done; '
        f'if test -z "$agentweb_path"; then {command}\nelse false; fi; }}'
    )


def _next(words: Iterable[str], option: str) -> str:
    value = next(iter(words), None)
    if value is None:
        raise Unproven(f"`{option}` is missing its value")
    return value


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _revision(sub: str, value: str) -> None:
    """A revision a proof can vouch for: not `REV:PATH` (a file's content at REV), not an
    object id, bare or as `git describe` writes it (`NAME-gID`): either may name a blob,
    printed whole."""
    if ":" in value:
        raise Unproven(f"`git {sub} {value}` names a file at a revision (`REV:PATH`)")
    if _OBJECT_ID.fullmatch(value) or _DESCRIBED.search(value):
        raise Unproven(f"`git {sub} {value}` names an object by its id, which may be a file's")
    if not _REVISION.fullmatch(value):
        raise Unproven(f"`git {sub} {value}` is not a plain revision or path")


def anywhere(pattern: str) -> str:
    """A policy pattern as a glob that matches it at any depth (over-matching is safe)."""
    body = pattern.strip().lstrip("/")
    return body if body.startswith("**/") else f"**/{body}"


def any_case(glob: str) -> str:
    """A glob that matches every case of its letters (`.env` → `.[eE][nN][vV]`), for a
    tool whose globs are case-sensitive on a file system that is not. A glob with a
    class of its own is left as it is."""
    if "[" in glob:
        return glob
    return "".join(f"[{c.lower()}{c.upper()}]" if c.lower() != c.upper() else c for c in glob)
