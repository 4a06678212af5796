"""The egress proxy: a sandboxed command's only way out, serving one unix socket.

One proxy serves one command run (`serving`), on a socket in the command's scratch dir
that the sandbox sees bridged to `127.0.0.1:3128` (`core/egress/sandbox.py`). It takes
HTTP requests with an absolute URL and HTTPS by `CONNECT host:port`, and for each:

* refuses an IP literal and a host outside the grant, with a 403 that names the host;
* resolves the name here, outside the sandbox, through the SSRF guard of web_fetch
  (`core/tools/netguard.py`): every address must be public, and the proxy connects to
  the checked address itself (a test's pinned loopback names aside, `config.py`);
* for CONNECT, reads the TLS ClientHello and refuses it unless its SNI is the CONNECT
  host; then tunnels the bytes untouched, or, for a host with a credential, terminates
  TLS with a leaf certificate of the installation CA (`ca.py`), adds the credential's
  header to every request and speaks TLS to the real server itself;
* records a `Connection`: host, port, bytes each way, allowed or why not.

Threads, not asyncio: a connection is a thread of blocking copies (the kernel does the
waiting; Python's `ssl` wraps a socket after a `MSG_PEEK` of the ClientHello, which an
asyncio stream cannot give back), and a run's proxy starts in well under a millisecond.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tools_app.core.egress import ca, config, hosts, messages, relay, tls_hello
from tools_app.core.egress.grant import Connection, Credential, EgressGrant
from tools_app.core.tools import netguard

HELLO_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
HEAD_TIMEOUT = 60.0
ADDRESS_HINT = "the egress proxy connects only to public addresses"


class Refused(Exception):
    """A connection the proxy will not make; the message is what the command reads."""

    def __init__(self, reason: str, status: int = 403) -> None:
        super().__init__(reason)
        self.http_status = status


class EgressProxy:
    """The proxy of one command run: serves `socket_path` until `stop()`."""

    def __init__(
        self, grant: EgressGrant, socket_path: Path, owner: tuple[int, int] | None = None
    ) -> None:
        self.grant = grant
        self.socket_path = socket_path
        self.owner = owner
        self.pinned = config.test_hosts()
        self.authority = ca.authority(config.var_dir() / "egress-ca") if grant.credentials else None
        self._tallies: list[relay.Tally] = []
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Every connection tried, set by `stop()`.
        self.connections: tuple[Connection, ...] = ()

    def start(self) -> None:
        self._listener.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o600)
        if self.owner is not None:  # the sandbox's uid connects (a root worker's)
            os.chown(self.socket_path, *self.owner)
        self._listener.listen(64)
        self._spawn(self._accept_loop)

    def stop(self) -> tuple[Connection, ...]:
        """Close everything still open and return every connection tried, in order."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + 2.0
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self.connections = tuple(tally.frozen() for tally in self._tallies)
        return self.connections

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="agentweb-egress")
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._track(client)
            self._spawn(self._serve, client)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)

    def _serve(self, client: socket.socket) -> None:
        stream = relay.Stream(client)
        try:
            client.settimeout(HEAD_TIMEOUT)
            raw = stream.head()
            if raw is None:
                return
            head = messages.parse_head(raw)
            if head.method == "CONNECT":
                self._tunnel(stream, head)
            else:
                self._forward(stream, head)
        except messages.BadRequest as exc:
            relay.answer(client, 400, "Bad Request", f"agentweb egress proxy: {exc}")
        except (OSError, ssl.SSLError):
            pass  # a side went away: the tally has what passed
        finally:
            with self._lock:
                self._open.discard(client)
            client.close()

    # --- deciding ---------------------------------------------------------------------

    def _admit(self, host: str, port: int) -> tuple[relay.Tally, tuple[str, int]]:
        """The connection's tally and the checked address to connect to; a refusal is
        tallied and raised."""
        tally = relay.Tally(hosts.normalise(host), port)
        with self._lock:
            self._tallies.append(tally)
        try:
            address = self._check(tally.host, port)
        except Refused as exc:
            tally.reason = str(exc)
            raise
        tally.allowed = True
        return tally, address

    def _check(self, host: str, port: int) -> tuple[str, int]:
        try:
            shown = f"[{host}]" if ":" in host else host  # an IPv6 literal
            target = netguard.parse_target(f"http://{shown}:{port}/")
        except ValueError as exc:
            raise Refused(f"{host}: {exc}") from None
        if target.ip is not None:
            raise Refused(
                f"{host} is an IP address; the egress proxy connects to hosts by name only"
            )
        if not hosts.allowed(self.grant, target.host, port):
            raise Refused(hosts.not_granted(self.grant))
        if target.host in self.pinned:
            return self.pinned[target.host]
        try:
            addresses = netguard.resolve(target)
        except (OSError, UnicodeError):
            raise Refused(f"{target.host} does not resolve", status=502) from None
        problem = netguard.address_refusal(target, addresses, ADDRESS_HINT)
        if problem is not None:
            raise Refused(problem)
        return str(addresses[0]), port

    # --- CONNECT ----------------------------------------------------------------------

    def _tunnel(self, stream: relay.Stream, head: messages.RequestHead) -> None:
        host, port = messages.connect_authority(head)
        client = stream.sock
        try:
            tally, address = self._admit(host, port)
        except Refused as exc:
            _refuse(client, host, port, exc)
            return
        if stream.buffer:
            tally.allowed, tally.reason = False, "the client sent data before the tunnel opened"
            return
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        try:
            _check_hello(client, tally.host)
        except Refused as exc:
            tally.allowed, tally.reason = False, str(exc)
            return
        upstream = self._connect(address, tally)
        if upstream is None:
            return
        credential = hosts.credential_for(self.grant, tally.host, port)
        if credential is None:
            relay.splice(client, upstream, tally)
            return
        tally.reason = f"credential for {credential.host} added"
        self._terminate(client, upstream, tally, credential)

    def _terminate(
        self,
        client: socket.socket,
        upstream: socket.socket,
        tally: relay.Tally,
        credential: Credential,
    ) -> None:
        """TLS ends here on both sides, so the credential can join every request."""
        assert self.authority is not None
        inner = self.authority.server_context(tally.host).wrap_socket(client, server_side=True)
        self._track(inner)
        context = ca.upstream_context(config.upstream_ca())
        outer = context.wrap_socket(upstream, server_hostname=tally.host)
        self._track(outer)
        authority = tally.host if tally.port == 443 else f"{tally.host}:{tally.port}"
        relay.relay_requests(relay.Stream(inner), outer, tally, authority, credential, first=None)

    # --- plain HTTP -------------------------------------------------------------------

    def _forward(self, stream: relay.Stream, head: messages.RequestHead) -> None:
        host, port, _ = messages.absolute_target(head)
        try:
            tally, address = self._admit(host, port)
        except Refused as exc:
            _refuse(stream.sock, host, port, exc)
            return
        upstream = self._connect(address, tally)
        if upstream is None:
            relay.answer(stream.sock, 502, "Bad Gateway", f"agentweb egress proxy: {tally.reason}")
            return
        credential = hosts.credential_for(self.grant, tally.host, port)
        if credential is not None:
            tally.reason = f"credential for {credential.host} added"
        authority = tally.host if port == 80 else f"{tally.host}:{port}"
        relay.relay_requests(stream, upstream, tally, authority, credential, first=head)

    def _connect(self, address: tuple[str, int], tally: relay.Tally) -> socket.socket | None:
        try:
            upstream = socket.create_connection(address, timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            tally.allowed, tally.reason = False, f"could not connect: {exc.strerror or exc}"
            return None
        upstream.settimeout(None)
        upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._track(upstream)
        return upstream


@contextlib.contextmanager
def serving(
    grant: EgressGrant, socket_path: Path, owner: tuple[int, int] | None = None
) -> Iterator[EgressProxy]:
    """A proxy for one command run, its socket owned by `owner` (uid, gid) when given;
    stopped (everything closed) on the way out."""
    proxy = EgressProxy(grant, socket_path, owner)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.stop()


def _refuse(sock: socket.socket, host: str, port: int, refused: Refused) -> None:
    reason = "Forbidden" if refused.http_status == 403 else "Bad Gateway"
    text = hosts.refusal_text(hosts.normalise(host), port, str(refused))
    relay.answer(sock, refused.http_status, reason, f"agentweb egress proxy: {text}")


def _check_hello(client: socket.socket, host: str) -> None:
    """Refused unless the client's ClientHello names `host`; read with MSG_PEEK, so the
    handshake is still whole for the server (or for the proxy's own TLS)."""
    deadline = time.monotonic() + HELLO_TIMEOUT
    client.settimeout(HELLO_TIMEOUT)
    seen = b""
    try:
        while not tls_hello.complete(seen):
            if time.monotonic() > deadline:
                raise Refused("no TLS ClientHello arrived in time")
            peeked = client.recv(tls_hello.MAX_HELLO, socket.MSG_PEEK)
            if not peeked:
                raise Refused("the connection closed before its TLS ClientHello")
            if peeked == seen:
                time.sleep(0.001)  # a partial hello: the rest is on its way
            seen = peeked
        name = tls_hello.server_name(seen)
    except tls_hello.HelloError as exc:
        raise Refused(str(exc)) from None
    finally:
        client.settimeout(None)
    if hosts.normalise(name) != host:
        raise Refused(f"the TLS server name {name!r} is not the CONNECT host {host}")
