"""An effect is bounded, and trees of any depth are read and removed without recursion:
checked on hand-made upper layers and trees (no sandbox needed), then on disk."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools_app.core.tools.effect import Effect, EffectEntry
from tools_app.core.tools.effect_apply import hold_effect
from tools_app.core.tools.effect_reader import (
    MAX_EFFECT_BYTES,
    MAX_ENTRIES,
    MAX_FILE_BYTES,
    file_mode,
    read_effect,
)
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.overlay import make_scratch, remove_scratch
from tools_app.core.tools.trees import remove_tree, walk_files

_DIR = os.O_RDONLY | os.O_DIRECTORY


def deep_tree(root: Path, levels: int, name: str = "d", *, lock_every: int = 0) -> None:
    """`levels` nested dirs below root, reached level by level (no path is ever spelled
    whole), a file at the bottom; every `lock_every`-th dir is made mode 0000."""
    fd = os.open(root, _DIR)
    for level in range(1, levels + 1):
        os.mkdir(name, dir_fd=fd)
        child = os.open(name, _DIR, dir_fd=fd)
        os.close(fd)
        fd = child
        if lock_every and level % lock_every == 0:
            os.fchmod(fd, 0)
    os.close(os.open("bottom.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    os.close(fd)


@pytest.fixture(autouse=True)
def no_deep_leftovers(tmp_path: Path) -> Iterator[None]:
    """pytest's own clean-up of old temp dirs recurses: never leave a deep tree to it."""
    yield
    for child in tmp_path.iterdir():
        remove_tree(child, ignore_errors=True)


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    """An empty workspace and an upper layer to fill by hand."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "upper").mkdir()
    return tmp_path / "ws", tmp_path / "upper"


def test_a_tree_1100_levels_deep_far_past_path_max_is_removed(tmp_path: Path) -> None:
    (tmp_path / "top").mkdir()
    deep_tree(tmp_path / "top", 1100, "n" * 200, lock_every=100)
    remove_tree(tmp_path / "top")
    assert list(tmp_path.iterdir()) == []


def test_removing_a_tree_never_follows_a_link_out_of_it(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep.txt").write_text("keep\n")
    (tmp_path / "top" / "sub").mkdir(parents=True)
    (tmp_path / "top" / "sub" / "link").symlink_to(tmp_path / "outside")
    remove_tree(tmp_path / "top")
    assert not (tmp_path / "top").exists()
    assert (tmp_path / "outside" / "keep.txt").read_text() == "keep\n"


def test_a_deep_scratch_dir_is_removed_whole(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    scratch = make_scratch(tmp_path / "ws")
    deep_tree(scratch / "upper", 1100, lock_every=7)
    os.makedirs(scratch / "work" / "work")
    os.chmod(scratch / "work" / "work", 0)  # as overlayfs leaves it
    remove_scratch(scratch)
    assert not scratch.exists()
    assert (tmp_path / "ws").is_dir()


def test_listing_files_below_a_deep_directory_stops_at_the_limit(tmp_path: Path) -> None:
    deep_tree(tmp_path, 1100)
    for n in range(10):
        (tmp_path / f"f{n}").write_text("")
    assert len(list(walk_files(tmp_path, limit=5))) == 5
    assert "d/" * 1100 + "bottom.txt" in set(walk_files(tmp_path, limit=100))


def test_reading_a_deep_upper_layer_refuses_it_whole(layers: tuple[Path, Path]) -> None:
    workspace, upper = layers
    (upper / "ok.txt").write_text("ok\n")
    deep_tree(upper, 1100)
    effect = read_effect(workspace, upper)
    assert "deeper than 64 directories" in effect.bound
    assert effect.entries == ()


def test_reading_more_names_than_the_bound_stops_and_refuses(layers: tuple[Path, Path]) -> None:
    workspace, upper = layers
    for n in range(MAX_ENTRIES + 1):
        os.close(os.open(upper / f"f{n}", os.O_CREAT | os.O_WRONLY, 0o644))
    started = time.monotonic()
    effect = read_effect(workspace, upper)
    assert time.monotonic() - started < 2  # stopped before hashing anything
    assert effect.bound == f"the command changed more than {MAX_ENTRIES} paths"


def test_a_sparse_file_over_the_size_bound_is_refused_unread(layers: tuple[Path, Path]) -> None:
    workspace, upper = layers
    with open(upper / "data.bin", "wb") as handle:
        handle.truncate(100 * 1024**3)  # 100 GB, no disk used
    started = time.monotonic()
    effect = read_effect(workspace, upper)
    assert time.monotonic() - started < 1
    assert f"over the limit of {MAX_FILE_BYTES} per file" in effect.bound


def test_files_under_the_size_bound_that_add_up_past_the_total_are_refused(
    layers: tuple[Path, Path],
) -> None:
    workspace, upper = layers
    for n in range(MAX_EFFECT_BYTES // MAX_FILE_BYTES + 1):
        with open(upper / f"part{n}.bin", "wb") as handle:
            handle.truncate(MAX_FILE_BYTES)
    effect = read_effect(workspace, upper)
    assert f"more than {MAX_EFFECT_BYTES} bytes" in effect.bound


@pytest.mark.parametrize(
    ("executable", "before", "expected"),
    [
        (False, None, 0o644),
        (True, None, 0o755),
        (False, 0o000, 0o600),
        (True, 0o777, 0o755),
        (False, 0o666, 0o644),
        (False, 0o600, 0o600),
        (True, 0o600, 0o700),
        (True, 0o640, 0o750),
    ],
)
def test_only_the_executable_bit_follows_the_command(
    executable: bool, before: int | None, expected: int
) -> None:
    assert file_mode(executable=executable, before=before) == expected


def test_the_mode_of_a_file_written_by_a_command_follows_only_its_x_bit(
    layers: tuple[Path, Path],
) -> None:
    workspace, upper = layers
    (workspace / "Makefile").write_text("all:\n")
    (workspace / "Makefile").chmod(0o644)
    (upper / "Makefile").write_text("all:\n")
    (upper / "Makefile").chmod(0)  # chmod 000: no change
    (upper / "run.sh").write_text("echo\n")
    (upper / "run.sh").chmod(0o777)
    (upper / "open").mkdir(mode=0o777)
    entries = {e.path: e for e in read_effect(workspace, upper).entries}
    assert set(entries) == {"run.sh", "open"}
    assert (entries["run.sh"].mode, entries["open"].mode) == (0o755, 0o755)


def test_holding_an_effect_over_the_total_bound_keeps_nothing(tmp_path: Path) -> None:
    entry = EffectEntry("huge.bin", "file", None, mode=0o644, sha256="0" * 64, size=2**40)
    effect = Effect(entries=(entry,), refused=(), blobs=tmp_path / "nowhere")
    with pytest.raises(ToolError, match="over"):
        hold_effect(effect, tmp_path / "store")
    assert not (tmp_path / "store").exists()
