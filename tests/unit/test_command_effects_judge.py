"""An effect is judged whole: applied, held or refused as one change, never split."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tools_app.core.command_effects import GIT_INDEX, judge_effect
from tools_app.core.policy.defaults import DEFAULT_SPEC
from tools_app.core.policy.types import SessionCounters
from tools_app.core.tools.effect import Effect, EffectEntry


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".env").write_text("SECRET=1\n")
    return root


def new_file(blobs: Path, path: str, content: str) -> EffectEntry:
    target = blobs / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    digest = hashlib.sha256(content.encode()).hexdigest()
    return EffectEntry(path, "file", None, mode=0o644, sha256=digest, size=len(content))


def judge(workspace: Path, effect: Effect, *, index_unchanged: bool = True) -> tuple[str, ...]:
    verdict = judge_effect(
        DEFAULT_SPEC, effect, workspace, SessionCounters(), ignored=(), approved=False,
        index_unchanged=index_unchanged,
    )  # fmt: skip
    return verdict.action, *sorted(verdict.paths), verdict.reason


def test_a_move_of_a_protected_file_waits_whole(workspace: Path, tmp_path: Path) -> None:
    blobs = tmp_path / "upper"
    sha = hashlib.sha256(b"SECRET=1\n").hexdigest()
    effect = Effect(
        entries=(EffectEntry(".env", "delete", sha), new_file(blobs, "moved.env", "SECRET=1\n")),
        refused=(),
        blobs=blobs,
    )
    action, *paths, reason = judge(workspace, effect)
    assert (action, paths) == ("hold", [".env", "moved.env"])
    assert ".env is protected" in reason


def test_one_refused_entry_refuses_everything(workspace: Path, tmp_path: Path) -> None:
    blobs = tmp_path / "upper"
    effect = Effect(
        entries=(new_file(blobs, "notes.txt", "hi\n"),),
        refused=(("pipe", "a fifo cannot be applied"),),
        blobs=blobs,
    )
    assert judge(workspace, effect) == ("refuse", "pipe: a fifo cannot be applied")


def test_a_change_inside_git_refuses_everything(workspace: Path, tmp_path: Path) -> None:
    blobs = tmp_path / "upper"
    effect = Effect(
        entries=(new_file(blobs, ".git/hooks/pre-commit", "evil"), new_file(blobs, "a", "a\n")),
        refused=(),
        blobs=blobs,
    )
    action, reason = judge(workspace, effect)
    assert action == "refuse"
    assert ".git/hooks/pre-commit: commands never change .git" in reason


def test_a_refreshed_index_is_left_out_and_a_restaged_one_refuses(
    workspace: Path, tmp_path: Path
) -> None:
    blobs = tmp_path / "upper"
    index = EffectEntry(GIT_INDEX, "file", "0" * 64, mode=0o644, sha256="1" * 64, size=1)
    effect = Effect(entries=(index, new_file(blobs, "a", "a\n")), refused=(), blobs=blobs)
    assert judge(workspace, effect)[:2] == ("apply", "a")
    action, reason = judge(workspace, effect, index_unchanged=False)
    assert (action, reason) == (
        "refuse",
        f"{GIT_INDEX}: commands never change .git (the git tools do)",
    )


def test_a_crossed_bound_refuses_everything(workspace: Path, tmp_path: Path) -> None:
    effect = Effect(entries=(), refused=(), blobs=tmp_path, bound="x is deeper than 64 directories")
    action, reason = judge(workspace, effect)
    assert action == "refuse"
    assert reason.startswith("x is deeper than 64 directories")


def test_over_max_diff_lines_refuses_everything(workspace: Path, tmp_path: Path) -> None:
    blobs = tmp_path / "upper"
    big = "".join(f"{n}\n" for n in range(DEFAULT_SPEC.max_diff_lines + 1))
    effect = Effect(
        entries=(new_file(blobs, "small.txt", "x\n"), new_file(blobs, "big.txt", big)),
        refused=(),
        blobs=blobs,
    )
    action, reason = judge(workspace, effect)
    assert action == "refuse"
    assert "max_diff_lines" in reason
