"""A commit preview cannot lie: over many workspace states, the diff a reviewer sees is
the diff of the commit git_commit then makes, and that commit holds the working tree
as it is on disk (same-size edits in the index's second included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools_app.core.tools import git_runner
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.git import GitCommitArgs, git_commit

Op = Callable[[Path, int], None]


def run(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@e", "-c", "user.name=T", *args],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")


def make_repo() -> Path:
    repo = Path(tempfile.mkdtemp(prefix="agentweb-prop-"))
    run(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("aaaa\n" * 3)
    (repo / "b.txt").write_text("bbbb\n")
    (repo / "data.bin").write_bytes(b"\x00\x01" * 8)
    (repo / ".gitignore").write_text("ignored/\n*.log\n")
    run(repo, "add", "-A")
    run(repo, "commit", "-q", "-m", "init")
    return repo


def racy_same_size_edit(repo: Path, n: int) -> None:
    """Stage a.txt, then change it to other bytes of the same size in the index's second,
    with the staged modification time: only git's racy-entry check can see the change."""
    path = repo / "a.txt"
    if not path.exists():
        path.write_text("aaaa\n" * 3)
    size = path.stat().st_size
    path.write_bytes(f"{n % 10}".encode() * (size - 1) + b"\n")
    run(repo, "add", "a.txt")
    staged = path.stat()
    path.write_bytes(f"{(n + 1) % 10}".encode() * (size - 1) + b"\n")
    os.utime(path, ns=(staged.st_atime_ns, staged.st_mtime_ns))
    index = repo / ".git" / "index"
    os.utime(index, ns=(staged.st_atime_ns, staged.st_mtime_ns))


def edit_b(repo: Path, n: int) -> None:
    (repo / "b.txt").write_text(f"b edited {n}\n")


def make_executable(repo: Path, n: int) -> None:
    target = repo / "b.txt"
    if target.exists():
        target.chmod(0o755 if n % 2 else 0o644)


def rename_a(repo: Path, n: int) -> None:
    if (repo / "a.txt").exists():
        (repo / "a.txt").rename(repo / f"moved-{n}.txt")


def write_binary(repo: Path, n: int) -> None:
    (repo / "data.bin").write_bytes(bytes([n % 256, 0, 255]) * (n + 1))


def add_untracked(repo: Path, n: int) -> None:
    (repo / "new").mkdir(exist_ok=True)
    (repo / "new" / f"file-{n}.py").write_text(f"x = {n}\n")


def add_ignored(repo: Path, n: int) -> None:
    (repo / "ignored").mkdir(exist_ok=True)
    (repo / "ignored" / "cache.txt").write_text(f"{n}\n")
    (repo / f"debug-{n}.log").write_text("log\n")


def add_nested_repo(repo: Path, n: int) -> None:
    nested = repo / "vendor" / "lib"
    if not nested.exists():
        nested.mkdir(parents=True)
        run(nested, "init", "-q")
        (nested / "lib.py").write_text("lib = 1\n")
        run(nested, "add", "-A")
        run(nested, "commit", "-q", "-m", "lib")


def delete_b(repo: Path, n: int) -> None:
    (repo / "b.txt").unlink(missing_ok=True)


def stage_everything(repo: Path, n: int) -> None:
    run(repo, "add", "-A")


OPS: list[Op] = [
    racy_same_size_edit,
    edit_b,
    make_executable,
    rename_a,
    write_binary,
    add_untracked,
    add_ignored,
    add_nested_repo,
    delete_b,
    stage_everything,
]


def tracked_files(repo: Path, commit: str) -> dict[str, tuple[str, bytes | None]]:
    """path → (mode, bytes) of every entry of a commit's tree (None for a gitlink)."""
    listing = run(repo, "ls-tree", "-r", "-z", commit)
    files: dict[str, tuple[str, bytes | None]] = {}
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        mode, kind, sha = meta.split()
        blob = None
        if kind == "blob":
            blob = subprocess.run(
                ["git", "-C", str(repo), "cat-file", "blob", sha], capture_output=True, check=True
            ).stdout
        files[path] = (mode, blob)
    return files


def files_on_disk(repo: Path) -> dict[str, bytes | None]:
    """Every file git would commit: not ignored, not inside .git; a nested repo as None."""
    listing = run(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    on_disk: dict[str, bytes | None] = {}
    for path in filter(None, listing.split("\0")):
        full = repo / path
        if (full / ".git").exists() or path.rstrip("/").endswith("vendor/lib"):
            on_disk[path.rstrip("/")] = None
        elif full.is_file():
            on_disk[path] = full.read_bytes()
    return on_disk


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), min_size=1, max_size=6))
def test_the_previewed_diff_is_the_committed_diff(ops: list[tuple[Op, int]]) -> None:
    repo = make_repo()
    try:
        for op, n in ops:
            op(repo, n)
        preview = git_runner.commit_preview(repo, None)
        if not preview.files:
            return
        base = run(repo, "rev-parse", "HEAD").strip()
        state = {"tree": preview.tree, "base": preview.base}
        git_commit(ToolContext(workspace=repo, preview_state=state), GitCommitArgs(message="m"))
        trees = ["diff-tree", "-r", "-M", "--no-ext-diff", "--no-textconv", "--no-color"]
        assert run(repo, *trees, "-p", base, "HEAD", "--") == preview.diff
        committed = tracked_files(repo, "HEAD")
        on_disk = files_on_disk(repo)
        assert set(committed) == set(on_disk)
        for path, content in on_disk.items():
            if content is not None:
                assert committed[path][1] == content, path
        assert git_runner.commit_preview(repo, None).files == []
    finally:
        shutil.rmtree(repo, ignore_errors=True)


def test_a_same_size_change_in_the_index_second_is_counted() -> None:
    repo = make_repo()
    try:
        racy_same_size_edit(repo, 3)
        preview = git_runner.commit_preview(repo, None)
        assert preview.files == ["a.txt"]
        assert preview.changed_lines == 4  # three lines out, one in
        assert "+4444" in preview.diff
    finally:
        shutil.rmtree(repo, ignore_errors=True)
