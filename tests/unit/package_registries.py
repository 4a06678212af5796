"""Small real package registries on 127.0.0.1 for the egress proxy's tests: an npm
registry (package metadata and a .tgz), a PEP 503 simple index (a wheel), and an HTTPS
copy of the npm registry that answers only requests carrying a token. Each records the
requests it got. The packages are built here, in memory, when the server starts."""

from __future__ import annotations

import base64
import datetime
import hashlib
import io
import json
import ssl
import tarfile
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NPM_PACKAGE = "tiny-egress-pkg"
PY_PACKAGE = "tiny_egress_pkg"


@dataclass
class Registry:
    """One server: where it listens and what it received (path, Authorization)."""

    name: str
    port: int
    seen: list[tuple[str, str]] = field(default_factory=list)


def npm_tarball(name: str) -> bytes:
    manifest = json.dumps({"name": name, "version": "1.0.0", "main": "index.js"}).encode()
    files = {"package/package.json": manifest, "package/index.js": b"module.exports = 42;\n"}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def npm_metadata(name: str, base: str, tarball: bytes) -> bytes:
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    version = {
        "name": name,
        "version": "1.0.0",
        "dist": {
            "tarball": f"{base}/{name}/-/{name}-1.0.0.tgz",
            "shasum": hashlib.sha1(tarball).hexdigest(),
            "integrity": integrity,
        },
    }
    doc = {"name": name, "dist-tags": {"latest": "1.0.0"}, "versions": {"1.0.0": version}}
    return json.dumps(doc).encode()


def wheel(name: str) -> tuple[str, bytes]:
    """A minimal pure-Python wheel: the module and a dist-info pip accepts."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{dist}/RECORD"] = ("\n".join([*record, f"{dist}/RECORD,,"]) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return f"{name}-1.0-py3-none-any.whl", buffer.getvalue()


def _content_type(path: str) -> str:
    if path.startswith("/simple/"):
        return "text/html"
    if path.endswith((".tgz", ".whl")):
        return "application/octet-stream"
    return "application/json"


def _serve(
    registry: Registry, routes: dict[str, bytes], token: str | None, tls: ssl.SSLContext | None
) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization", "")
            registry.seen.append((self.path.split("?", 1)[0], auth))
            body = routes.get(self.path.split("?", 1)[0])
            status = 200 if body is not None else 404
            if token is not None and auth != f"Bearer {token}":
                status, body = 401, b'{"error": "a token is required"}'
            body = body if body is not None else b"not found\n"
            self.send_response(status)
            self.send_header("Content-Type", _content_type(self.path))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    registry.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def npm_registry(
    name: str, scheme: str, token: str | None = None, tls: ssl.SSLContext | None = None
) -> tuple[Registry, ThreadingHTTPServer]:
    registry = Registry(name, 0)
    tarball = npm_tarball(NPM_PACKAGE)
    base = f"{scheme}://{name}"
    routes = {
        f"/{NPM_PACKAGE}": npm_metadata(NPM_PACKAGE, base, tarball),
        f"/{NPM_PACKAGE}/-/{NPM_PACKAGE}-1.0.0.tgz": tarball,
    }
    return registry, _serve(registry, routes, token, tls)


def simple_index(name: str) -> tuple[Registry, ThreadingHTTPServer]:
    registry = Registry(name, 0)
    filename, data = wheel(PY_PACKAGE)
    digest = hashlib.sha256(data).hexdigest()
    project = PY_PACKAGE.replace("_", "-")
    page = f'<a href="/packages/{filename}#sha256={digest}">{filename}</a>\n'
    routes = {f"/simple/{project}/": page.encode(), f"/packages/{filename}": data}
    return registry, _serve(registry, routes, None, None)


def test_ca(directory: Path, host: str) -> tuple[Path, ssl.SSLContext]:
    """A CA (its certificate written to `directory/test-ca.pem`) and a server context
    for `host` signed by it: the real server behind the proxy's TLS."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "egress test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_file = directory / "test-ca.pem"
    ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    chain = directory / "server.pem"
    chain.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        + cert.public_bytes(serialization.Encoding.PEM)
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(chain)
    return ca_file, context
