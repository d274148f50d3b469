"""A real HTTP proxy on 127.0.0.1 that records what it was asked to reach, and a TLS test CA.

The proxy speaks what a corporate proxy speaks: absolute-form requests for plain HTTP
(``GET http://host:port/path``), forwarded on a fresh connection, and ``CONNECT host:port``
tunnels for HTTPS. Each request line is kept in ``seen``, so a test can say which requests went
through it and which did not.
"""

from __future__ import annotations

import datetime
import ipaddress
import select
import socket
import socketserver
import ssl
import threading
from pathlib import Path
from urllib.parse import urlsplit


class _ProxyHandler(socketserver.StreamRequestHandler):
    server: RecordingProxy._Server

    def handle(self) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(65536)
            if not chunk:
                return
            head += chunk
        header, _, rest = head.partition(b"\r\n\r\n")
        line = header.split(b"\r\n", 1)[0].decode("latin-1")
        self.server.seen.append(line)
        method, target, _version = line.split(" ", 2)
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            upstream = socket.create_connection((host, int(port)), timeout=5)
            self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self._pipe(upstream, rest)
            return
        parts = urlsplit(target)
        upstream = socket.create_connection((parts.hostname or "", parts.port or 80), timeout=5)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        first = f"{method} {path} HTTP/1.1".encode()
        lines = header.split(b"\r\n")[1:]
        lines = [h for h in lines if not h.lower().startswith(b"proxy-")]
        upstream.sendall(first + b"\r\n" + b"\r\n".join(lines) + b"\r\n\r\n" + rest)
        self._pipe(upstream, b"")

    def _pipe(self, upstream: socket.socket, pending: bytes) -> None:
        if pending:
            upstream.sendall(pending)
        sockets = [self.request, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [], 10)
                if not readable:
                    return
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is self.request else self.request).sendall(data)
        finally:
            upstream.close()


class RecordingProxy:
    """``with RecordingProxy() as proxy:`` then ``proxy.url`` and ``proxy.seen``."""

    class _Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True
        seen: list[str]

    def __init__(self) -> None:
        self._server = self._Server(("127.0.0.1", 0), _ProxyHandler)
        self._server.seen = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def seen(self) -> list[str]:
        return self._server.seen

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def make_ca_and_server_cert(folder: Path) -> tuple[Path, ssl.SSLContext]:
    """A throwaway CA (its PEM written to ``folder/ca.pem``) and a server context whose
    certificate it signed, for ``localhost`` and ``127.0.0.1``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "agent-tui test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
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
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = folder / "ca.pem"
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path = folder / "server.pem"
    cert_path.write_bytes(
        cert.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path)
    return ca_path, context
