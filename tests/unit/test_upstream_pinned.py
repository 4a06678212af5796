"""An http upstream's client connects to the checked addresses only: over TLS the name is
still the server name the certificate is checked against, and the `Host` the server
reads. `upstream.test` resolves nowhere here, so a client that looked it up would fail;
the server listens on 127.0.0.1 with a certificate for that name from a test CA."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.unit.package_registries import test_ca as make_test_ca
from tools_app.core.upstreams.pinned import pinned_client

NAME = "upstream.test"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path, list[str]]]:
    """HTTPS on 127.0.0.1 as `upstream.test`: its port, the CA's file, the Hosts it read."""
    ca_file, context = make_test_ca(tmp_path_factory.mktemp("pinned-tls"), NAME)
    hosts: list[str] = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hosts.append(self.headers["Host"])
            self.send_response(200)
            self.send_header("Content-Length", "6")
            self.end_headers()
            self.wfile.write(b"pinned")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server.server_address[1], ca_file, hosts
    server.shutdown()


def get(url: str, addresses: list[str]) -> httpx2.Response:
    async def fetch() -> httpx2.Response:
        async with pinned_client(url, addresses, {}) as client:
            return await client.get(url)

    return anyio.run(fetch)


def test_tls_to_the_pinned_address_checks_the_certificate_against_the_name(
    tls_server: tuple[int, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, ca_file, hosts = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    url = f"https://{NAME}:{port}/mcp"
    answer = get(url, ["127.0.0.2", "127.0.0.1"])  # nothing on .2: the next address
    assert (answer.status_code, answer.text) == (200, "pinned")
    assert hosts == [f"{NAME}:{port}"]
    assert str(answer.request.url) == url  # the client still sees the name
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        get(f"https://elsewhere.test:{port}/mcp", ["127.0.0.1"])  # a name the cert is not for
