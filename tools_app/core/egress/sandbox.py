"""The sandbox's side of the egress proxy: how a command with a network grant reaches it.

The command's network namespace has only `lo`. The proxy's unix socket is bound into
it (`/run/agentweb/egress.sock`), and socat, started before the command inside the
sandbox, bridges `127.0.0.1:3128` to it; the usual proxy variables point every tool
there. No resolver is reachable: names are resolved by the proxy, outside. With a
credential in the grant, a CA bundle (the system's CAs and agentweb's egress CA) is
bound read-only and named by the variables each tool reads.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from tools_app.core.egress import ca, config, hosts, proxy
from tools_app.core.egress.grant import Connection, EgressGrant
from tools_app.core.tools import sandbox_user
from tools_app.core.tools.errors import ToolError

PORT = 3128
INSIDE = "/run/agentweb"
SOCKET_NAME = "egress.sock"
BUNDLE_NAME = "egress-ca-bundle.pem"
SOCKET_INSIDE = f"{INSIDE}/{SOCKET_NAME}"
BUNDLE_INSIDE = f"{INSIDE}/{BUNDLE_NAME}"
PROXY_URL = f"http://127.0.0.1:{PORT}"
# socat's block size: its default (8 KB) caps a download at a fraction of the link.
SOCAT_OPTIONS = ("-b262144",)
# Starts the bridge, waits (a bounded moment) until it listens, then becomes the command.
# /proc/net/tcp lists the namespace's own sockets: 0100007F:0C38 is 127.0.0.1:3128, 0A
# is LISTEN.
_BRIDGE = (
    f"socat {' '.join(SOCAT_OPTIONS)} TCP-LISTEN:{PORT},bind=127.0.0.1,fork,reuseaddr "
    f"UNIX-CONNECT:{SOCKET_INSIDE} "
    "</dev/null >/dev/null 2>&1 & i=0; "
    f"until grep -q ' 0100007F:{PORT:04X} 00000000:0000 0A' /proc/net/tcp; do "
    'i=$((i+1)); [ "$i" -gt 1000 ] && break; sleep 0.002; done; exec "$@"'
)
# Where localhost stays inside the sandbox (a command's own test server), never proxied.
NO_PROXY = "localhost,127.0.0.1,::1"
CA_VARIABLES = (
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_CERT",
    "GIT_SSL_CAINFO",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


def wrapped_argv(argv: Sequence[str], grant: EgressGrant | None) -> list[str]:
    """`argv` run once the bridge to the proxy listens inside the sandbox (as it is
    without a grant)."""
    if grant is None:
        return list(argv)
    return ["sh", "-c", _BRIDGE, "agentweb-egress", *argv]


def environment(grant: EgressGrant | None, base: dict[str, str]) -> dict[str, str]:
    """The proxy variables every common tool reads (curl, pip, npm, git, node, Python),
    added to `base` (git's through `GIT_CONFIG_*`, after any entries `base` has); `base`
    as it is without a grant."""
    env = dict(base)
    if grant is None:
        return env
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        env[name] = PROXY_URL
    env.update({"NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY})
    env.update({"npm_config_proxy": PROXY_URL, "npm_config_https_proxy": PROXY_URL})
    env["PIP_PROXY"] = PROXY_URL
    count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    env[f"GIT_CONFIG_KEY_{count}"] = "http.proxy"
    env[f"GIT_CONFIG_VALUE_{count}"] = PROXY_URL
    env["GIT_CONFIG_COUNT"] = str(count + 1)
    if grant.credentials:
        env.update(dict.fromkeys(CA_VARIABLES, BUNDLE_INSIDE))
    return env


def bind_args(scratch: Path, grant: EgressGrant) -> list[str]:
    """bubblewrap's binds of the proxy's socket (and the CA bundle) from `scratch`."""
    out = ["--ro-bind", str(scratch / SOCKET_NAME), SOCKET_INSIDE]
    if grant.credentials:
        out += ["--ro-bind", str(scratch / BUNDLE_NAME), BUNDLE_INSIDE]
    return out


@contextlib.contextmanager
def proxy_for_run(scratch: Path, grant: EgressGrant | None) -> Iterator[proxy.EgressProxy | None]:
    """The command's egress proxy on a socket in its scratch (with a credential, the CA
    bundle beside it) while the command runs; None without a grant. A ToolError when it
    cannot start: the command does not run."""
    if grant is None:
        yield None
        return
    owner = sandbox_user.sandbox_ids() if sandbox_user.worker_is_root() else None
    with contextlib.ExitStack() as stack:
        try:
            if grant.credentials:
                bundle = ca.authority(config.var_dir() / "egress-ca").bundle_file
                shutil.copyfile(bundle, scratch / BUNDLE_NAME)
            running = stack.enter_context(proxy.serving(grant, scratch / SOCKET_NAME, owner))
        except (OSError, ValueError) as exc:
            raise ToolError(
                f"the command did not run: its egress proxy could not start ({exc}); "
                "nothing was changed"
            ) from None
        yield running


def summary(connections: Sequence[Connection]) -> str:
    """What the command's output ends with: each refused host and why, and the hosts it
    reached with how much went each way."""
    lines: list[str] = []
    for conn in connections:
        if not conn.allowed:
            line = f"network: refused {conn.host}:{conn.port} ({conn.reason})"
            if line not in lines:
                lines.append(line)
    if any(c.reason.startswith(hosts.GRANT_REASONS) for c in connections if not c.allowed):
        lines.append(f"network: to reach a refused host, {hosts.ALLOW_HINT}")
    reached: dict[str, list[int]] = {}
    for conn in connections:
        if conn.allowed:
            totals = reached.setdefault(f"{conn.host}:{conn.port}", [0, 0, 0])
            totals[0] += 1
            totals[1] += conn.sent
            totals[2] += conn.received
    for where, (count, sent, received) in reached.items():
        plural = "" if count == 1 else "s"
        lines.append(
            f"network: reached {where} ({count} connection{plural}, "
            f"{_size(sent)} sent, {_size(received)} received)"
        )
    return "\n".join(lines)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"
