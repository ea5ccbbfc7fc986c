"""A refused TLS handshake tells the client why with OpenSSL's alert, as a Java
broker does, on asyncio's loop and on uvloop: an untrusted client certificate
is `unknown ca`, a missing one `certificate required` (TLS 1.3) or
`handshake failure` (TLS 1.2), where a bare close used to leave the client
guessing."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvloop

from kgroups.network.tls_server import start_tls_server

from broker_thread import BrokerThread
from certificates import Authority, Issued


class Pki:
    def __init__(self, directory: Path) -> None:
        self.ca = Authority(directory / "ca")
        self.server = self.ca.server()
        self.client = self.ca.client(cn="alice")
        self.stranger = Authority(directory / "other", name="Other CA").client(cn="mallory")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def _handshake_error(port: int, pki: Pki, version: ssl.TLSVersion, cert: Issued | None) -> str:
    """What a Python client sees: the error of its handshake or of its first read."""
    context = ssl.create_default_context(cafile=str(pki.ca.cert))
    context.minimum_version = context.maximum_version = version
    if cert is not None:
        context.load_cert_chain(str(cert.cert), str(cert.key))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            # TLS 1.3 clients finish before the server checks their certificate.
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"\x00\x00\x00\x00")
                return f"read {tls.recv(16)!r}"
        except ssl.SSLError as e:
            return str(e)


CASES = [
    (ssl.TLSVersion.TLSv1_3, "stranger", "TLSV1_ALERT_UNKNOWN_CA"),
    (ssl.TLSVersion.TLSv1_2, "stranger", "TLSV1_ALERT_UNKNOWN_CA"),
    (ssl.TLSVersion.TLSv1_3, None, "TLSV13_ALERT_CERTIFICATE_REQUIRED"),
    (ssl.TLSVersion.TLSv1_2, None, "SSLV3_ALERT_HANDSHAKE_FAILURE"),
]
IDS = ["tls1.3-untrusted", "tls1.2-untrusted", "tls1.3-none", "tls1.2-none"]


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    b = BrokerThread(
        tmp_path_factory.mktemp("data"),
        listeners="SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location=str(pki.server.both),
        ssl_truststore_type="PEM",
        ssl_truststore_location=str(pki.ca.cert),
        ssl_client_auth="required",
    ).start()
    try:
        assert b.broker is not None
        yield b.broker.listener_port("SSL")
    finally:
        b.stop()


@pytest.mark.parametrize(("version", "cert", "alert"), CASES, ids=IDS)
def test_the_broker_sends_the_alert(
    broker: int, pki: Pki, version: ssl.TLSVersion, cert: str | None, alert: str
) -> None:
    assert alert in _handshake_error(broker, pki, version, getattr(pki, cert or "", None))


def test_a_trusted_client_is_still_served(broker: int, pki: Pki) -> None:
    # ApiVersions v0 from a client with a trusted certificate gets its answer.
    request = b"\x00\x12\x00\x00\x00\x00\x00\x07\x00\x00"
    context = ssl.create_default_context(cafile=str(pki.ca.cert))
    context.load_cert_chain(str(pki.client.cert), str(pki.client.key))
    with (
        socket.create_connection(("127.0.0.1", broker), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(len(request).to_bytes(4, "big") + request)
        assert tls.recv(8)[4:8] == b"\x00\x00\x00\x07"  # the correlation id


def _serve_on(new_loop: Callable[[], asyncio.AbstractEventLoop], pki: Pki) -> Iterator[int]:
    """start_tls_server on a loop of its own, in a thread; yields its port."""
    loop = new_loop()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(pki.server.both))
    context.load_verify_locations(str(pki.ca.cert))
    context.verify_mode = ssl.CERT_REQUIRED

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read(16))
        writer.close()

    server = loop.run_until_complete(start_tls_server(echo, "127.0.0.1", 0, context, 10))
    loop.run_until_complete(server.start_serving())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


@pytest.mark.parametrize("new_loop", [asyncio.new_event_loop, uvloop.new_event_loop])
def test_alerts_on_both_event_loops(
    pki: Pki, new_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    for port in _serve_on(new_loop, pki):
        for version, cert, alert in CASES:
            got = _handshake_error(port, pki, version, getattr(pki, cert or "", None))
            assert alert in got, (version, cert)
        assert _handshake_error(port, pki, ssl.TLSVersion.TLSv1_3, pki.client) == (
            "read b'\\x00\\x00\\x00\\x00'"
        )
