"""A TLS listener that does handshakes only, on a blocking socket so that a
refused handshake sends OpenSSL's alert to the client, as a Java broker's
listener does. For tests of how a client reports a failed handshake."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def handshaking_listener(context: ssl.SSLContext) -> Iterator[str]:
    """Yields the bootstrap address; every connection gets one handshake
    (reading one request after it, for TLS 1.3's late client certificate check)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                sock, _ = server.accept()
            except TimeoutError:
                continue
            sock.settimeout(10)
            with sock, contextlib.suppress(OSError):
                tls = context.wrap_socket(sock, server_side=True)
                tls.recv(4)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stopping.set()
        thread.join(10)
        server.close()
