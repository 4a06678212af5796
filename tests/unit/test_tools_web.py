"""web_fetch against real HTTP servers on 127.0.0.1 (and 127.0.0.2), never a public address."""

from __future__ import annotations

import functools
import json
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from tools_app.core.tools.base import SandboxOptions, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.netguard import check_target, host_allowed, parse_target
from tools_app.core.tools.web import (
    WEB_FETCH_DESCRIPTION,
    WebFetchArgs,
    web_fetch,
    web_fetch_with,
)

CTX = ToolContext(workspace=Path("."))
BOMB_BYTES = 200 * 1024 * 1024
SELF_SIGNED = [
    "openssl",
    "req",
    "-x509",
    "-nodes",
    "-days",
    "1",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-subj",
    "/CN=localhost",
    "-addext",
    "subjectAltName=DNS:localhost",
]


@functools.cache
def gzip_bomb() -> bytes:
    """200 MB of zeros, gzipped (about 200 KB), built a megabyte at a time."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    parts = [compressor.compress(zeros) for _ in range(BOMB_BYTES // len(zeros))]
    return b"".join(parts) + compressor.flush()


class Server(ThreadingHTTPServer):
    """A test server that records every request it receives."""

    def __init__(self, host: str) -> None:
        super().__init__((host, 0), Handler)
        self.host = host
        self.port: int = self.server_address[1]
        self.hits: list[tuple[str, str]] = []
        self.stopping = threading.Event()

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"


class Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits.append((self.command, self.path))
        parts = urlsplit(self.path)
        route = getattr(self, "route_" + parts.path.strip("/").split("/")[0].replace("-", "_"))
        route(parts.path, parse_qs(parts.query))

    do_POST = do_PUT = do_HEAD = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    def send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def redirect(self, status: int, location: str) -> None:
        self.send(status, b"moved", "text/plain", Location=location)

    def route_text(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, b"hello, agent\n", "text/plain; charset=utf-8")

    def route_latin1(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")

    def route_json(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, b'{"name":"agentweb","tags":[1,2]}', "application/json")

    def route_untyped_json(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, b'{"a":{"b":true}}', "text/plain")

    def route_large(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, b"x" * 200_000, "text/plain")

    def route_binary(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, b"\x89PNG\r\n\x1a\n" + bytes(992), "image/png")

    def route_missing(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(404, b"no such page", "text/plain")

    def route_deflate(self, path: str, query: dict[str, list[str]]) -> None:
        raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        body = raw.compress(b"raw deflate works") + raw.flush()
        self.send(200, body, "text/plain", Content_Encoding="deflate")

    def route_chain(self, path: str, query: dict[str, list[str]]) -> None:
        left = int(path.rsplit("/", 1)[1])
        if left == 0:
            self.send(200, b"end of chain", "text/plain")
        elif left % 2:
            self.redirect(302, self.server.url(f"/chain/{left - 1}"))
        else:
            self.redirect(301, f"{left - 1}")

    def route_to(self, path: str, query: dict[str, list[str]]) -> None:
        self.redirect(int(query.get("status", ["302"])[0]), query["url"][0])

    def route_cookie(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(302, b"", "text/plain", Set_Cookie="session=secret; Path=/", Location="/echo")

    def route_echo(self, path: str, query: dict[str, list[str]]) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        echo = {
            "method": self.command,
            "body": self.rfile.read(length).decode(),
            "headers": {name.lower(): value for name, value in self.headers.items()},
        }
        self.send(200, json.dumps(echo).encode(), "application/json")

    def route_bomb(self, path: str, query: dict[str, list[str]]) -> None:
        self.send(200, gzip_bomb(), "text/plain", Content_Encoding="gzip")

    def route_drip(self, path: str, query: dict[str, list[str]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        for _ in range(120):
            if self.server.stopping.wait(0.5):
                return
            self.wfile.write(b".")
            self.wfile.flush()

    def route_silent(self, path: str, query: dict[str, list[str]]) -> None:
        self.server.stopping.wait(60)


def start_server(host: str) -> Iterator[Server]:
    server = Server(host)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    yield from start_server("127.0.0.1")


@pytest.fixture
def other_server() -> Iterator[Server]:
    """A second server on another loopback address, which no test allows."""
    yield from start_server("127.0.0.2")


def fetch(
    url: str, allow: tuple[str, ...] = ("127.0.0.1",), deadline: float = 30, **kw: Any
) -> str:
    return web_fetch_with(allow, deadline=deadline)(CTX, WebFetchArgs(url=url, **kw))


def echoed(result: str) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(result.split("\n\n", 1)[1])
    return parsed


# --- responses -----------------------------------------------------------------------


def test_it_returns_the_status_line_content_type_and_text(server: Server) -> None:
    result = fetch(server.url("/text"))
    assert result == "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\nhello, agent\n"


def test_it_decodes_the_declared_charset(server: Server) -> None:
    assert fetch(server.url("/latin1")).endswith("\n\ncafé")


def test_it_pretty_prints_json_declared_or_not(server: Server) -> None:
    assert fetch(server.url("/json")).endswith(
        '\n\n{\n  "name": "agentweb",\n  "tags": [\n    1,\n    2\n  ]\n}'
    )
    assert fetch(server.url("/untyped-json")).endswith('\n\n{\n  "a": {\n    "b": true\n  }\n}')


def test_it_truncates_a_long_body_with_a_note(server: Server) -> None:
    result = fetch(server.url("/large"))
    assert result.endswith(
        "\n[truncated: showing 50000 of 200000 characters; raise max_length to read more]"
    )
    assert "x" * 50_000 in result
    assert "x" * 50_001 not in result
    assert "\n\nxxxxxxxxxx\n[truncated: showing 10 of" in fetch(server.url("/large"), max_length=10)


def test_it_summarises_binary_content_by_size(server: Server) -> None:
    result = fetch(server.url("/binary"))
    assert result.endswith("[binary content (image/png), 1000 bytes; web_fetch shows text only]")


def test_it_returns_an_error_status_as_a_result(server: Server) -> None:
    assert fetch(server.url("/missing")).startswith("HTTP 404 Not Found\n")


def test_it_inflates_raw_deflate(server: Server) -> None:
    assert fetch(server.url("/deflate")).endswith("\n\nraw deflate works")


def test_head_has_no_body(server: Server) -> None:
    assert fetch(server.url("/text"), method="head").endswith("\n\n(empty body)")
    assert server.hits == [("HEAD", "/text")]


# --- requests ------------------------------------------------------------------------


def test_it_sends_a_post_body(server: Server) -> None:
    echo = echoed(fetch(server.url("/echo"), method="POST", body="hello"))
    assert (echo["method"], echo["body"]) == ("POST", "hello")


def test_it_drops_hop_by_hop_and_host_headers_and_keeps_custom_ones(server: Server) -> None:
    headers = {
        "Host": "evil.example",
        "Connection": "close, X-Nominated",
        "X-Nominated": "1",
        "Keep-Alive": "timeout=5",
        "Transfer-Encoding": "chunked",
        "Content-Length": "999",
        "Proxy-Authorization": "Basic x",
        "Upgrade": "websocket",
        "X-Custom": "kept",
    }
    echo = echoed(fetch(server.url("/echo"), headers=headers, body="abc", method="PUT"))
    sent = echo["headers"]
    assert sent["host"] == f"127.0.0.1:{server.port}"
    assert sent["x-custom"] == "kept"
    assert sent["content-length"] == "3"
    assert sent.get("connection") != "close, X-Nominated"
    for dropped in ("x-nominated", "keep-alive", "transfer-encoding", "proxy-authorization"):
        assert dropped not in sent
    assert "upgrade" not in sent
    assert echo["body"] == "abc"


def test_it_keeps_no_cookies(server: Server) -> None:
    echo = echoed(fetch(server.url("/cookie")))
    assert "cookie" not in echo["headers"]


# --- redirects -----------------------------------------------------------------------


def test_it_follows_five_relative_and_absolute_redirects(server: Server) -> None:
    result = fetch(server.url("/chain/5"))
    assert result.startswith(f"HTTP 200 OK\nURL: {server.url('/chain/0')}\n")
    assert result.endswith("\n\nend of chain")
    assert [path for _, path in server.hits] == [f"/chain/{n}" for n in range(5, -1, -1)]


def test_it_stops_after_five_redirects(server: Server) -> None:
    with pytest.raises(ToolError, match="stopped after 5 redirects"):
        fetch(server.url("/chain/6"))
    assert len(server.hits) == 6


def test_303_turns_a_post_into_a_get_without_body(server: Server) -> None:
    url = server.url("/to?status=303&url=/echo")
    echo = echoed(fetch(url, method="POST", body="x", headers={"Content-Type": "text/plain"}))
    assert (echo["method"], echo["body"]) == ("GET", "")
    assert "content-type" not in echo["headers"]


def test_302_after_post_is_a_get_and_307_keeps_the_post(server: Server) -> None:
    assert echoed(fetch(server.url("/to?url=/echo"), method="POST", body="x"))["method"] == "GET"
    echo = echoed(fetch(server.url("/to?status=307&url=/echo"), method="POST", body="x"))
    assert (echo["method"], echo["body"]) == ("POST", "x")


def test_a_redirect_to_a_host_not_allowed_never_reaches_it(
    server: Server, other_server: Server
) -> None:
    with pytest.raises(ToolError) as raised:
        fetch(server.url(f"/to?url={other_server.url('/text')}"))
    assert "redirected to http://127.0.0.2:" in str(raised.value)
    assert "127.0.0.2 is a loopback address" in str(raised.value)
    assert other_server.hits == []


def test_a_redirect_to_an_unnamed_spelling_of_the_same_host_is_refused(server: Server) -> None:
    port = server.port
    with pytest.raises(
        ToolError, match=re.escape("localhost resolves to 127.0.0.1, a loopback address")
    ):
        fetch(server.url(f"/to?url=http://localhost:{port}/text"))
    assert server.hits == [("GET", f"/to?url=http://localhost:{port}/text")]


def test_a_cross_origin_redirect_drops_credentials(server: Server) -> None:
    for other in start_server("127.0.0.1"):
        headers = {"Authorization": "Bearer t", "Cookie": "a=1", "X-Custom": "kept"}
        echo = echoed(fetch(server.url(f"/to?url={other.url('/echo')}"), headers=headers))
        assert echo["headers"]["x-custom"] == "kept"
        assert "authorization" not in echo["headers"]
        assert "cookie" not in echo["headers"]


def test_a_redirect_to_another_scheme_is_refused(server: Server) -> None:
    with pytest.raises(ToolError, match="only http:// and https://"):
        fetch(server.url("/to?url=file:///etc/passwd"))


# --- limits --------------------------------------------------------------------------


def test_a_gzip_bomb_is_cut_at_the_byte_cap_quickly_and_in_bounded_memory(
    server: Server,
) -> None:
    gzip_bomb()
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = fetch(server.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
        print(f"peak traced memory: {peak / 2**20:.1f} MB")
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < 5
    assert peak < 30 * 1024 * 1024
    assert result.endswith(
        "[truncated: showing 50000 of more than 1048576 characters; raise max_length to read more]"
    )


def test_a_slow_drip_stops_at_the_deadline(server: Server) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"timed out after 2 s fetching .*bytes of the body"):
        fetch(server.url("/drip"), deadline=2)
    assert 1.9 < time.monotonic() - started < 4


def test_a_server_that_never_answers_times_out(server: Server) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out"):
        fetch(server.url("/silent"), deadline=1)
    assert time.monotonic() - started < 3


def test_a_closed_port_is_reported_as_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ToolError, match="connection refused"):
        fetch(f"http://127.0.0.1:{port}/")


def test_an_unknown_host_is_reported_as_a_dns_failure() -> None:
    with pytest.raises(
        ToolError, match=re.escape("could not resolve the host nonexistent.invalid")
    ):
        fetch("http://nonexistent.invalid/", allow=())


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[Server, list[str | None]]]:
    """An HTTPS server with a self-signed certificate for localhost; it records the SNI."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [*SELF_SIGNED, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str | None] = []
    context.sni_callback = lambda _socket, name, _context: names.append(name)
    for server in start_server("127.0.0.1"):
        server.socket = context.wrap_socket(server.socket, server_side=True)
        yield server, names


def test_https_connects_to_the_checked_address_with_sni_and_verifies_the_certificate(
    tls_server: tuple[Server, list[str | None]],
) -> None:
    server, names = tls_server
    url = f"https://localhost:{server.port}/text"
    with pytest.raises(
        ToolError, match=r"TLS certificate of https://localhost:\d+/text did not verify"
    ):
        fetch(url, allow=("localhost",))
    assert names == ["localhost"]
    assert server.hits == []


# --- reach ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "127.0.0.1",
        "localhost",
        "2130706433",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.1",
        "[::ffff:127.0.0.1]",
        "[::1]",
    ],
)
def test_a_loopback_target_not_allowed_is_never_contacted(server: Server, spelling: str) -> None:
    url = f"http://{spelling}:{server.port}/text"
    with pytest.raises(ToolError, match="web_allow_hosts names the host"):
        fetch(url, allow=())
    assert check_target(url, ()) is not None
    assert server.hits == []


def test_an_allowed_host_name_is_reached(server: Server) -> None:
    url = f"http://LocalHost:{server.port}/text"
    assert fetch(url, allow=("localhost",)).endswith("hello, agent\n")


def test_web_fetch_reads_the_allow_list_from_the_sandbox_options(server: Server) -> None:
    args = WebFetchArgs(url=server.url("/text"))
    with pytest.raises(ToolError, match=re.escape("127.0.0.1 is a loopback address")):
        web_fetch(CTX, args)
    allowed = ToolContext(
        workspace=Path("."), sandbox=SandboxOptions(web_allow_hosts=("127.0.0.1",))
    )
    assert web_fetch(allowed, args).endswith("hello, agent\n")
    assert server.hits == [("GET", "/text")]


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("10.0.0.1", "a private address"),
        ("172.16.0.1", "a private address"),
        ("192.168.1.1", "a private address"),
        ("100.64.0.1", "a carrier-grade NAT address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("[fd00:ec2::254]", "a cloud metadata address"),
        ("169.254.1.1", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("255.255.255.255", "a broadcast address"),
        ("240.0.0.1", "a reserved address"),
        ("[::]", "an unspecified address"),
        ("[fe80::1]", "a link-local address"),
        ("[fc00::1]", "a unique-local (private) address"),
        ("[fec0::1]", "a site-local address"),
        ("[64:ff9b::7f00:1]", "a loopback address (it embeds 127.0.0.1)"),
        ("[2002:7f00:1::]", "a loopback address (it embeds 127.0.0.1)"),
        ("[2001::1]", "a Teredo tunnel address"),
        ("[::ffff:10.0.0.1]", "a private address (it embeds 10.0.0.1)"),
        ("[::127.0.0.1]", "a deprecated IPv4-compatible address"),
        ("[ff02::1]", "a multicast address"),
    ],
)
def test_check_target_refuses_addresses_that_are_not_public(address: str, problem: str) -> None:
    reason = check_target(f"http://{address}/", ())
    assert reason is not None
    assert f" is {problem}" in reason
    assert reason.endswith("unless the policy's web_allow_hosts names the host")


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "[2001:4860:4860::8888]", "[64:ff9b::808:808]"]
)
def test_check_target_allows_public_addresses(address: str) -> None:
    assert check_target(f"https://{address}:8443/path", ()) is None


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/", "only http:// and https://"),
        ("file:///etc/passwd", "only http:// and https://"),
        ("http://user:pass@example.com/", "credentials in the URL"),
        ("http://@127.0.0.1/", "credentials in the URL"),
        ("http:///path", "has no host"),
        ("http://example.com:99999/", "invalid port"),
        ("http://exa mple.com/", "spaces or control characters"),
        ("http://127.0.0.1\n/", "spaces or control characters"),
        ("http://127.0.0.1%2f/", "not a valid host name"),
    ],
)
def test_check_target_refuses_malformed_urls(url: str, reason: str) -> None:
    assert reason in (check_target(url, ("example.com", "127.0.0.1")) or "")


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://LOCALHOST:1/", ["localhost"]),
        ("http://localhost./", ["LocalHost"]),
        ("http://api.internal.example/", ["*.internal.example"]),
        ("http://a.b.internal.example/", ["*.internal.example"]),
        ("http://10.0.0.1/", ["10.0.0.1"]),
        ("http://0x0a.1/", ["10.0.0.1"]),
        ("http://[::1]:8000/", ["[::1]"]),
    ],
)
def test_check_target_allows_hosts_the_policy_names(url: str, allow: list[str]) -> None:
    assert check_target(url, allow) is None


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://internal.example/", ["*.internal.example"]),
        ("http://notinternal.example/", ["*.internal.example"]),
        ("http://internal.example.evil/", ["*.internal.example"]),
        ("http://api.internal.example/", ["internal.example"]),
        ("http://127.0.0.2/", ["127.0.0.1"]),
        ("http://localhost/", ["127.0.0.1"]),
        ("http://127.0.0.1/", ["*.0.0.1"]),
    ],
)
def test_allowed_names_match_exactly_or_by_subdomain_wildcard(url: str, allow: list[str]) -> None:
    assert not host_allowed(parse_target(url), allow)


# --- arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"url": "ftp://example.com/"}, "only http:// and https://"),
        ({"url": "file:///etc/passwd"}, "only http:// and https://"),
        ({"url": "http://u:p@example.com/"}, "credentials in the URL"),
        ({"url": "http://example.com/", "method": "TRACE"}, "method 'TRACE' is not supported"),
        ({"url": "http://example.com/", "max_length": 0}, "greater than or equal to 1"),
        ({"url": "http://example.com/", "headers": {"X-A": "1\r\nX-B: 2"}}, "line break"),
        ({"url": "http://example.com/", "headers": {"X-A\r\nX-B": "1"}}, "not a valid HTTP"),
        ({"url": "http://example.com/", "headers": {"X-A": 1}}, "string"),
        ({"url": "http://example.com/", "timeout": 3}, "Extra inputs"),
    ],
)
def test_bad_arguments_are_refused_by_validation(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        WebFetchArgs.model_validate(args)


def test_the_method_is_case_insensitive() -> None:
    assert WebFetchArgs(url="https://example.com/", method="patch").method == "PATCH"


def test_the_schema_names_only_url_as_required_and_has_no_null_defaults() -> None:
    schema = WebFetchArgs.model_json_schema()
    assert schema["required"] == ["url"]
    assert set(schema["properties"]) == {"url", "method", "headers", "body", "max_length"}
    assert "default" not in schema["properties"]["headers"]
    assert "default" not in schema["properties"]["body"]
    assert schema["properties"]["max_length"]["default"] == 50_000
    assert "public addresses" in WEB_FETCH_DESCRIPTION
