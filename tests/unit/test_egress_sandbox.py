"""A command's network through the egress proxy, run for real: npm and pip install from
registries the tests serve (pinned by the proxy's test allowance), a host outside the
grant refused and recorded, nothing at all without a grant, and a credential added
outside the sandbox that nothing inside can find."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.unit import package_registries as registries
from tests.unit.helpers import make_workspace, requires_cow
from tools_app.core.egress import proxy
from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.egress.grant import Connection, Credential, EgressGrant
from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.overlay import build_cow_command, make_scratch, remove_scratch
from tools_app.core.tools.shell import run_argv
from tools_app.core.tools.trees import remove_tree

pytestmark = [pytest.mark.sandbox, requires_cow]

TOKEN = "egress-test-token-7f3a9c"
# The token as a command builds it to search for it: never whole in its own command line.
TOKEN_PIECES = ("egress-test-", "token-7f3a9c")


@dataclass
class Servers:
    npm: registries.Registry
    pypi: registries.Registry
    secure: registries.Registry
    workspace: Path


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    base = tmp_path_factory.mktemp("egress")
    ca_file, tls = registries.test_ca(base, "secure.test")
    npm, npm_server = registries.npm_registry("registry.test", "http")
    pypi, pypi_server = registries.simple_index("pypi.test")
    secure, secure_server = registries.npm_registry("secure.test", "https", TOKEN, tls)
    pinned = ",".join(f"{r.name}=127.0.0.1:{r.port}" for r in (npm, pypi, secure))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTWEB_EGRESS_TEST_HOSTS", pinned)
        patch.setenv("AGENTWEB_EGRESS_UPSTREAM_CA", str(ca_file))
        patch.setenv("AGENTWEB_VAR", str(base / "var"))
        yield Servers(npm, pypi, secure, make_workspace(base))
    for server in (npm_server, pypi_server, secure_server):
        server.shutdown()
        server.server_close()


def run(ws: Path, command: str, grant: EgressGrant | None) -> tuple[str, list[Connection]]:
    recorded: list[Connection] = []
    ctx = ToolContext(
        workspace=ws,
        sandbox=SandboxOptions(egress=grant),
        on_connections=lambda connections: recorded.extend(connections),
    )
    return run_argv(ctx, ["bash", "-c", command], timeout=120), recorded


NPM = "npm install --no-audit --no-fund --no-update-notifier --prefix /tmp/app"
PIP = "python3 -m pip install --disable-pip-version-check --no-cache-dir --target /tmp/py"


def test_npm_and_pip_install_through_the_proxy_and_another_host_is_refused(
    servers: Servers,
) -> None:
    grant = EgressGrant(hosts=("registry.test", "pypi.test"))
    npm, py = registries.NPM_PACKAGE, registries.PY_PACKAGE
    command = (
        f"{NPM} --registry http://registry.test/ {npm} && "
        f"node -e 'console.log(require(\"/tmp/app/node_modules/{npm}\"))' && "
        f"{PIP} --index-url http://pypi.test/simple --trusted-host pypi.test {py} && "
        f"PYTHONPATH=/tmp/py python3 -c 'import {py} as m; print(m.VALUE * 2)' && "
        "curl -sS --max-time 5 https://evil.test/ ; echo curl=$?; "
        "git ls-remote http://registry.test/repo.git >/dev/null 2>&1; echo git=$?"
    )
    out, connections = run(servers.workspace, command, grant)
    assert out.startswith("exit code: 0"), out
    assert "\n42\n" in out and "\n84\n" in out and "curl=56" in out, out
    assert (
        "network: refused evil.test:443 (not in this command's hosts: registry.test, pypi.test)"
        in out
    )
    assert "network: reached registry.test:80" in out and "network: reached pypi.test:80" in out
    reached = {(c.host, c.port) for c in connections if c.allowed}
    assert reached == {("registry.test", 80), ("pypi.test", 80)}
    refused = [c for c in connections if not c.allowed]
    assert [(c.host, c.port, c.sent, c.received) for c in refused] == [("evil.test", 443, 0, 0)]
    assert all(c.received > 0 for c in connections if c.allowed)
    paths = {path for path, _ in servers.npm.seen}
    assert f"/{registries.NPM_PACKAGE}/-/{registries.NPM_PACKAGE}-1.0.0.tgz" in paths
    assert "/repo.git/info/refs" in paths and "git=128" in out  # git's http.proxy too


def test_without_a_grant_nothing_connects(servers: Servers) -> None:
    before = len(servers.npm.seen)
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{servers.npm.port}/ ; echo direct=$?; "
        "curl -sS --max-time 5 -x http://127.0.0.1:3128 http://registry.test/ ; echo proxy=$?; "
        "getent hosts registry.test ; echo dns=$?"
    )
    out, connections = run(servers.workspace, command, None)
    assert "direct=7" in out and "proxy=7" in out and "dns=2" in out, out
    assert connections == [] and "network:" not in out
    assert len(servers.npm.seen) == before


def test_a_granted_command_reaches_no_address_and_no_resolver_directly(servers: Servers) -> None:
    """Only names, only through the proxy; a granted HTTPS host without a credential is
    tunnelled untouched (the token-guarded registry answers 401: nothing was added)."""
    grant = EgressGrant(hosts=("registry.test", "secure.test"))
    command = (
        f"curl -sS --max-time 5 http://127.0.0.1:{servers.npm.port}/ ; echo loopback=$?; "
        "curl -sS --max-time 5 --noproxy '*' http://93.184.216.34/ ; echo direct=$?; "
        "curl -sS --max-time 5 http://93.184.216.34/ ; echo literal=$?; "
        "getent hosts registry.test ; echo dns=$?; "
        # -k: the test's CA is not the sandbox's; the tunnel is what is looked at.
        f"curl -sk -o /dev/null -w 'tunnel=%{{http_code}}' https://secure.test/{registries.NPM_PACKAGE}"
    )
    out, connections = run(servers.workspace, command, grant)
    assert "loopback=7" in out and "direct=7" in out and "dns=2" in out, out
    assert "93.184.216.34 is an IP address; the egress proxy connects to hosts by name only" in out
    assert "tunnel=401" in out and servers.secure.seen[-1][1] == ""
    assert [(c.host, c.allowed, c.reason) for c in connections] == [
        (
            "93.184.216.34",
            False,
            "93.184.216.34 is an IP address; the egress proxy connects to hosts by name only",
        ),
        ("secure.test", True, ""),
    ]


def test_a_credential_is_added_outside_and_leaves_no_trace_inside(servers: Servers) -> None:
    grant = EgressGrant(
        hosts=("secure.test",),
        credentials=(Credential("secure.test", "Authorization", f"Bearer {TOKEN}"),),
    )
    left, right = TOKEN_PIECES
    command = (
        f"{NPM} --registry https://secure.test/ {registries.NPM_PACKAGE} && "
        # The pattern comes through a pipe: in no file, no environment, no command line.
        f"pattern() {{ printf '%s%s\\n' {left} {right}; }}; "
        "env | grep -c -f <(pattern); "
        'grep -rsl -f <(pattern) /tmp /run /etc /dev/shm "$PWD"; '
        "cat /proc/*/environ /proc/*/cmdline 2>/dev/null | grep -ac -f <(pattern); "
        "echo searched; "
        # The search finds the token where it is (a control): in a file it was written to.
        "pattern > /tmp/control; grep -rsl -f <(pattern) /tmp"
    )
    before = len(servers.secure.seen)
    out, connections = run(servers.workspace, command, grant)
    assert out.startswith("exit code: 0"), out
    assert "added " + registries.NPM_PACKAGE in out or "added 1 package" in out
    assert "\n0\n0\nsearched\n/tmp/control\n" in out and TOKEN not in out, out
    assert servers.secure.seen[before:]
    assert all(auth == f"Bearer {TOKEN}" for _, auth in servers.secure.seen[before:])
    assert next(c.reason for c in connections if c.allowed) == "credential for secure.test added"


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a worker as nobody needs root")
def test_an_unprivileged_worker_s_command_reaches_its_proxy_too(servers: Servers) -> None:
    """The chain a worker that is not root runs (its own user namespace), started as
    `nobody`: the proxy's socket, owned by the worker, is reachable from the command."""
    base = Path(tempfile.mkdtemp(prefix="agentweb-nobody-"))
    ws = base / "ws"
    ws.mkdir()
    scratch = make_scratch(ws)
    grant = EgressGrant(hosts=("registry.test",))
    try:
        os.chmod(base, 0o755)
        for path in (ws, scratch, scratch / "upper", scratch / "work", scratch / "merged"):
            os.chown(path, 65534, 65534)
        url = f"http://registry.test/{registries.NPM_PACKAGE}"
        command = f"curl -sS -o /dev/null -w '%{{http_code}}' {url}"
        cmd = build_cow_command(ws, ["bash", "-c", command], SandboxOptions(egress=grant), scratch)
        env = egress_sandbox.environment(grant, {"PATH": "/usr/bin:/bin", "HOME": "/tmp/home"})
        with proxy.serving(grant, scratch / egress_sandbox.SOCKET_NAME, (65534, 65534)) as running:
            done = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", *cmd],
                cwd=scratch, capture_output=True, text=True, timeout=60, check=False, env=env,
            )  # fmt: skip
        assert done.stdout == "200", done.stderr
        assert [(c.host, c.allowed) for c in running.connections] == [("registry.test", True)]
    finally:
        remove_tree(base, ignore_errors=True)
        remove_scratch(scratch)
