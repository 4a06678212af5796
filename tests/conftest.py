"""Shared fixtures: a real git workspace and the people who use agentweb."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.helpers import Worker, git
from tools_app.core.tools import sandbox_user
from tools_app.live import redis_server

# Hypothesis: few examples in `make test`, many in `make fuzz` (HYPOTHESIS_PROFILE=deep).
# The tests pin no counts of their own, so both tiers run every property.
# The suite's examples are the same on every run (CI passes or fails on the code, not on
# the draw); `make fuzz` (deep) draws anew each time.
settings.register_profile("default", max_examples=25, derandomize=True)
settings.register_profile("deep", max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session")
def workspace_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with one commit: a README, a module, a .env and a manifest; made
    once a run, copied for each test that wants one."""
    root = tmp_path_factory.mktemp("template") / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Title\n\nA small project.\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    (root / ".env").write_text("SECRET=shh\n")
    (root / "package.json").write_text('{"name": "demo"}\n')
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "-A")
    git(root, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "init")
    return root


@pytest.fixture
def workspace(workspace_template: Path, tmp_path: Path) -> Path:
    """This test's own copy of the template repository (a copy costs less than the four
    git commands that make one)."""
    hook_samples = shutil.ignore_patterns("*.sample")  # what `git init` writes as examples
    return Path(shutil.copytree(workspace_template, tmp_path / "ws", ignore=hook_samples))


# --- real services: Redis and a Celery worker ---------------------------------------------

# Under pytest-xdist each test process (gw0, gw1, ...) has its own Redis database (9, 10,
# ...: Celery's queues and its unacked index) and its own channel prefix (pub/sub channels
# ignore the database), so two processes' sessions numbered 1 never hear each other.
# A run without xdist (the PostgreSQL run of `make test`, a targeted run beside a whole
# suite on the same machine) takes a database of its own among 13-15, above those of up
# to four xdist processes, and a channel prefix of its own, so that its Celery worker
# never takes the suite's tasks.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
PROCESS_SLOT = int(XDIST_WORKER[2:] or 0) if XDIST_WORKER else 4 + os.getpid() % 3


def _process_redis(base: str) -> str:
    """`base` (its database, 9 when it names none) moved up by this process's number; a
    unix-socket URL is left as it is (one test process, or set a URL per process)."""
    if not base.startswith(("redis://", "rediss://")):
        return base
    stem, _, database = base.rstrip("/").rpartition("/")
    if not database.isdigit() or "://" not in stem:  # no database in the URL
        stem, database = base.rstrip("/"), "9"
    return f"{stem}/{int(database) + PROCESS_SLOT}"


LOCAL_REDIS = _process_redis(os.environ.get("AGENTWEB_TEST_REDIS_URL", "redis://127.0.0.1:6379/9"))
CHANNEL_PREFIX = f"agentweb-test-{XDIST_WORKER or f'solo{os.getpid()}'}"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The machine's Redis when it answers, else an embedded one on a unix socket."""
    if redis_server.is_reachable(LOCAL_REDIS):
        yield LOCAL_REDIS
        return
    if redis_server.redis_server_binary() is None:
        pytest.skip("no Redis: none on 127.0.0.1:6379 and no redis-server binary")
    folder = tmp_path_factory.mktemp("redis")
    process = redis_server.start_embedded(folder / "redis.sock", folder)
    yield f"unix://{folder / 'redis.sock'}"
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix: None, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A file-backed SQLite test database, so that a worker process can share it; on
    PostgreSQL, pytest-django's name with this xdist process's suffix (test_test_gw0)."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database.setdefault("TEST", {})["NAME"] = str(
            tmp_path_factory.mktemp("db") / "test.sqlite3"
        )


def database_url() -> str:
    from django.db import connection

    params = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{params['NAME']}"
    user = params.get("USER") or "postgres"
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    host, port = params.get("HOST") or "127.0.0.1", params.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{params['NAME']}"


@pytest.fixture(scope="session")
def services_env(
    redis_url: str,
    django_db_setup: None,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, str]:
    """Point this process at the test Redis (broker and channel layer), its own queues and
    a workspaces folder; returns the environment a worker or daphne needs for the same."""
    from channels.layers import channel_layers as layers
    from django.conf import settings

    from agentweb.celery import app
    from agentweb.settings import channel_layers, kombu_url

    queue = f"agentweb-test-{os.getpid()}"
    host_queue = f"host.test-{os.getpid()}"
    workspaces = tmp_path_factory.mktemp("workspaces")
    settings.REDIS_URL = redis_url
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    settings.AGENTWEB_NOTIFY_QUEUE = ""  # "<queue>.notify", the worker's too
    settings.AGENTWEB_WORKSPACES = workspaces
    settings.CHANNEL_LAYERS = channel_layers(redis_url, prefix=CHANNEL_PREFIX)  # the worker's too
    layers.backends = {}
    app.conf.broker_url = kombu_url(redis_url)
    app.conf.task_default_queue = queue
    with django_db_blocker.unblock():
        url = database_url()
    return {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": redis_url,
        "AGENTWEB_CHANNEL_LAYER": "pubsub",
        "AGENTWEB_CHANNEL_PREFIX": CHANNEL_PREFIX,
        "AGENTWEB_QUEUE": queue,
        "AGENTWEB_WORKER_QUEUE": host_queue,
        "AGENTWEB_NOTIFY_QUEUE": "",
        "AGENTWEB_WORKSPACES": str(workspaces),
        "AGENTWEB_NOTIFY_HOSTS": "127.0.0.1",  # the notification tests' servers
        "AGENTWEB_NOTIFY_PRIVATE_HOSTS": "127.0.0.1",
    }


@pytest.fixture(scope="session")
def stack(
    services_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Worker]:
    """One real Celery worker on the test database and Redis, for the session; yields it.
    It consumes every queue, notification deliveries' too (`up` gives those a worker of
    their own: test_notify_down checks that layout)."""
    queue = services_env["AGENTWEB_QUEUE"]
    queues = f"{queue},{services_env['AGENTWEB_WORKER_QUEUE']},{queue}.notify"
    worker = Worker(services_env, queues, tmp_path_factory.mktemp("logs") / "worker.log")
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def eager(services_env: dict[str, str], settings: Any) -> None:
    """Tasks run in this process, at the commit that sends them (CELERY_TASK_ALWAYS_EAGER:
    `services/queueing.task_send` applies the task instead of sending it). Events still go
    through the test Redis's channel layer, so `?wait` wakes as it does in production."""
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture(autouse=True)
def task_runner(request: pytest.FixtureRequest) -> None:
    """`@pytest.mark.worker`: the session's real Celery worker runs the tasks (the queue,
    crashes, concurrency); `@pytest.mark.eager`: they run in this process. A test marked
    both (a worker test in an eager module) gets the worker."""
    if request.node.get_closest_marker("worker"):
        request.getfixturevalue("stack")
    elif request.node.get_closest_marker("eager"):
        request.getfixturevalue("eager")


# --- a descriptor closed twice ----------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """A test (or the code it ran) that closed the sandbox's kept user namespace fd, a
    number it did not own, is named in the warnings summary. The sandbox makes a new
    namespace then (`sandbox_user._idmap_userns`); the stray close is still a bug."""
    yield
    if not sandbox_user.kept_userns_intact():
        item.warn(pytest.PytestWarning("closed the sandbox's kept user namespace fd"))


# --- nothing of ours left in the temp dir ---------------------------------------------------

TEMP_DIR = Path(tempfile.gettempdir())
_TEMP_BEFORE = pytest.StashKey[set[str]]()
LEFTOVER_GRACE_SECONDS = 5.0  # another run's command may be between making and removing one
# While another test run is going (`make test` runs the PostgreSQL run beside the
# SQLite one, which ends minutes later), what is left may be a module fixture of that
# run's, alive as long as its module runs: it is waited for this long.
OTHER_RUN_GRACE_SECONDS = 180.0


def _agentweb_temp_entries() -> set[str]:
    return {entry.name for entry in TEMP_DIR.glob("agentweb-*")}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_TEMP_BEFORE] = _agentweb_temp_entries()


def _left_after(left: set[str], seconds: float, while_: Any = lambda: True) -> set[str]:
    """Of `left`, what is still there after `seconds` (or once `while_()` is false)."""
    deadline = time.monotonic() + seconds
    while left and time.monotonic() < deadline and while_():
        time.sleep(0.25)
        left &= _agentweb_temp_entries()
    return left


def _other_test_runs() -> bool:
    """Whether a pytest run other than this one is going: a process that names pytest,
    neither this one, one of its ancestors (the shell `make` started it from) nor one of
    its children."""
    parents = {pid: parent for pid, parent in _processes()}
    ours, pid = {os.getpid()}, os.getpid()
    while parents.get(pid, 0) > 1:
        pid = parents[pid]
        ours.add(pid)
    for pid, parent in parents.items():
        if pid in ours or parent == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if b"pytest" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
    return False


def _processes() -> Iterator[tuple[int, int]]:
    """(pid, parent pid) of each process on the machine."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                yield int(entry.name), int(stat.rsplit(")", 1)[1].split()[1])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run fails when it left `agentweb-*` entries in the temp dir (a git HOME, a
    command's scratch, a probe's directory): only those made during this run and still
    there after a short grace, so that other runs on the machine neither break it nor hide
    behind it. Under xdist, the controller checks once every worker has ended."""
    if hasattr(session.config, "workerinput"):
        return
    before = session.config.stash.get(_TEMP_BEFORE, set())
    left = _left_after(_agentweb_temp_entries() - before, LEFTOVER_GRACE_SECONDS)
    if left and _other_test_runs():
        left = _left_after(left, OTHER_RUN_GRACE_SECONDS, while_=_other_test_runs)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        names = ", ".join(sorted(left)[:10]) + (" …" if len(left) > 10 else "")
        message = f"the run left {len(left)} agentweb-* entries in {TEMP_DIR}: {names}"
        if reporter is not None:
            reporter.write_sep("=", f"ERROR: {message}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
