"""The egress proxy's pure parts (host globs, ClientHello SNI, request heads, refusal
texts, the output's summary, the test allowance) and the proxy itself, served on a unix
socket in the test's own process: what it lets through and what it refuses, and why."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tools_app.core.egress import ca, config, hosts, messages, proxy, sandbox, tls_hello
from tools_app.core.egress.grant import Connection, Credential, EgressGrant

# --- host globs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "host", "port", "expected"),
    [
        ("registry.npmjs.org", "registry.npmjs.org", 443, True),
        ("registry.npmjs.org", "Registry.NPMjs.org.", 80, True),
        ("registry.npmjs.org", "registry.npmjs.org", 8443, False),
        ("*.pythonhosted.org", "files.pythonhosted.org", 443, True),
        ("*.pythonhosted.org", "pythonhosted.org", 443, False),
        ("*.pythonhosted.org", "evilpythonhosted.org", 443, False),
        ("git.example.com:8443", "git.example.com", 8443, True),
        ("git.example.com:8443", "git.example.com", 443, False),
        ("registry.npmjs.org", "registry.npmjs.org.evil.example", 443, False),
    ],
)
def test_a_grant_entry_covers_its_host_and_ports_only(
    pattern: str, host: str, port: int, expected: bool
) -> None:
    assert hosts.pattern_matches(pattern, host, port) is expected


def test_a_credential_goes_to_its_own_host_only() -> None:
    token = Credential("npm.pkg.example", "Authorization", "Bearer x")
    grant = EgressGrant(hosts=("*.example",), credentials=(token,))
    assert hosts.credential_for(grant, "npm.pkg.example", 443) is token
    assert hosts.credential_for(grant, "other.example", 443) is None
    assert "Bearer" not in repr(grant)


def test_a_refusal_names_the_host_and_how_to_allow_it() -> None:
    grant = EgressGrant(hosts=("registry.npmjs.org",))
    reason = hosts.not_granted(grant)
    assert reason == "not in this command's hosts: registry.npmjs.org"
    assert hosts.refusal_text("evil.example", 443, reason) == (
        "host evil.example:443 is not in this command's network grant (not in this "
        "command's hosts: registry.npmjs.org); a policy admin may add it to the policy's "
        "hosts for this command"
    )
    assert hosts.not_granted(EgressGrant(hosts=())) == "this command's network grant names no hosts"
    other = hosts.refusal_text(
        "x.example", 443, "x.example resolves to 10.0.0.1, a private address"
    )
    assert (
        other == "host x.example:443 was refused: x.example resolves to 10.0.0.1, a private address"
    )


# --- the ClientHello's SNI -------------------------------------------------------------


def client_hello(server_name: str | None) -> bytes:
    """The first bytes a real TLS client sends (Python's ssl, through memory BIOs)."""
    context = ssl.create_default_context()
    if server_name is None:
        context.check_hostname = False
    outgoing = ssl.MemoryBIO()
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=server_name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_the_sni_of_a_real_client_hello_is_read() -> None:
    hello = client_hello("registry.npmjs.org")
    assert tls_hello.complete(hello) and tls_hello.server_name(hello) == "registry.npmjs.org"
    assert not tls_hello.complete(hello[:3]) and not tls_hello.complete(hello[: len(hello) - 1])


def test_a_client_hello_split_across_records_is_read() -> None:
    hello = client_hello("a.example")
    body = hello[5:]
    split = b"".join(
        bytes([0x16, 3, 1]) + len(part).to_bytes(2, "big") + part for part in (body[:40], body[40:])
    )
    assert tls_hello.complete(split) and tls_hello.server_name(split) == "a.example"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"GET / HTTP/1.1\r\n\r\n", "did not start a TLS handshake"),
        (bytes([0x16, 3, 1, 0, 4, 2, 0, 0, 0]), "does not start with a ClientHello"),
        (bytes([0x16, 3, 1, 0, 8, 1, 0, 0, 4, 3, 3, 0, 0]), "malformed"),
        (bytes([0x16, 3, 1, 0, 4, 1, 0xFF, 0xFF, 0xFF]), "too large"),
    ],
)
def test_a_malformed_client_hello_is_refused_by_name(data: bytes, problem: str) -> None:
    with pytest.raises(tls_hello.HelloError, match=problem):
        tls_hello.complete(data)
        tls_hello.server_name(data)


def test_a_client_hello_without_sni_is_refused() -> None:
    with pytest.raises(tls_hello.HelloError, match="names no server"):
        tls_hello.server_name(client_hello(None))


# --- request heads ---------------------------------------------------------------------


def test_a_request_is_rewritten_for_the_server_with_the_credential() -> None:
    head = messages.parse_head(
        b"GET http://registry.test/pkg?x=1 HTTP/1.1\r\nHost: evil.test\r\n"
        b"Proxy-Connection: keep-alive\r\nAuthorization: Bearer mine\r\nAccept: */*\r\n\r\n"
    )
    host, port, path = messages.absolute_target(head)
    assert (host, port, path) == ("registry.test", 80, "/pkg?x=1")
    sent = messages.rewritten(head, path, "registry.test", ("Authorization", "Bearer real"))
    assert sent == (
        b"GET /pkg?x=1 HTTP/1.1\r\nHost: registry.test\r\nAccept: */*\r\n"
        b"Authorization: Bearer real\r\n\r\n"
    )


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"GET /relative HTTP/1.1\r\n\r\n", "absolute http:// URL"),
        (b"GET ftp://x/ HTTP/1.1\r\n\r\n", "absolute http:// URL"),
        (b"GET http://u:p@x/ HTTP/1.1\r\n\r\n", "credentials in the URL"),
        (b"BREW /pot HTCPCP/1.0\r\n\r\n", "not an HTTP/1.x request line"),
        (b"GET http://x/ HTTP/1.1\r\nno colon\r\n\r\n", "malformed header"),
    ],
)
def test_a_bad_request_is_refused_by_name(raw: bytes, problem: str) -> None:
    with pytest.raises(messages.BadRequest, match=problem):
        messages.absolute_target(messages.parse_head(raw))


def test_a_body_is_framed_one_way_only() -> None:
    def framing(headers: str) -> tuple[str, int]:
        return messages.body_framing(
            messages.parse_head(f"POST / HTTP/1.1\r\n{headers}\r\n".encode())
        )

    assert framing("Content-Length: 5\r\n") == ("length", 5)
    assert framing("Transfer-Encoding: chunked\r\n") == ("chunked", 0)
    assert framing("") == ("none", 0)
    with pytest.raises(messages.BadRequest, match="both"):
        framing("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n")
    with pytest.raises(messages.BadRequest, match="Content-Length"):
        framing("Content-Length: -1\r\n")


def test_connect_names_host_and_port() -> None:
    head = messages.parse_head(b"CONNECT registry.test:443 HTTP/1.1\r\n\r\n")
    assert messages.connect_authority(head) == ("registry.test", 443)
    with pytest.raises(messages.BadRequest, match="host:port"):
        messages.connect_authority(messages.parse_head(b"CONNECT registry.test HTTP/1.1\r\n\r\n"))


# --- the sandbox's side ----------------------------------------------------------------


def test_the_summary_names_each_refused_host_and_sums_up_the_reached_ones() -> None:
    reason = "not in this command's hosts: registry.test"
    text = sandbox.summary(
        [
            Connection("registry.test", 443, 100, 2048, True),
            Connection("registry.test", 443, 100, 3 * 1024 * 1024, True),
            Connection("evil.test", 443, 0, 0, False, reason),
            Connection("evil.test", 443, 0, 0, False, reason),
        ]
    )
    assert text.splitlines() == [
        f"network: refused evil.test:443 ({reason})",
        "network: to reach a refused host, a policy admin may add it to the policy's hosts "
        "for this command",
        "network: reached registry.test:443 (2 connections, 200 B sent, 3.0 MB received)",
    ]
    assert sandbox.summary([]) == ""


def test_every_tool_is_pointed_at_the_proxy_and_the_ca_only_with_a_credential() -> None:
    env = sandbox.environment(EgressGrant(hosts=("x.test",)), {"GIT_CONFIG_COUNT": "1"})
    assert env["HTTPS_PROXY"] == env["npm_config_https_proxy"] == "http://127.0.0.1:3128"
    assert (env["GIT_CONFIG_KEY_1"], env["GIT_CONFIG_COUNT"]) == ("http.proxy", "2")
    assert "SSL_CERT_FILE" not in env
    credential = Credential("x.test", "Authorization", "Bearer secret")
    env = sandbox.environment(EgressGrant(hosts=("x.test",), credentials=(credential,)), {})
    assert env["NODE_EXTRA_CA_CERTS"] == env["PIP_CERT"] == "/run/agentweb/egress-ca-bundle.pem"
    assert "secret" not in repr(env)


def test_the_test_allowance_takes_loopback_addresses_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.TEST_HOSTS_ENV, "registry.test=127.0.0.1:4873, PyPI.test=[::1]:8081")
    assert config.test_hosts() == {"registry.test": ("127.0.0.1", 4873), "pypi.test": ("::1", 8081)}
    monkeypatch.setenv(config.TEST_HOSTS_ENV, "registry.test=10.0.0.1:80")
    with pytest.raises(ValueError, match="loopback"):
        config.test_hosts()


def test_the_installation_ca_is_made_once_its_key_private(tmp_path: Path) -> None:
    authority = ca.Authority(tmp_path / "egress-ca")
    assert (tmp_path / "egress-ca" / "ca-key.pem").stat().st_mode & 0o777 == 0o600
    assert authority.bundle_file.read_bytes().endswith(authority.cert_file.read_bytes())
    again = ca.Authority(tmp_path / "egress-ca")
    assert again.cert_file.read_bytes() == authority.cert_file.read_bytes()
    client = ssl.create_default_context(cafile=str(authority.cert_file))
    server = authority.server_context("registry.test")
    to_client, to_server = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client.wrap_bio(to_client, to_server, server_hostname="registry.test")
    server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    served = server.wrap_bio(server_in, server_out, server_side=True)
    for _ in range(4):  # the handshake, carried between the two by hand
        for side in (tls, served):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        server_in.write(to_server.read())
        to_client.write(server_out.read())
    peer = tls.getpeercert()
    assert peer is not None and peer["subjectAltName"] == (("DNS", "registry.test"),)


# --- the proxy, in process -------------------------------------------------------------


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it received: the request line, the headers and the body."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        if self.headers.get("Transfer-Encoding") == "chunked":
            body = b""
            while size := int(self.rfile.readline().strip(), 16):
                body += self.rfile.read(size + 2)[:-2]
            self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        answer = f"{self.requestline}\n{self.headers}".encode() + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def echo_port() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def served(
    tmp_path: Path, echo_port: int, monkeypatch: pytest.MonkeyPatch
) -> Iterator[proxy.EgressProxy]:
    monkeypatch.setenv(config.TEST_HOSTS_ENV, f"echo.test=127.0.0.1:{echo_port}")
    credential = Credential("echo.test", "X-Token", "sekrit")
    grant = EgressGrant(hosts=("echo.test", "*.example", "1.2.3.4"), credentials=(credential,))
    with proxy.serving(grant, tmp_path / "egress.sock") as running:
        yield running


def exchange(served: proxy.EgressProxy, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(served.socket_path))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_plain_http_gets_the_credential_and_a_chunked_body_arrives_whole(
    served: proxy.EgressProxy,
) -> None:
    answer = exchange(
        served,
        b"POST http://echo.test/up HTTP/1.1\r\nHost: echo.test\r\nX-Token: forged\r\n"
        b"Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")
    assert b"POST /up HTTP/1.1" in answer and b"X-Token: sekrit" in answer
    assert b"forged" not in answer and answer.endswith(b"hello world")
    (conn,) = served.stop()
    assert (conn.host, conn.allowed, conn.reason) == (
        "echo.test",
        True,
        "credential for echo.test added",
    )
    assert conn.sent > 0 and conn.received == len(answer) - len(b"HTTP/1.1 100 Continue\r\n\r\n")


def test_an_ip_literal_a_private_address_and_an_unknown_host_are_refused(
    served: proxy.EgressProxy,
) -> None:
    literal = exchange(served, b"GET http://1.2.3.4/ HTTP/1.1\r\n\r\n")
    assert literal.startswith(b"HTTP/1.1 403 Forbidden") and b"by name only" in literal
    six = exchange(served, b"CONNECT [2606:4700::1111]:443 HTTP/1.1\r\n\r\n")
    assert six.startswith(b"HTTP/1.1 403 Forbidden") and b"by name only" in six
    nowhere = exchange(served, b"CONNECT localhost.example:443 HTTP/1.1\r\n\r\n")
    assert nowhere.startswith((b"HTTP/1.1 403", b"HTTP/1.1 502"))
    outside = exchange(served, b"CONNECT evil.test:443 HTTP/1.1\r\n\r\n")
    assert b"host evil.test:443 is not in this command's network grant" in outside
    smuggled = exchange(
        served,
        b"POST http://echo.test/ HTTP/1.1\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
    )
    assert smuggled.startswith(b"HTTP/1.1 400") and b"both Transfer-Encoding" in smuggled
    refused = [c for c in served.stop() if not c.allowed]
    hosts_refused = [c.host for c in refused]
    assert hosts_refused == ["1.2.3.4", "2606:4700::1111", "localhost.example", "evil.test"]


def test_a_tunnel_whose_sni_is_another_host_is_cut(served: proxy.EgressProxy) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(str(served.socket_path))
        sock.sendall(b"CONNECT echo.test:443 HTTP/1.1\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 200")
        sock.sendall(client_hello("evil.test"))
        try:
            ended = sock.recv(1024)
        except ConnectionResetError:
            ended = b""
        assert ended == b""
    (conn,) = served.stop()
    assert not conn.allowed and conn.reason == (
        "the TLS server name 'evil.test' is not the CONNECT host echo.test"
    )


def test_the_test_allowance_is_an_error_when_malformed_and_a_warning_in_production(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from tools_app.checks import check_egress

    settings.DEBUG = False
    monkeypatch.setenv(config.TEST_HOSTS_ENV, "registry.test=127.0.0.1:4873")
    assert [m.id for m in check_egress()] == ["agentweb.W020"]
    settings.DEBUG = True
    assert check_egress() == []
    monkeypatch.setenv(config.TEST_HOSTS_ENV, "registry.test=93.184.216.34:80")
    assert [m.id for m in check_egress()] == ["agentweb.E020"]
