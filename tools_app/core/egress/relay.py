"""How the egress proxy moves bytes once it has let a connection through: a tunnel
spliced both ways, or HTTP/1.1 request by request (each head rewritten, each body passed
by its framing, each response passed whole), counting what goes each way.

One request at a time on a terminated TLS connection, so one thread: a TLS socket must
never be read and written by two threads at once.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from dataclasses import dataclass

from tools_app.core.egress import hosts, messages
from tools_app.core.egress.grant import Connection, Credential

CHUNK = 256 * 1024


@dataclass
class Tally:
    """One connection's record while it lasts."""

    host: str
    port: int
    sent: int = 0
    received: int = 0
    allowed: bool = False
    reason: str = ""

    def frozen(self) -> Connection:
        return Connection(self.host, self.port, self.sent, self.received, self.allowed, self.reason)


class Stream:
    """A socket read through a buffer: heads by line, bodies by count."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def fill(self) -> bool:
        data = self.sock.recv(CHUNK)
        self.buffer += data
        return bool(data)

    def head(self) -> bytes | None:
        """The next head through its blank line; None at a clean end of stream."""
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > messages.MAX_HEAD:
                raise messages.BadRequest("the request head is larger than 64 KB")
            if not self.fill():
                if self.buffer:
                    raise messages.BadRequest("the connection ended inside a request head")
                return None
        return self.take(end + 4)

    def line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            if len(self.buffer) > messages.MAX_HEAD or not self.fill():
                raise messages.BadRequest("a chunked body is malformed")
        return self.take(end + 2)

    def take(self, count: int) -> bytes:
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def some(self, limit: int) -> bytes:
        """Up to `limit` bytes: the buffer's, else straight from the socket (no copy)."""
        if self.buffer:
            return self.take(min(limit, len(self.buffer)))
        return self.sock.recv(min(limit, CHUNK))


def answer(sock: socket.socket, status: int, reason: str, text: str) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(messages.response(status, reason, text))


def splice(client: socket.socket, upstream: socket.socket, tally: Tally) -> None:
    """Bytes both ways until both sides are done; counted as sent and received."""
    back = threading.Thread(target=_copy, args=(upstream, client, tally, "received"), daemon=True)
    back.start()
    _copy(client, upstream, tally, "sent")
    back.join()


def _copy(source: socket.socket, sink: socket.socket, tally: Tally, field: str) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
            setattr(tally, field, getattr(tally, field) + len(data))
    except (OSError, ssl.SSLError):
        pass
    with contextlib.suppress(OSError, ssl.SSLError):
        sink.shutdown(socket.SHUT_WR)


def relay_requests(
    client: Stream,
    upstream: socket.socket,
    tally: Tally,
    authority: str,
    credential: Credential | None,
    *,
    first: messages.RequestHead | None,
) -> None:
    """One request at a time to one server: its head rewritten (origin-form, `Host`, the
    credential's header), its body passed by its framing, then its response passed
    whole. A plain-HTTP request for another server ends the connection (the client
    opens a new one, judged afresh). One request at a time, so one thread: a TLS
    socket must never be read and written by two threads at once."""
    extra = (credential.header, credential.value) if credential is not None else None
    server = Stream(upstream)
    head = first
    with contextlib.suppress(OSError, ssl.SSLError):
        while True:
            try:
                if head is None:
                    raw = client.head()
                    if raw is None:
                        return
                    head = messages.parse_head(raw)
                path = _path_for(head, authority)
                framing = messages.body_framing(head)
                out = messages.rewritten(head, path or "", authority, extra)
            except messages.BadRequest as exc:
                answer(client.sock, 400, "Bad Request", f"agentweb egress proxy: {exc}")
                return
            if path is None:
                return
            if (head.header("expect") or "").lower() == "100-continue":
                client.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            upstream.sendall(out)
            tally.sent += len(out)
            try:
                _relay_body(client, upstream, framing, tally, "sent")
            except messages.BadRequest:
                return  # a body cut short or malformed: the server gets no more
            try:
                if not _relay_response(server, client.sock, head, tally):
                    return
            except messages.BadRequest:
                return  # the server's answer is malformed: the connection ends
            if not messages.keeps_alive(head):
                return
            head = None


def _relay_response(
    server: Stream, client: socket.socket, request: messages.RequestHead, tally: Tally
) -> bool:
    """Pass the response to `request` (after any 1xx); whether the connection may go on."""
    while True:
        raw = server.head()
        if raw is None:
            return False
        status, head = messages.parse_response(raw)
        client.sendall(raw)
        tally.received += len(raw)
        if status == 101:
            return False  # a protocol switch is not relayed: the connection ends
        if status >= 200:
            break
    if request.method == "HEAD" or status in (204, 304):
        framing: tuple[str, int] = ("none", 0)
    else:
        framing = messages.body_framing(head)
        if framing == ("none", 0) and head.header("content-length") is None:
            _relay_until_closed(server, client, tally)
            return False
    _relay_body(server, client, framing, tally, "received")
    return messages.keeps_alive(head)


def _path_for(head: messages.RequestHead, authority: str) -> str | None:
    """The origin-form path to send, or None when the request is for another server."""
    if head.target.startswith("/"):
        return head.target
    host, port, path = messages.absolute_target(head)
    own = hosts.normalise(host) if port == 80 else f"{hosts.normalise(host)}:{port}"
    return path if own == authority else None


def _relay_body(
    source: Stream, sink: socket.socket, framing: tuple[str, int], tally: Tally, field: str
) -> None:
    kind, length = framing
    if kind == "length":
        _relay_count(source, sink, length, tally, field)
        return
    if kind != "chunked":
        return
    while True:
        line = source.line()
        _send(sink, line, tally, field)
        try:
            count = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise messages.BadRequest("a chunked body is malformed") from None
        if count == 0:
            break
        _relay_count(source, sink, count + 2, tally, field)
    while (line := source.line()) != b"\r\n":  # trailers, then the blank line
        _send(sink, line, tally, field)
    _send(sink, line, tally, field)


def _relay_count(source: Stream, sink: socket.socket, count: int, tally: Tally, field: str) -> None:
    while count > 0:
        data = source.some(min(count, CHUNK))
        if not data:
            raise messages.BadRequest("the connection ended inside a body")
        _send(sink, data, tally, field)
        count -= len(data)


def _relay_until_closed(source: Stream, sink: socket.socket, tally: Tally) -> None:
    while data := source.some(CHUNK):
        _send(sink, data, tally, "received")


def _send(sink: socket.socket, data: bytes, tally: Tally, field: str) -> None:
    sink.sendall(data)
    setattr(tally, field, getattr(tally, field) + len(data))
