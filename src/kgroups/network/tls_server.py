"""The listening side of a TLS listener: asyncio streams over TLS, with the
TLS alert of a refused handshake sent before the connection closes.

asyncio's own TLS server (and uvloop's) drops the alert OpenSSL writes when it
refuses a handshake (CPython issue 98078): the client sees a bare close where
against Kafka it reads why, ``unknown ca`` or ``certificate required``. Here the
TCP server is plain and each connection runs asyncio's TLS protocol, written
in Python over a memory BIO, taught one thing more: on a failed handshake, the
bytes OpenSSL left in the outgoing BIO (the alert) go to the socket first.
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import sslproto

from kgroups.network.request_stream import ClientConnected, stream_protocol


class _AlertingTlsProtocol(sslproto.SSLProtocol):
    """asyncio's TLS protocol; a refused handshake sends its alert before closing."""

    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        if handshake_exc is not None:
            self._send_pending_alert()
        super()._on_handshake_complete(handshake_exc)

    def _send_pending_alert(self) -> None:
        # Private attributes of asyncio.sslproto (3.11 and later): if a Python
        # release renames them, the alert is dropped again, nothing worse.
        outgoing = getattr(self, "_outgoing", None)
        transport = getattr(self, "_transport", None)
        if not isinstance(outgoing, ssl.MemoryBIO) or transport is None:
            return
        alert = outgoing.read()
        if alert and not transport.is_closing():
            transport.write(alert)


async def start_tls_server(
    client_connected: ClientConnected,
    host: str | None,
    port: int,
    context: ssl.SSLContext,
    handshake_timeout_s: int,
) -> asyncio.Server:
    """As ``asyncio.start_server(..., ssl=context, start_serving=False)``."""
    loop = asyncio.get_running_loop()

    def connection() -> asyncio.BaseProtocol:
        streams = stream_protocol(client_connected, loop)
        # Told how the handshake ended; a refused one is already closed, nothing to do.
        handshake: asyncio.Future[None] = loop.create_future()
        handshake.add_done_callback(lambda f: f.cancelled() or f.exception())
        return _AlertingTlsProtocol(
            loop,
            streams,
            context,
            handshake,
            server_side=True,
            ssl_handshake_timeout=handshake_timeout_s,
        )

    return await loop.create_server(connection, host, port, start_serving=False)
