"""A tracked secret's content never leaves git's objects through a sandboxed command.

Real git repositories, the real copy-on-write sandbox. The repository tracks `.env` in
two versions, tracked `config/.env` once and deleted it, keeps a secret change in the
stash and an unreachable secret blob in its store; every secret is in a loose object and,
after `git gc`, in a pack too. Each attack's output is searched for every secret (and
its halves) decoded every way it could be dressed: as is, reversed, upper-cased,
whitespace and `od` offsets stripped, base64, hex.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.helpers import call, git, make_ctx, make_workspace, requires_cow
from tools_app.core.tools import git_objects, git_view
from tools_app.core.tools.base import SandboxOptions
from tools_app.core.tools.overlay import build_cow_command, make_scratch, remove_scratch

pytestmark = [pytest.mark.sandbox, requires_cow]

SECRETS = {
    "head": "sk_live_Q7f3Zp9WmX2kLr8T",
    "older": "sk_live_Hd4Vn6Bc1Jy5Pq0R",
    "deleted": "pk_prod_Ws2Eg8Tu3Ia7Ko9M",
    "stashed": "tok_stash_Lz5Xc4Nb6Mv2Qs1D",
    "unreachable": "tok_lost_Rf9Gh3Jk7Uy2Ot5E",
}
SECRET_PATHS = (".env", ".env.*", "*.pem")


@pytest.fixture(autouse=True)
def views_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The filtered stores of these tests live and die with them."""
    monkeypatch.setenv("AGENTWEB_VAR", str(tmp_path_factory.mktemp("var")))


def _commit(ws: Path, message: str) -> None:
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", message)


@pytest.fixture(params=["loose", "packed"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q", "-b", "main")
    (ws / "README.md").write_text("hello\n")
    (ws / ".env").write_text(f"API_KEY={SECRETS['older']}\n")
    (ws / "config").mkdir()
    (ws / "config" / ".env").write_text(f"DEPLOY={SECRETS['deleted']}\n")
    _commit(ws, "one")
    (ws / ".env").write_text(f"API_KEY={SECRETS['head']}\n")
    (ws / "config" / ".env").unlink()
    (ws / "README.md").write_text("hello\nworld\n")
    _commit(ws, "two")
    (ws / ".env").write_text(f"API_KEY={SECRETS['stashed']}\n")
    git(ws, "stash", "-q")
    (tmp_path / "lost.txt").write_text(f"API_KEY={SECRETS['unreachable']}\n")
    git(ws, "hash-object", "-w", str(tmp_path / "lost.txt"))
    if request.param == "packed":
        git(ws, "gc", "-q", "--prune=now")
        git(ws, "hash-object", "-w", str(tmp_path / "lost.txt"))
        git(ws, "repack", "-qad", "--keep-unreachable")  # the unreachable blob in a pack too
    assert _store_holds(ws, SECRETS["unreachable"])
    return ws


def _store_holds(ws: Path, value: str) -> bool:
    return value.encode() in b"".join(_inflated(ws / ".git" / "objects"))


def _inflated(top: Path) -> Iterator[bytes]:
    """Every zlib stream at any offset of any file: loose objects and pack entries."""
    for path in top.rglob("*"):
        data = path.read_bytes() if path.is_file() else b""
        for start in (m.start() for m in re.finditer(b"\x78", data)):
            try:
                yield zlib.decompressobj().decompress(data[start:], 1 << 20)
            except zlib.error:
                continue


def run(ws: Path, command: str) -> str:
    return call(make_ctx(ws, secret_paths=SECRET_PATHS), "run_command", {"command": command})


def readings(output: str) -> list[str]:
    """The output, and each way a command could have dressed a secret in it."""
    plain = output
    squeezed = re.sub(r"\s+", "", output)
    no_offsets = "".join(re.sub(r"^\s*[0-7]{6,}\s*", "", line) for line in output.splitlines())
    od_chars = re.sub(r"\s+", "", no_offsets.replace("\\n", ""))
    forms = [plain, squeezed, od_chars, plain[::-1], squeezed[::-1], codecs.decode(plain, "rot13")]
    for blob in re.findall(r"[A-Za-z0-9+/=\s]{16,}", output):
        forms += _base64_forms(re.sub(r"\s+", "", blob))
    for run_ in re.findall(r"(?:[0-9a-fA-F]{2}\s*){8,}", output):
        forms.append(_hex(re.sub(r"\s+", "", run_)))
    return forms


def _base64_forms(text: str) -> list[str]:
    out = []
    for skip in range(4):
        chunk = text[skip:]
        chunk = chunk[: len(chunk) - len(chunk) % 4]
        try:
            out.append(base64.b64decode(chunk).decode("latin-1"))
        except binascii.Error:
            continue
    return out


def _hex(text: str) -> str:
    try:
        return bytes.fromhex(text[: len(text) // 2 * 2]).decode("latin-1")
    except ValueError:
        return ""


def leaked(output: str) -> list[str]:
    """The secrets (or a half of one) any reading of `output` holds."""
    found = []
    lowered = [form.lower() for form in readings(output)]
    for name, value in SECRETS.items():
        pieces = [value, value[: len(value) // 2], value[len(value) // 2 :]]
        if any(piece.lower() in form for piece in pieces for form in lowered):
            found.append(name)
    return found


def test_the_readings_find_a_secret_however_it_is_dressed() -> None:
    """The checker itself: each transform of the issue, applied on the host, is caught."""
    value = f"API_KEY={SECRETS['head']}\n"
    dressed = [
        value[::-1],
        base64.b64encode(value.encode()).decode(),
        value.upper(),
        value[:14] + "\n" + value[14:],
        "\n".join(value[i : i + 5] for i in range(0, len(value), 5)),
        subprocess.run(["od", "-c"], input=value.encode(), capture_output=True).stdout.decode(),
        value.encode().hex(" "),
    ]
    for text in dressed:
        assert leaked(text) == ["head"], text


# --- the six transforms of the finding, and the object store read directly -----------------

TRANSFORMS = {
    "rev": "git show HEAD:.env | rev",
    "base64": "git show HEAD:.env | base64",
    "tr": "git show HEAD:.env | tr a-z A-Z",
    "cut": "git show HEAD:.env | cut -c1-14; git show HEAD:.env | cut -c15-",
    "fold": "git show HEAD:.env | fold -w 5",
    "od": "git show HEAD:.env | od -c",
}


@pytest.mark.parametrize("transform", TRANSFORMS.values(), ids=TRANSFORMS.keys())
def test_no_transform_of_git_show_returns_the_secret(repo: Path, transform: str) -> None:
    out = run(repo, transform)
    assert out.startswith("exit code: 0"), out
    assert leaked(out) == []
    assert "withheld" in "".join(readings(out)).lower()  # the placeholder, not an error


READS = {
    "cat-file": "for o in $(git rev-list --objects --all --reflog); do git cat-file -p $o; done",
    "history": "git log -p --all --reflog; git diff HEAD~1; git diff HEAD~1 HEAD -- .env",
    "stash": "git stash show -p; git stash list -p",
    "archive": "git archive HEAD~1 | tar -xOf -; git archive HEAD | tar -xOf -",
    "lost-found": "git fsck --lost-found >/dev/null 2>&1; cat .git/lost-found/*/* 2>/dev/null",
    "unreachable": "git fsck --unreachable --dangling 2>&1 | awk '{print $3}' "
    "| xargs -r -n1 git cat-file -p",
    "raw-files": "find .git -type f -exec cat {} + | base64",
    "zlib": "python3 -c 'import pathlib, zlib, re\n"
    'for p in pathlib.Path(".git").rglob("*"):\n'
    '  d = p.read_bytes() if p.is_file() else b""\n'
    '  for m in re.finditer(b"x", d):\n'
    "    try: print(zlib.decompressobj().decompress(d[m.start():]))\n"
    "    except Exception: pass'",
    "unpack": "mkdir /tmp/r && cd /tmp/r && git init -q && "
    "for p in $OLDPWD/.git/objects/pack/*.pack; do git unpack-objects < $p; done; "
    "git fsck --lost-found >/dev/null 2>&1; cat .git/lost-found/*/* 2>/dev/null; "
    "git cat-file --batch-all-objects --batch",
    "batch-all": "git cat-file --batch-all-objects --batch",
    "verify-pack": "git verify-pack -v .git/objects/pack/*.idx",
}


@pytest.mark.parametrize("attack", READS.values(), ids=READS.keys())
def test_no_read_of_the_object_store_returns_a_secret(repo: Path, attack: str) -> None:
    out = run(repo, attack)
    assert leaked(out) == [], out[:2000]


def test_a_copy_of_the_object_store_lands_in_the_workspace_without_a_secret(repo: Path) -> None:
    out = run(repo, "cp -r .git/objects copied && git init -q --bare b.git && cp -r .git/* b.git")
    assert "applied" in out
    assert not _holds_anywhere(repo / "copied", SECRETS.values())
    assert not _holds_anywhere(repo / "b.git", SECRETS.values())
    assert _store_holds(repo, SECRETS["head"])  # the real store is untouched


def _holds_anywhere(top: Path, values: object) -> bool:
    blobs = b"".join(_inflated(top)) + b"".join(
        p.read_bytes() for p in top.rglob("*") if p.is_file()
    )
    return any(str(v).encode() in blobs for v in values)  # type: ignore[attr-defined]


def test_the_real_store_cannot_be_uncovered(repo: Path) -> None:
    """The view is a mount locked in the sandbox's namespace: no unmount, no way around."""
    out = run(
        repo,
        "umount .git/objects; umount -l .git/objects; "
        "unshare -Urm sh -c 'umount .git/objects; cat .git/objects/pack/* | base64'; "
        "cat /proc/self/mountinfo | grep objects",
    )
    assert leaked(out) == [], out


# --- what keeps working --------------------------------------------------------------------


def test_ordinary_git_commands_still_work(repo: Path) -> None:
    (repo / "README.md").write_text("hello\nworld\nagain\n")
    out = run(repo, "git status --short; git log --oneline; git diff -- README.md")
    lines = out.splitlines()
    assert lines[0] == "exit code: 0"
    assert " M README.md" in lines and "+again" in lines
    assert [line[8:] for line in lines if re.fullmatch(r"[0-9a-f]{7} \w+", line)] == ["two", "one"]
    show = run(repo, "git show HEAD:README.md; git show --stat HEAD | tail -3")
    assert "hello\nworld" in show and "README.md" in show


def test_git_can_still_write_objects_inside_a_command(repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    commit = "git -c user.name=A -c user.email=a@b commit -qam three"
    out = run(repo, f"{commit} && git log --oneline -1 && git stash list | wc -l")
    assert "three" in out, out
    assert git(repo, "log", "--oneline", "-1").split(" ", 1)[1] == "two\n"  # nothing applied


def test_a_placeholder_stands_where_the_secret_was(repo: Path) -> None:
    out = run(repo, "git show HEAD:.env; git show HEAD~1:config/.env")
    assert out.count(git_objects.PLACEHOLDER.decode().strip()) == 2


# --- where no filtered store is needed, and the cache ----------------------------------------


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    """A repository that never held a secret: shown as it is, no store built."""
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    (ws / "app.py").write_text("print(1)\n")
    _commit(ws, "one")
    with git_view.object_views(ws, SECRET_PATHS) as views:
        assert views == ()
    return ws


def test_a_repository_that_never_held_a_secret_is_shown_as_it_is(clean: Path) -> None:
    out = run(clean, "grep -c '/.git/objects ' /proc/self/mountinfo; git log --oneline | wc -l")
    assert out.splitlines()[1:] == ["0", "1"]


def test_an_unreachable_secret_blob_alone_gets_a_filtered_store(clean: Path) -> None:
    """A commit preview hashes an untracked `.env` into the store without a ref moving."""
    ws = clean
    (ws / ".env").write_text(f"API_KEY={SECRETS['unreachable']}\n")
    git(ws, "hash-object", "-w", ".env")
    with git_view.object_views(ws, SECRET_PATHS) as views:
        assert [v.objects for v in views] == [".git/objects"]
    out = run(ws, "git fsck --lost-found; cat .git/lost-found/other/*; " + READS["batch-all"])
    assert leaked(out) == []


def test_a_store_is_built_once_per_state_of_the_refs_and_kept_while_used(repo: Path) -> None:
    with git_view.object_views(repo, SECRET_PATHS) as first:
        with git_view.object_views(repo, SECRET_PATHS) as again:
            assert again == first
        (repo / "README.md").write_text("three\n")
        _commit(repo, "three")
        with git_view.object_views(repo, SECRET_PATHS) as after:
            assert after[0].store != first[0].store
            assert first[0].store.is_dir()  # a command still holds it
    (repo / "README.md").write_text("four\n")
    _commit(repo, "four")
    with git_view.object_views(repo, SECRET_PATHS) as latest:
        assert latest[0].store.is_dir()
        assert not first[0].store.exists() and not after[0].store.exists()


def test_a_corrupt_repository_shows_an_empty_store(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    (ws / ".env").write_text(f"API_KEY={SECRETS['head']}\n")
    _commit(ws, "one")
    tree = git(ws, "rev-parse", "HEAD^{tree}").strip()
    os.unlink(ws / ".git" / "objects" / tree[:2] / tree[2:])
    out = run(ws, "git cat-file --batch-all-objects --batch-check | wc -l; git log 2>&1 | head -1")
    assert out.splitlines()[1] == "0"
    assert leaked(out) == []


# --- submodules and a non-root worker --------------------------------------------------------


def test_a_submodule_s_tracked_secret_stays_in(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q")
    (upstream / ".env").write_text(f"API_KEY={SECRETS['deleted']}\n")
    (upstream / "lib.py").write_text("x = 1\n")
    _commit(upstream, "lib")
    ws = make_workspace(tmp_path)
    git(ws, "init", "-q")
    allow = ("-c", "protocol.file.allow=always")
    git(ws, *allow, "submodule", "add", "-q", str(upstream), "vendor/lib")
    _commit(ws, "add lib")
    shutil.rmtree(upstream)
    with git_view.object_views(ws, SECRET_PATHS) as views:
        assert sorted(v.objects for v in views) == [".git/modules/vendor/lib/objects"]
    out = run(
        ws,
        "cd vendor/lib && git show HEAD:.env | base64; git show HEAD:lib.py; "
        "cd ../.. && find .git/modules -type f -exec cat {} + | base64",
    )
    assert leaked(out) == [] and "x = 1" in out


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the unprivileged chain as nobody: needs root")
def test_an_unprivileged_worker_s_commands_see_the_filtered_store_too(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="agentweb-nobody-"))
    try:
        os.chmod(base, 0o755)
        ws = _nobody_repo(base)
        with git_view.object_views(ws, SECRET_PATHS) as held:
            store = base / "store"
            shutil.copytree(held[0].store, store)
        scratch = make_scratch(ws)
        for path in (scratch / "gv0", scratch / "gv0" / "upper", scratch / "gv0" / "work"):
            path.mkdir()
        (scratch / "gv0" / "lower").symlink_to(store)
        subprocess.run(["chown", "-R", "65534:65534", str(base), str(scratch)], check=True)
        command = "git show HEAD:.env | rev; git log --oneline; cat .git/objects/pack/* | base64"
        views = [("gv0/lower", ".git/objects")]
        cmd = build_cow_command(ws, ["bash", "-c", command], SandboxOptions(), scratch, views=views)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd],
            cwd=scratch, capture_output=True, text=True, timeout=60, check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "dlehhtiw" in done.stdout and " one" in done.stdout
        assert leaked(done.stdout) == []
    finally:
        remove_scratch(scratch)
        shutil.rmtree(base, ignore_errors=True)


def _nobody_repo(base: Path) -> Path:
    ws = base / "ws"
    ws.mkdir(parents=True)
    git(ws, "init", "-q")
    (ws / ".env").write_text(f"API_KEY={SECRETS['head']}\n")
    _commit(ws, "one")
    return ws


def test_the_store_of_a_workspace_that_is_gone_is_removed(repo: Path, tmp_path: Path) -> None:
    with git_view.object_views(repo, SECRET_PATHS) as views:
        gone = views[0].store.parent
    shutil.rmtree(repo)
    other = _nobody_repo(tmp_path / "other")
    with git_view.object_views(other, SECRET_PATHS) as views:
        assert views[0].store.is_dir()
    assert not gone.exists()


def test_rerere_and_rebase_state_is_hidden_with_the_objects(repo: Path) -> None:
    for name in ("rr-cache/abc", "rebase-merge"):
        (repo / ".git" / name).mkdir(parents=True)
        (repo / ".git" / name / "preimage").write_text(f"API_KEY={SECRETS['head']}\n")
    out = run(repo, "cat .git/rr-cache/*/preimage .git/rebase-merge/preimage; ls -A .git/rr-cache")
    assert leaked(out) == [] and "No such file" in out
