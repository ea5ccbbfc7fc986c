"""One client connection: read frames, dispatch, answer in order.

Like Kafka's socket server, a connection handles one request at a time and
reads the next only after answering (pipelined requests wait in the socket
buffer), which is what keeps responses in request order. Answers to requests
already received go out together, in one write, once the connection waits for
anything (more bytes, a request that suspends, the peer to read): a client
with many requests in flight costs one send per batch, not per answer.
Anything that can't be parsed closes this connection with a log line naming
the peer and the reason; other connections never notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from kgroups.handlers.dispatch import BadRequest, dispatch
from kgroups.handlers.fast_heartbeat import (
    CONSUMER_HEARTBEAT_PREFIX,
    HEARTBEAT_PREFIX,
    answer_consumer_heartbeat,
    answer_heartbeat,
)
from kgroups.network.sasl_authenticator import SaslAuthenticator
from kgroups.protocol.framing import BadFrame, FrameReader
from kgroups.security.peer import PLAINTEXT_SECURITY, ConnectionSecurity

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi

log = logging.getLogger(__name__)

# Past this many unsent bytes, wait for the peer to read before handling more.
_HIGH_WATER = 4 * 1024 * 1024
# Answers collected past this many bytes are written without waiting for more.
_BATCH_BYTES = 1024 * 1024


class ConnectionState:
    """Whether a connection is inside a request, so shutdown can close idle
    connections at once and give busy ones time to answer; and when it last
    answered one, so connections.max.idle.ms can close it (a peer that sent
    part of a frame and stopped is idle too)."""

    __slots__ = ("busy", "last_active")

    def __init__(self, now: float) -> None:
        self.busy = False
        self.last_active = now


async def serve_connection(
    broker: BrokerApi,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    state: ConnectionState,
    security: ConnectionSecurity = PLAINTEXT_SECURITY,
) -> None:
    peer = writer.get_extra_info("peername")
    host = peer[0] if isinstance(peer, tuple) else str(peer)
    peer_name = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
    max_request = broker.config.get_int("socket.request.max.bytes")
    frames = FrameReader(reader, max_request)
    transport = writer.transport
    loop = asyncio.get_running_loop()
    clock = loop.time
    unsent: list[bytes] = []
    unsent_bytes = 0
    stats = broker.stats
    faults = broker.faults
    # The shortcuts answer heartbeats without dispatch, so without ACL checks.
    shortcuts = broker.authorizer is None
    requests, request_seconds = stats.requests, stats.request_seconds
    stats.connections += 1
    stats.connections_created += 1
    # None on PLAINTEXT/SSL listeners: nothing to check per request.
    sasl = (
        SaslAuthenticator(broker, security, host)
        if security.security_protocol.startswith("SASL_")
        else None
    )
    if sasl is not None and not security.authenticated:
        # As Kafka's SaslServerAuthenticator: an unauthenticated peer's frames are
        # small, and a larger size prefix closes the connection before its bytes
        # are read.
        frames.limit(
            broker.config.get_int("sasl.server.max.receive.size"), "sasl.server.max.receive.size"
        )

    def send() -> None:
        """Write the collected answers, in order, with one call."""
        nonlocal unsent_bytes
        if not unsent:
            return
        if not transport.is_closing():
            if len(unsent) == 1:
                transport.write(unsent[0])
            else:
                transport.writelines(unsent)
        unsent.clear()
        unsent_bytes = 0

    try:
        while True:
            request = frames.next_frame()
            if request is None:
                if not await frames.fill():
                    break
                continue
            if broker.closing:
                break
            response = None
            if sasl is not None and sasl.intercepts(request):
                response, close = await sasl.answer(request)
                if security.authenticated:
                    frames.limit(max_request, "socket.request.max.bytes")
                state.last_active = clock()
                if response is not None:
                    unsent.append(response)
                if close:
                    break
                send()
                continue
            if shortcuts and not faults.active:
                if request.startswith(HEARTBEAT_PREFIX):
                    response = answer_heartbeat(broker.coordinator, request)
                elif request.startswith(CONSUMER_HEARTBEAT_PREFIX):
                    response = answer_consumer_heartbeat(broker.coordinator, request, host)
            if response is None:
                state.busy = True
                started = clock()
                response = await dispatch(broker, request, host, security)
                state.busy = False
                state.last_active = now = clock()
                # The API key's low byte: dispatch refused any key above 255.
                request_seconds[request[1]] += now - started
            else:
                state.last_active = clock()
            requests[request[1]] += 1
            if faults.active:
                response = await faults.answer(request[1], response)
            if response is not None:
                if not unsent:
                    # Runs as soon as this task waits, whatever for.
                    loop.call_soon(send)
                unsent.append(response)
                unsent_bytes += len(response)
                if unsent_bytes >= _BATCH_BYTES:
                    send()
                if transport.get_write_buffer_size() > _HIGH_WATER:
                    send()
                    await writer.drain()
    except (BadFrame, BadRequest) as e:
        log.warning("closing connection from %s: %s", peer_name, e)
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("closing connection from %s after an internal error", peer_name)
    finally:
        stats.connections -= 1
        send()  # answers to the requests before a close or a bad frame
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()
