"""The server name (SNI) a TLS ClientHello asks for, read from the bytes a client sends.

The proxy lets a CONNECT tunnel carry only a TLS session for the host it named: the
ClientHello's SNI must equal the CONNECT host, or a granted `registry.npmjs.org:443`
tunnel could carry a session to any server behind the same address (domain fronting).
Only the handshake's first message is parsed; nothing is decrypted.
"""

from __future__ import annotations

HANDSHAKE = 0x16
CLIENT_HELLO = 0x01
SERVER_NAME = 0x0000
HOST_NAME = 0x00
MAX_HELLO = 64 * 1024  # far above any real ClientHello; a larger one is refused


class HelloError(ValueError):
    """The bytes are not a ClientHello the proxy accepts (the message says why)."""


def complete(data: bytes) -> bool:
    """Whether `data` holds a whole ClientHello (it may span records). Raises HelloError
    for bytes that are not a TLS handshake, or a ClientHello too large to be real."""
    body, _ = _handshake_bytes(data)
    if len(body) < 4:
        if len(data) >= MAX_HELLO:
            raise HelloError("the TLS handshake is too large")
        return False
    length = int.from_bytes(body[1:4], "big") + 4
    if length > MAX_HELLO:
        raise HelloError(f"the ClientHello is too large ({length} bytes)")
    return len(body) >= length


def server_name(data: bytes) -> str:
    """The host name the ClientHello names; HelloError when it names none or is malformed."""
    body, _ = _handshake_bytes(data)
    if len(body) < 4 or body[0] != CLIENT_HELLO:
        raise HelloError("the TLS handshake does not start with a ClientHello")
    length = int.from_bytes(body[1:4], "big")
    if len(body) < 4 + length:
        raise HelloError("the ClientHello is cut short")
    reader = _Reader(body[4 : 4 + length])
    reader.take(2 + 32)  # version, random
    reader.take(reader.number(1))  # session id
    reader.take(reader.number(2))  # cipher suites
    reader.take(reader.number(1))  # compression methods
    if reader.left() == 0:
        raise HelloError("the ClientHello names no server (no SNI)")
    extensions = _Reader(reader.take(reader.number(2)))
    while extensions.left():
        kind, data_ = extensions.number(2), extensions.take(extensions.number(2))
        if kind == SERVER_NAME:
            return _host_name(_Reader(data_))
    raise HelloError("the ClientHello names no server (no SNI)")


def _host_name(ext: _Reader) -> str:
    names = _Reader(ext.take(ext.number(2)))
    while names.left():
        kind, name = names.number(1), names.take(names.number(2))
        if kind == HOST_NAME:
            try:
                return name.decode("ascii")
            except UnicodeDecodeError:
                raise HelloError("the ClientHello's server name is not ASCII") from None
    raise HelloError("the ClientHello names no server (no SNI)")


def _handshake_bytes(data: bytes) -> tuple[bytes, int]:
    """The handshake payload of the leading complete records, and where they end."""
    body = bytearray()
    pos = 0
    while pos + 5 <= len(data):
        if data[pos] != HANDSHAKE:
            raise HelloError("the connection did not start a TLS handshake")
        size = int.from_bytes(data[pos + 3 : pos + 5], "big")
        if pos + 5 + size > len(data):
            break
        body += data[pos + 5 : pos + 5 + size]
        pos += 5 + size
    if pos == 0 and data and data[0] != HANDSHAKE:
        raise HelloError("the connection did not start a TLS handshake")
    return bytes(body), pos


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def take(self, count: int) -> bytes:
        if count > self.left():
            raise HelloError("the ClientHello is malformed (a length runs past its end)")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")
