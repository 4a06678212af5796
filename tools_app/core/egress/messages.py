"""HTTP/1.1 request heads as the egress proxy reads and rewrites them.

Only heads are parsed: a request's line and headers, and how long its body is. Bodies
and every response pass through as bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Headers meant for the proxy, or that a rewritten request must not carry twice. The
# proxy answers `Expect: 100-continue` itself (it passes one request at a time).
_DROPPED = frozenset({"proxy-connection", "proxy-authorization", "host", "expect"})


class BadRequest(ValueError):
    """A request the proxy cannot forward (the message says why)."""


@dataclass(frozen=True)
class RequestHead:
    method: str
    target: str
    version: str
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The last value of a header (names compare case-insensitively)."""
        found = [value for key, value in self.headers if key.lower() == name.lower()]
        return found[-1] if found else None


def parse_head(raw: bytes) -> RequestHead:
    """A request head (up to and including its blank line); BadRequest names the fault."""
    first, headers = _lines(raw)
    parts = first.split(" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or not parts[2].startswith("HTTP/1."):
        raise BadRequest(f"not an HTTP/1.x request line: {first[:200]!r}")
    return RequestHead(parts[0].upper(), parts[1], parts[2], headers)


def parse_response(raw: bytes) -> tuple[int, RequestHead]:
    """A response head's status, and its headers (as a head whose target is the reason)."""
    first, headers = _lines(raw)
    version, _, rest = first.partition(" ")
    status, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not (status.isdigit() and len(status) == 3):
        raise BadRequest(f"not an HTTP/1.x status line: {first[:200]!r}")
    return int(status), RequestHead("", reason, version, headers)


def _lines(raw: bytes) -> tuple[str, tuple[tuple[str, str], ...]]:
    lines = raw.decode("latin-1").split("\r\n")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not _TOKEN.match(name):
            raise BadRequest(f"a malformed header line: {line[:200]!r}")
        headers.append((name, value.strip()))
    return lines[0], tuple(headers)


def keeps_alive(head: RequestHead) -> bool:
    """Whether the connection stays open after this message (HTTP/1.1's default)."""
    tokens = {t.strip().lower() for t in (head.header("connection") or "").split(",")}
    if head.version == "HTTP/1.0":
        return "keep-alive" in tokens
    return "close" not in tokens


def connect_authority(head: RequestHead) -> tuple[str, int]:
    """The host and port of `CONNECT host:port`."""
    host, sep, port = head.target.rpartition(":")
    if not sep or not port.isdigit() or not host or not 0 < int(port) < 65536:
        raise BadRequest(f"CONNECT needs host:port, not {head.target[:200]!r}")
    return host.strip("[]"), int(port)


def absolute_target(head: RequestHead) -> tuple[str, int, str]:
    """Host, port and origin-form path of an `http://host[:port]/path` request target."""
    parts = urlsplit(head.target)
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise BadRequest(
            "a request through the proxy names an absolute http:// URL "
            f"(or uses CONNECT for https), not {head.target[:200]!r}"
        )
    if "@" in parts.netloc:
        raise BadRequest("credentials in the URL (user:pass@) are refused")
    try:
        port = parts.port or 80
    except ValueError:
        raise BadRequest(f"an invalid port in {head.target[:200]!r}") from None
    path = parts.path or "/"
    return parts.hostname, port, path + (f"?{parts.query}" if parts.query else "")


def body_framing(head: RequestHead) -> tuple[str, int]:
    """How a message's body is delimited: ("chunked", 0), ("length", n) or ("none", 0).

    A request with both, or with a transfer coding other than chunked, is refused: the
    proxy and the server could read its end differently (request smuggling)."""
    coding = head.header("transfer-encoding")
    length = head.header("content-length")
    if coding is not None:
        if length is not None:
            raise BadRequest("a request with both Transfer-Encoding and Content-Length")
        if coding.lower() != "chunked":
            raise BadRequest(f"an unsupported Transfer-Encoding: {coding[:100]!r}")
        return "chunked", 0
    if length is None:
        return "none", 0
    if not length.isdigit():
        raise BadRequest(f"an invalid Content-Length: {length[:100]!r}")
    return "length", int(length)


def rewritten(head: RequestHead, path: str, authority: str, extra: tuple[str, str] | None) -> bytes:
    """The head as sent upstream: origin-form `path`, `Host: authority`, the proxy's own
    headers dropped, and `extra` (a credential's header) set in place of any the client
    sent under that name."""
    skip = set(_DROPPED)
    if extra is not None:
        if any(char in extra[1] for char in "\r\n\0"):
            raise BadRequest("the credential's value holds a line break; it was not sent")
        skip.add(extra[0].lower())
    lines = [f"{head.method} {path} {head.version}", f"Host: {authority}"]
    lines += [f"{name}: {value}" for name, value in head.headers if name.lower() not in skip]
    if extra is not None:
        lines.append(f"{extra[0]}: {extra[1]}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def response(status: int, reason: str, body: str) -> bytes:
    """A complete short answer from the proxy itself (a refusal, a bad gateway)."""
    data = (body.rstrip("\n") + "\n").encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\nX-Agentweb-Egress: refused\r\n\r\n"
    )
    return head.encode("latin-1") + data
