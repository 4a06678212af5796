"""The installation's egress CA: the proxy terminates TLS for a credential's host only,
with a leaf certificate minted from it, so that it can add the credential to requests.

The CA is made once per installation under AGENTWEB_VAR (`egress-ca/`, its key 0600),
which no command sees; commands trust it through a bundle (the system's CAs and this one)
that is copied into their scratch and bound read-only. Leaf certificates live in memory.
"""

from __future__ import annotations

import datetime
import fcntl
import functools
import os
import socket
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_DAYS = 3650
LEAF_DAYS = 7
SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


class Authority:
    """The CA of one installation directory, and the TLS contexts of the hosts it serves."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.cert_file = directory / "ca.pem"
        self.bundle_file = directory / "bundle.pem"
        self._ca_cert, self._ca_key = _load_or_create(directory)
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def server_context(self, host: str) -> ssl.SSLContext:
        """A server-side TLS context presenting a leaf certificate for `host`."""
        with self._lock:
            if host not in self._contexts:
                self._contexts[host] = self._mint(host)
            return self._contexts[host]

    def _mint(self, host: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=LEAF_DAYS))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._ca_key, hashes.SHA256())
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.set_alpn_protocols(["http/1.1"])
        # ssl loads a chain only from a file: a private one, gone as soon as it is read.
        with tempfile.NamedTemporaryFile(dir=self.directory, suffix=".pem") as chain:
            chain.write(_key_pem(key) + cert.public_bytes(serialization.Encoding.PEM))
            chain.flush()
            context.load_cert_chain(chain.name)
        return context


@functools.cache
def authority(directory: Path) -> Authority:
    """The installation's CA (made on first use), one per process."""
    return Authority(directory)


def upstream_context(extra_ca: Path | None) -> ssl.SSLContext:
    """How the proxy checks the real server of a credential's host: the system's CAs,
    plus `extra_ca` (a test's CA)."""
    return _upstream_context(str(extra_ca) if extra_ca else "")


@functools.cache
def _upstream_context(extra_ca: str) -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.set_alpn_protocols(["http/1.1"])
    if extra_ca:
        context.load_verify_locations(cafile=extra_ca)
    return context


def _load_or_create(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(directory / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two workers starting at once make one CA
        if not (directory / "ca-key.pem").exists():
            _create(directory)
        key = serialization.load_pem_private_key((directory / "ca-key.pem").read_bytes(), None)
        cert = x509.load_pem_x509_certificate((directory / "ca.pem").read_bytes())
        if not (directory / "bundle.pem").exists():
            _write(directory / "bundle.pem", _system_bundle() + (directory / "ca.pem").read_bytes())
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{directory / 'ca-key.pem'} is not an EC key")
    return cert, key


def _create(directory: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"agentweb egress CA ({socket.gethostname()})")]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    _write(directory / "ca-key.pem", _key_pem(key))
    _write(directory / "ca.pem", cert.public_bytes(serialization.Encoding.PEM))


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes) -> None:
    """Written whole (a temp file renamed), mode 0600."""
    fd, temp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temp, path)


def _system_bundle() -> bytes:
    cafile = ssl.get_default_verify_paths().cafile or SYSTEM_BUNDLE
    try:
        return Path(cafile).read_bytes().rstrip(b"\n") + b"\n"
    except OSError:
        return b""
