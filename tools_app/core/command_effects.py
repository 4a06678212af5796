"""A command's effect judged like a write, without Django.

`run_command` runs on a copy-on-write view; what it changed (tools/effect.py) is one
change. It is applied whole, waits whole for a person (who sees the whole diff), or
is refused whole: `mv .env moved.env` never applies `moved.env` while the deletion of
`.env` waits.

* Refused whole: a bound the reader crossed (entries, depth, size), anything the
  effect cannot express safely (devices, setuid bits, hard links, symlinks leading
  outside), any change inside `.git` (the git tools are the way), and more changed
  lines than `max_diff_lines` allows.
* Waiting whole: a protected path anywhere in it (a file it removes with its
  directory too), even after an approved command (approving `npm install` does not
  approve what it writes to `.env`), or more lines than `require_approval_above`.
* `.git/index` is not a change while what it stages is the same: `git status` and
  `git diff` rewrite it to refresh their stat cache, and an ordinary read-only git
  command must not make the rest of a command's effect refused. It is left out.

Changed lines count as `git diff` would for paths that are not ignored, against the
ignore rules as they were before the command (the workspace's), and every path git
tracks counts whatever the ignore files say.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from tools_app.core.policy.types import PolicySpec, SessionCounters
from tools_app.core.tools import files, lines, paths, trees
from tools_app.core.tools.effect import Effect, EffectEntry
from tools_app.core.tools.paths import protected_match

MAX_PREVIEW_CHARS = 2 * 1024 * 1024
# Past this many files a removed directory is not counted file by file: it waits for a
# person instead (bounded work for the worker, and nobody deletes that much unseen).
MAX_REMOVED_FILES = 50_000
GIT_INDEX = ".git/index"
PROBLEMS_SHOWN = 5

Action = Literal["apply", "hold", "refuse"]


@dataclass(frozen=True)
class EffectVerdict:
    """What happens to the whole effect, and why, for the agent and a reviewer.

    `paths` is what applies or waits: every entry but an unchanged `.git/index`;
    `short` is the reason as a badge shows it, when it differs from `reason`.
    """

    action: Action
    paths: frozenset[str] = frozenset()
    reason: str = ""
    changed_lines: int = 0
    short: str = ""


def removed_trees(workspace: Path, effect: Effect) -> dict[str, list[str] | None]:
    """The files below each directory the effect removes or replaces (None: too many,
    or not readable: then nobody can say what it takes with it).

    Overlay records `rm -rf config` as one whiteout; what it deletes, `config/.env`
    included, is only seen by looking at the workspace below it.
    """
    root = Path(os.path.realpath(workspace))
    found: dict[str, list[str] | None] = {}
    for entry in effect.entries:
        if entry.before == "dir" and entry.kind != "dir":
            found[entry.path] = _files_below(root, entry.path)
    return found


def _files_below(root: Path, rel: str) -> list[str] | None:
    try:
        below = list(trees.walk_files(root / rel, limit=MAX_REMOVED_FILES + 1))
    except OSError:
        return None
    if len(below) > MAX_REMOVED_FILES:
        return None
    return [f"{rel}/{name}" for name in below]


def judge_effect(
    policy: PolicySpec,
    effect: Effect,
    workspace: Path,
    counters: SessionCounters,
    *,
    ignored: Collection[str],
    approved: bool,
    removed: Mapping[str, list[str] | None] | None = None,
    index_unchanged: bool = True,
) -> EffectVerdict:
    """Apply, hold or refuse the whole effect.

    `ignored` are the paths git ignores (they count no lines), `removed` the files
    below each directory it removes (`removed_trees`), `index_unchanged` whether a
    rewritten `.git/index` still stages exactly what the workspace's does.
    """
    removed = removed or {}
    refusal = _refusal(effect, removed, index_unchanged=index_unchanged)
    if refusal:
        return EffectVerdict("refuse", reason=refusal)
    kept = frozenset(e.path for e in effect.entries if e.path != GIT_INDEX)
    budget = policy.max_diff_lines - counters.total_changed_lines
    total = count_lines(workspace, effect, ignored, removed, limit=budget)
    if total > budget:
        long, short = _over_limit(policy, counters, total, budget)
        return EffectVerdict("refuse", reason=long, short=short)
    reasons = _protected(policy, effect.only(set(kept)), removed)
    since = counters.changed_since_approval + total
    if not approved and since > policy.require_approval_above:
        reasons.append(
            f"{since} lines changed since the last approval, including this command's "
            f"{total}, is over {policy.require_approval_above} (require_approval_above)"
        )
    action: Action = "hold" if reasons else "apply"
    return EffectVerdict(action, kept, "; ".join(reasons), total)


def _over_limit(
    policy: PolicySpec, counters: SessionCounters, total: int, budget: int
) -> tuple[str, str]:
    """The refusal for the agent, and the same in a badge's words."""
    spelled = f"{total}" if total <= budget + lines.LINE_BYTES else f"more than {budget}"
    long = (
        f"the command changed {spelled} lines; with the session's "
        f"{counters.total_changed_lines} that is over the limit of "
        f"{policy.max_diff_lines} (max_diff_lines)"
    )
    before = counters.total_changed_lines
    session = f" (with the session's {before:,} before it)" if before else ""
    limit = f"the limit of {policy.max_diff_lines:,}"
    if total > budget + lines.LINE_BYTES:  # counting stopped past the budget
        return long, f"more than {budget:,} lines{session}, over {limit}"
    return long, f"{total:,} lines{session} over {limit}"


def _refusal(
    effect: Effect, removed: Mapping[str, list[str] | None], *, index_unchanged: bool
) -> str:
    """Why no part of the effect may ever apply ("" when it may be judged)."""
    if effect.bound:
        return f"{effect.bound}, a bound on what one command may change"
    problems = [f"{path}: {why}" for path, why in effect.refused]
    in_git = [
        e.path
        for e in effect.entries
        if paths.in_git_dir(e.path) and not (e.path == GIT_INDEX and index_unchanged)
    ]
    if in_git:
        problems.append(f"{_some(in_git)}: commands never change .git (the git tools do)")
    for entry in effect.entries:
        repos = [f for f in removed.get(entry.path) or [] if paths.in_git_dir(f)]
        if repos and not paths.in_git_dir(entry.path):
            problems.append(
                f"{entry.path}: it holds a git repository ({_some(repos)}), and commands "
                "never change .git"
            )
    if not problems:
        return ""
    shown = "; ".join(problems[:PROBLEMS_SHOWN])
    more = len(problems) - PROBLEMS_SHOWN
    return shown + (f"; and {more} more problems" if more > 0 else "")


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:PROBLEMS_SHOWN])
    more = len(names) - PROBLEMS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def _protected(
    policy: PolicySpec, effect: Effect, removed: Mapping[str, list[str] | None]
) -> list[str]:
    """A reason for each entry that touches a protected path, itself or what it removes."""
    reasons: list[str] = []
    for entry in effect.entries:
        if entry.path in removed and removed[entry.path] is None:
            reasons.append(
                f"{entry.path} is a directory too large or too deep to check file by file"
            )
            continue
        for candidate in (entry.path, *(removed.get(entry.path) or [])):
            if pattern := protected_match(policy.protected_paths, candidate):
                reasons.append(f"{candidate} is protected (pattern `{pattern}`)")
                break
    return reasons


def count_lines(
    workspace: Path,
    effect: Effect,
    ignored: Collection[str],
    removed: Mapping[str, list[str] | None],
    *,
    limit: int,
) -> int:
    """Changed lines of the whole effect, as `git diff` would count them; counting stops
    once the total is over `limit` (the caller only needs to know that it is over)."""
    root = Path(os.path.realpath(workspace))
    total = 0
    for entry in effect.entries:
        if entry.path == GIT_INDEX:
            continue
        for rel in removed.get(entry.path) or []:
            if total <= limit and rel not in ignored:
                total += _removed_lines(root, rel, limit - total)
        if total <= limit and entry.path not in ignored:
            total += _entry_lines(root, effect, entry, limit - total)
        if total > limit:
            break
    return total


def _removed_lines(root: Path, rel: str, limit: int) -> int:
    """Lines a file inside a removed directory takes with it."""
    with _open_file(root / rel) as before:
        if before is None:  # a symlink or something else that is not a file
            return 1
        return lines.changed_lines_files(before, None, limit=limit)


def _entry_lines(root: Path, effect: Effect, entry: EffectEntry, limit: int) -> int:
    if entry.kind == "dir":
        return 0
    if entry.kind == "symlink" or (entry.before or "").startswith("symlink:"):
        return 1
    with _before(root, entry) as before, _after(effect, entry) as after:
        return lines.changed_lines_files(before, after, limit=limit)


@contextlib.contextmanager
def _open_file(path: Path) -> Iterator[BinaryIO | None]:
    """A regular file opened for reading without following a symlink, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        yield None
        return
    with os.fdopen(fd, "rb") as handle:
        yield handle if stat.S_ISREG(os.fstat(fd).st_mode) else None


def _before(root: Path, entry: EffectEntry) -> contextlib.AbstractContextManager[BinaryIO | None]:
    if entry.before is None or entry.before == "dir" or entry.before.startswith("symlink:"):
        return contextlib.nullcontext(None)
    return _open_file(root / entry.path)


def _after(
    effect: Effect, entry: EffectEntry
) -> contextlib.AbstractContextManager[BinaryIO | None]:
    if entry.kind != "file":
        return contextlib.nullcontext(None)
    return _open_file(effect.blobs / entry.path)


def _new(entry: EffectEntry) -> EffectEntry:
    """The same entry as if nothing had been at its path (what replaced a directory)."""
    return EffectEntry(
        path=entry.path, kind=entry.kind, before=None, mode=entry.mode,
        sha256=entry.sha256, size=entry.size, target=entry.target,
    )  # fmt: skip


def effect_diff(workspace: Path, effect: Effect) -> str:
    """The unified diff a reviewer sees for a whole effect (binary and large files named,
    not shown: no side larger than lines.MAX_EXACT_BYTES is read into memory)."""
    root = Path(os.path.realpath(workspace))
    parts: list[str] = []
    size = 0
    for entry in effect.entries:
        part = _entry_diff(root, effect, entry)
        size += len(part)
        if size > MAX_PREVIEW_CHARS:
            parts.append("[diff truncated at 2 MB]\n")
            break
        parts.append(part)
    return "".join(parts)


def _entry_diff(root: Path, effect: Effect, entry: EffectEntry) -> str:
    if entry.before == "dir" and entry.kind != "dir":
        gone = f"deleted directory {entry.path}/ and everything in it\n"
        return gone if entry.kind == "delete" else gone + _entry_diff(root, effect, _new(entry))
    if entry.kind == "dir":
        return f"new directory {entry.path}/\n"
    if entry.kind == "symlink":
        return f"symlink {entry.path} -> {entry.target}\n"
    with _before(root, entry) as old_file, _after(effect, entry) as new_file:
        before, after = _small(old_file), _small(new_file)
    if before is False or after is False:
        return f"Large file {entry.path} changed ({entry.size or 0} bytes now): not shown\n"
    if any(side is not None and lines.is_binary(side) for side in (before, after)):
        return f"Binary file {entry.path} changed\n"
    old = before.decode("utf-8") if before is not None else None
    new = after.decode("utf-8") if after is not None else ""
    diff, _ = files.unified_diff(entry.path, old, new, existed=before is not None)
    if entry.kind == "delete":
        diff = diff.replace(f"+++ b/{entry.path}", "+++ /dev/null", 1)
    mode = f"mode {entry.mode:o} on {entry.path}\n" if entry.mode and entry.mode & 0o111 else ""
    return diff + mode


def _small(handle: BinaryIO | None) -> bytes | Literal[False] | None:
    """The whole content when it is small enough to show; False when it is not."""
    if handle is None:
        return None
    content = handle.read(lines.MAX_EXACT_BYTES + 1)
    return False if len(content) > lines.MAX_EXACT_BYTES else content
