"""A command's effect judged like a write, without Django.

`run_command` runs on a copy-on-write view; what it changed (tools/effect.py) is split
here into what may be applied now, what waits for a person (with the diff they will
see), and what never applies:

* nothing inside `.git` (the git tools are the way), nor what the effect cannot
  express safely (devices, setuid bits, hard links, symlinks leading outside);
* protected paths wait for a person, even after an approved command: approving
  `npm install` does not approve what it writes to `.env` or `.git/hooks`;
* changed lines, counted as `git diff` would for files that are not ignored, meet
  `max_diff_lines` (over it: nothing applies) and `require_approval_above` (over it:
  the whole effect waits) exactly like a write_file.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tools_app.policy import PolicySpec, SessionCounters, protected_match
from tools_app.tools import files, lines, paths
from tools_app.tools.effect import Effect, EffectEntry

MAX_PREVIEW_CHARS = 2 * 1024 * 1024
# Past this many files a removed directory is not counted file by file: it waits for a
# person instead (bounded work for the worker, and nobody deletes that much unseen).
MAX_REMOVED_FILES = 50_000


@dataclass(frozen=True)
class EffectVerdict:
    """What to do with each path of an effect, and why, for the agent and a reviewer."""

    apply: frozenset[str] = frozenset()
    hold: frozenset[str] = frozenset()
    dropped: tuple[str, ...] = ()  # notes: what never applies, and why
    hold_reason: str = ""
    denied: str = ""  # set when nothing applies (max_diff_lines)
    lines_by_path: dict[str, int] = field(default_factory=dict)

    def lines(self, which: Collection[str]) -> int:
        return sum(self.lines_by_path.get(path, 0) for path in which)


def removed_trees(workspace: Path, effect: Effect) -> dict[str, list[str] | None]:
    """The files below each directory the effect removes or replaces (None: too many).

    Overlay records `rm -rf config` as one whiteout; what it deletes, `config/.env`
    included, is only seen by looking at the workspace below it.
    """
    root = Path(os.path.realpath(workspace))
    trees: dict[str, list[str] | None] = {}
    for entry in effect.entries:
        if entry.before == "dir" and entry.kind != "dir":
            trees[entry.path] = _files_below(root, entry.path)
    return trees


def _files_below(root: Path, rel: str) -> list[str] | None:
    found: list[str] = []
    for directory, dirs, names in os.walk(root / rel):
        base = Path(directory).relative_to(root).as_posix()
        links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        found += [f"{base}/{name}" for name in [*names, *links]]
        if len(found) > MAX_REMOVED_FILES:
            return None
    return found


def judge_effect(
    policy: PolicySpec,
    effect: Effect,
    workspace: Path,
    counters: SessionCounters,
    *,
    ignored: Collection[str],
    approved: bool,
    removed: Mapping[str, list[str] | None] | None = None,
) -> EffectVerdict:
    """Split an effect; `ignored` are the paths git ignores (they count no lines) and
    `removed` the files below each directory it removes (`removed_trees`)."""
    removed = removed or {}
    candidates, dropped = _outside_git(effect, removed)
    counted = {
        e.path: _entry_lines(workspace, effect, e, ignored)
        + _removed_lines(workspace, removed.get(e.path), ignored)
        for e in candidates
    }
    total = sum(counted.values())
    protected = {
        e.path: pattern for e in candidates if (pattern := _protected(policy, e.path, removed))
    }
    if counters.total_changed_lines + total > policy.max_diff_lines:
        denied = (
            f"the command changed {total} lines; with the session's "
            f"{counters.total_changed_lines} that is over the limit of "
            f"{policy.max_diff_lines} (max_diff_lines)"
        )
        return EffectVerdict(dropped=tuple(dropped), denied=denied, lines_by_path=counted)
    everything = frozenset(counted)
    since = counters.changed_since_approval + total
    if not approved and since > policy.require_approval_above:
        reason = (
            f"{since} lines changed since the last approval, including this command's "
            f"{total}, is over {policy.require_approval_above} (require_approval_above)"
        )
        return EffectVerdict(
            hold=everything, dropped=tuple(dropped), hold_reason=reason, lines_by_path=counted
        )
    held = frozenset(protected)
    reason = "; ".join(f"{path} is protected (pattern `{p}`)" for path, p in protected.items())
    return EffectVerdict(
        apply=everything - held,
        hold=held,
        dropped=tuple(dropped),
        hold_reason=reason,
        lines_by_path=counted,
    )


def _outside_git(
    effect: Effect, removed: Mapping[str, list[str] | None]
) -> tuple[list[EffectEntry], list[str]]:
    """The entries that may be judged, and notes for what never applies: refusals and
    anything touching a `.git` (a nested repository inside a removed directory too)."""
    dropped = [f"{path} was not applied: {why}" for path, why in effect.refused]
    candidates: list[EffectEntry] = []
    for entry in effect.entries:
        below = removed.get(entry.path) or []
        if paths.in_git_dir(entry.path) or any(paths.in_git_dir(f) for f in below):
            dropped.append(f"{entry.path} was not applied: commands never change .git")
        else:
            candidates.append(entry)
    return candidates, dropped


def _protected(
    policy: PolicySpec, path: str, removed: Mapping[str, list[str] | None]
) -> str | None:
    """The protected pattern an entry touches, itself or any file it removes."""
    if path in removed and removed[path] is None:
        return "(a directory too large to check file by file)"
    for candidate in (path, *(removed.get(path) or [])):
        if pattern := protected_match(policy.protected_paths, candidate):
            return pattern
    return None


def _removed_lines(workspace: Path, files_below: list[str] | None, ignored: Collection[str]) -> int:
    """Lines a removed directory takes with it, as `git diff` would count its files."""
    root = Path(os.path.realpath(workspace))
    total = 0
    for rel in files_below or []:
        if rel in ignored:
            continue
        full = root / rel
        if full.is_symlink() or not full.is_file():
            total += 1
            continue
        try:
            total += lines.changed_lines_bytes(full.read_bytes(), None)
        except OSError:
            total += 1
    return total


def _entry_lines(
    workspace: Path, effect: Effect, entry: EffectEntry, ignored: Collection[str]
) -> int:
    if entry.path in ignored or entry.kind == "dir":
        return 0
    if entry.kind == "symlink" or (entry.before or "").startswith("symlink:"):
        return 1
    return lines.changed_lines_bytes(_before(workspace, entry), _after(effect, entry))


def _before(workspace: Path, entry: EffectEntry) -> bytes | None:
    if entry.before is None or entry.before == "dir" or entry.before.startswith("symlink:"):
        return None
    try:
        return (Path(os.path.realpath(workspace)) / entry.path).read_bytes()
    except OSError:
        return None


def _after(effect: Effect, entry: EffectEntry) -> bytes | None:
    if entry.kind != "file":
        return None
    try:
        return (effect.blobs / entry.path).read_bytes()
    except OSError:
        return None


def _new(entry: EffectEntry) -> EffectEntry:
    """The same entry as if nothing had been at its path (what replaced a directory)."""
    return EffectEntry(
        path=entry.path, kind=entry.kind, before=None, mode=entry.mode,
        sha256=entry.sha256, size=entry.size, target=entry.target,
    )  # fmt: skip


def effect_diff(workspace: Path, effect: Effect) -> str:
    """The unified diff a reviewer sees for an effect (binary files named, not shown)."""
    parts: list[str] = []
    size = 0
    for entry in effect.entries:
        part = _entry_diff(workspace, effect, entry)
        size += len(part)
        if size > MAX_PREVIEW_CHARS:
            parts.append("[diff truncated at 2 MB]\n")
            break
        parts.append(part)
    return "".join(parts)


def _entry_diff(workspace: Path, effect: Effect, entry: EffectEntry) -> str:
    if entry.before == "dir" and entry.kind != "dir":
        gone = f"deleted directory {entry.path}/ and everything in it\n"
        return (
            gone if entry.kind == "delete" else gone + _entry_diff(workspace, effect, _new(entry))
        )
    if entry.kind == "dir":
        return f"new directory {entry.path}/\n"
    if entry.kind == "symlink":
        return f"symlink {entry.path} -> {entry.target}\n"
    before, after = _before(workspace, entry), _after(effect, entry)
    if any(side is not None and lines.is_binary(side) for side in (before, after)):
        return f"Binary file {entry.path} changed\n"
    old = before.decode("utf-8") if before is not None else None
    new = after.decode("utf-8") if after is not None else ""
    diff, _ = files.unified_diff(entry.path, old, new, existed=before is not None)
    if entry.kind == "delete":
        diff = diff.replace(f"+++ b/{entry.path}", "+++ /dev/null", 1)
    mode = f"mode {entry.mode:o} on {entry.path}\n" if entry.mode and entry.mode & 0o111 else ""
    return diff + mode
