"""An http upstream is connected to at the addresses the SSRF guard checked, and only there.

The guard resolves the URL's host once, when the endpoint is built, and checks every
address it found. The `mcp` SDK's HTTP client would resolve the name again when it
connects, and a name rebound in between (DNS rebinding: a public address for the check,
127.0.0.1 or a cloud's metadata address for the connection) would reach whatever it
names by then. `PinnedTransport` connects to the checked addresses themselves, in turn
(the next only when a connection fails), as web_fetch does: the request keeps the name
in its `Host` header and as the TLS server name, so the server's certificate is checked
against the name. A request for any other host (the SDK follows redirects only within
the URL's origin) is refused, never resolved.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import httpx2


class PinnedTransport(httpx2.AsyncBaseTransport):
    """Sends every request for `url`'s host to `addresses`, never resolving the name."""

    def __init__(self, url: str, addresses: Sequence[str]) -> None:
        if not addresses:
            raise ValueError(f"no checked address to connect to for {url}")
        self.host = httpx2.URL(url).host
        self.addresses = tuple(addresses)
        self.inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.host != self.host:
            raise httpx2.ConnectError(
                f"{request.url.host} is not {self.host}, the host the SSRF guard checked",
                request=request,
            )
        failed: httpx2.ConnectError | None = None
        for address in self.addresses:
            try:
                return await self.inner.handle_async_request(_to(request, address))
            except httpx2.ConnectError as error:  # the next address, as a resolver's client
                failed = error
        raise failed or httpx2.ConnectError("no checked address", request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def pinned_client(
    url: str, addresses: Sequence[str], headers: dict[str, str]
) -> httpx2.AsyncClient:
    """The SDK's HTTP client (its timeouts: a server may hold a stream open for minutes),
    connecting only to `addresses`. A transport of its own also keeps the environment's
    proxy variables from routing around the check."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(
        headers=headers, timeout=timeout, transport=PinnedTransport(url, addresses)
    )


def _to(request: httpx2.Request, address: str) -> httpx2.Request:
    """`request` addressed to `address`; its `Host` header (set from the URL when it was
    built) stays the name, and so does the TLS server name."""
    extensions = dict(request.extensions)
    if request.url.scheme == "https" and not _is_address(request.url.host):
        extensions["sni_hostname"] = request.url.host
    return httpx2.Request(
        request.method,
        request.url.copy_with(host=address),
        headers=request.headers,
        stream=request.stream,
        extensions=extensions,
    )


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
