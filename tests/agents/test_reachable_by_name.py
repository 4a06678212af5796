"""agentweb reached from another machine by the name AGENTWEB_BASE_URL gives.

The test makes the network: a veth pair, one end on this host with a private address the
test picks (agentweb listens there, not on loopback), the other end in a network namespace
of its own, the "laptop". In the laptop, `agentweb.test` names agentweb's address through
an /etc/hosts bind-mounted in a mount namespace of the laptop's commands only (the real
/etc/hosts is never written), and the fake Anthropic API listens on the laptop's own
loopback. From there the real Claude Code, with the settings `hook_settings claude-code
--url http://agentweb.test:PORT` prints, and curl on the REST API reach agentweb by that
name; by its address, the Host agentweb was not set up for, they are refused with a
message naming AGENTWEB_BASE_URL. Namespaces and links are removed even when a test fails.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from django.core.management import call_command

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.fake_anthropic import FakeAnthropic
from tests.browser.server import Daphne
from tests.helpers import Worker
from tools_app.core.gateway.agent_settings import claude_code_settings
from tools_app.models import AgentSession, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_claude]

NAME = "agentweb.test"
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


@dataclass(frozen=True)
class Network:
    laptop: str  # the laptop's network namespace
    server_ip: str  # this host's end of the veth pair: where agentweb listens
    hosts_file: Path  # the laptop's /etc/hosts

    def on_laptop(self, *command: str) -> tuple[str, ...]:
        """`command` run in the laptop: its network, its /etc/hosts."""
        mount = 'mount --bind "$0" /etc/hosts && exec "$@"'
        return ("ip", "netns", "exec", self.laptop, "unshare", "--mount", "--propagation",
                "private", "sh", "-c", mount, str(self.hosts_file), *command)  # fmt: skip


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def _free_subnet() -> str:
    """A 10.x.y.0/30 that no route of this host names yet."""
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    while True:
        prefix = f"10.{random.randint(100, 250)}.{random.randint(0, 255)}"
        if f"{prefix}." not in routes:
            return prefix


@pytest.fixture(scope="module")
def network(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Network]:
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("needs iproute2's `ip` and util-linux's `unshare`")
    tag = f"{os.getpid() % 100000}"
    laptop, here, there = f"aw-laptop-{tag}", f"aw{tag}h", f"aw{tag}l"
    prefix = _free_subnet()
    try:
        _ip("netns", "add", laptop)
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"`ip netns add` is not permitted here: {exc.stderr.strip()}")
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there, "netns", laptop)
        _ip("addr", "add", f"{prefix}.1/30", "dev", here)
        _ip("link", "set", here, "up")
        _ip("-n", laptop, "addr", "add", f"{prefix}.2/30", "dev", there)
        _ip("-n", laptop, "link", "set", there, "up")
        _ip("-n", laptop, "link", "set", "lo", "up")
        hosts = tmp_path_factory.mktemp("laptop") / "hosts"
        hosts.write_text(f"127.0.0.1 localhost\n{prefix}.1 {NAME}\n")
        yield Network(laptop, f"{prefix}.1", hosts)
    finally:
        subprocess.run(["ip", "link", "del", here], capture_output=True)
        subprocess.run(["ip", "netns", "del", laptop], capture_output=True)


class ByName(Daphne):
    """daphne on the veth address, set up for http://agentweb.test:PORT."""

    def _answers(self) -> bool:
        name = {"Host": f"{NAME}:{self.port}"}
        try:
            address = f"http://{self.host}:{self.port}/login/"
            return httpx.get(address, headers=name, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


@pytest.fixture(scope="module")
def agentweb(
    network: Network, stack: Worker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ByName]:
    log = tmp_path_factory.mktemp("daphne") / "daphne.log"
    server = ByName({}, log, host=network.server_ip)
    server.url = f"http://{NAME}:{server.port}"
    server.env = {**stack.env, "DJANGO_DEBUG": "0", "AGENTWEB_BASE_URL": server.url}
    server.env.pop("DJANGO_ALLOWED_HOSTS", None)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def in_namespace(namespace: str, make: Callable[[], T]) -> T:
    """`make()` run in a thread that entered `namespace`: the sockets it opens live there
    (a listening one keeps serving from any thread); the thread ends with it."""
    made: list[Any] = []

    def enter_and_make() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        with open(f"/run/netns/{namespace}") as handle:
            if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                made.append(OSError(ctypes.get_errno(), f"setns into {namespace}"))
                return
        made.append(make())

    thread = threading.Thread(target=enter_and_make)
    thread.start()
    thread.join()
    if isinstance(made[0], OSError):
        raise made[0]
    return made[0]  # type: ignore[no-any-return]


def curl(network: Network, url: str, token: str, host: str = "") -> tuple[int, Any]:
    """GET `url` from the laptop: (status, JSON body)."""
    headers = ["-H", f"Authorization: Bearer {token}", *(["-H", f"Host: {host}"] if host else [])]
    command = network.on_laptop("curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}",
                                *headers, url)  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout
    body, _, status = out.rpartition("\n")
    return int(status), json.loads(body)


def test_claude_codes_own_http_hooks_refuse_a_private_address_before_agentweb_hears(
    network: Network, agentweb: ByName, token: str, project: Path
) -> None:
    """http hooks (what `hook_settings claude-code` prints without `--hook command`) do not
    reach a team server on a private network: Claude Code itself blocks a hook URL whose
    name resolves to a private address (only loopback and public addresses), and fails
    closed."""
    settings = claude_code_settings(agentweb.url, 120)
    assert settings["hooks"]["PreToolUse"][0]["hooks"][0]["url"].startswith(agentweb.url)
    fake = in_namespace(network.laptop, lambda: FakeAnthropic("Bash", {"command": "ls"}))
    with fake:
        wrapper = network.on_laptop()
        finished(run_claude(project, agentweb.url, token, fake, settings=settings, wrapper=wrapper))
        results = " ".join(fake.tool_results())
    assert f"{NAME} resolves to {network.server_ip} (private/link-local address)" in results
    assert not ToolCall.objects.exists()


def test_a_claude_code_hook_and_the_api_reach_agentweb_by_name_from_the_laptop(
    network: Network,
    agentweb: ByName,
    token: str,
    project: Path,
    hook_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What `hook_settings claude-code --url http://agentweb.test:PORT --hook command`
    prints (agentweb-hook as Claude Code's hook): an allowed `ls` is judged by agentweb,
    runs and is recorded."""
    assert not agentweb.host.startswith("127.")  # the veth address, not loopback
    monkeypatch.setenv("PATH", f"{hook_bin}:{os.environ['PATH']}")
    out = StringIO()
    call_command("hook_settings", "claude-code", "--url", agentweb.url, "--hook", "command",
                 stdout=out)  # fmt: skip
    settings = json.loads(out.getvalue())
    fake = in_namespace(network.laptop, lambda: FakeAnthropic("Bash", {"command": "ls"}))
    with fake:
        process = run_claude(
            project, agentweb.url, token, fake, settings=settings, wrapper=network.on_laptop()
        )
        finished(process)
        assert "README.md" in " ".join(fake.tool_results())
    call = ToolCall.objects.get()
    assert (call.tool, call.native_tool, call.status) == ("run_command", "Bash", "succeeded")
    assert "README.md" in call.result

    status, sessions = curl(network, f"{agentweb.url}/api/sessions", token)
    assert status == 200, sessions
    assert call.session_id in [session["id"] for session in _items(sessions)]


def test_the_servers_address_is_not_a_name_it_answers_to(
    network: Network, agentweb: ByName, token: str
) -> None:
    by_address = f"http://{agentweb.host}:{agentweb.port}/api/sessions"
    status, answer = curl(network, by_address, token)
    assert status == 400
    assert "is not a name agentweb serves" in answer["detail"]
    assert "AGENTWEB_BASE_URL" in answer["detail"]
    status, answer = curl(network, f"{agentweb.url}/api/sessions", token, host="evil.test")
    assert (status, "AGENTWEB_BASE_URL" in answer["detail"]) == (400, True)
    log = agentweb.log.read_text()
    assert f"agentweb serves {agentweb.url} (AGENTWEB_BASE_URL" in log
    assert "Traceback" not in log
    assert not AgentSession.objects.exists()


def _items(page: Any) -> list[dict[str, Any]]:
    return page["items"] if isinstance(page, dict) else page  # type: ignore[no-any-return]
