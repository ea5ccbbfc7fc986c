"""One client connection: read frames, dispatch, answer in order.

Like Kafka's socket server, a connection handles one request at a time and
reads the next only after answering (pipelined requests wait in the socket
buffer), which is what keeps responses in request order. Answers to requests
already received go out together, in one write, once the connection waits for
anything (more bytes, a request that suspends, the peer to read): a client
with many requests in flight costs one send per batch, not per answer.
Produce requests are the exception (handlers/pipelining.py): once one's
batches are appended and it only waits for them to be durable, the next
Produce is handled, up to ``_PIPELINED_PRODUCE`` at a time and
``socket.request.max.bytes`` of them past the first; answers keep the
request order, and any other request waits for the Produce requests before it.
A client over one of its quotas is answered at once, then muted: nothing more
is read from it until its throttle time has passed (KIP-219, see
handlers/throttling.py).
On a plaintext connection a Fetch's records may stay in their segment files
(handlers/response_parts.py); such a response is written from file to socket
(file_sender.py) before the next request is read.
Anything that can't be parsed closes this connection with a log line naming
the peer and the reason; other connections never notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import TYPE_CHECKING

from kgroups.handlers.dispatch import BadRequest, dispatch, dispatch_parts
from kgroups.handlers.fast_heartbeat import (
    CONSUMER_HEARTBEAT_PREFIX,
    HEARTBEAT_PREFIX,
    answer_consumer_heartbeat,
    answer_heartbeat,
)
from kgroups.handlers.pipelining import start
from kgroups.handlers.response_parts import ResponseParts
from kgroups.handlers.throttling import Mute
from kgroups.network.file_sender import FileSender
from kgroups.protocol.framing import BadFrame, FrameReader
from kgroups.quotas.entities import REQUEST_PERCENTAGE
from kgroups.records.file_region import RegionGone
from kgroups.runtime.context import ConnectionInfo
from kgroups.security.peer import PLAINTEXT_SECURITY, ConnectionSecurity

if TYPE_CHECKING:
    from kgroups.handlers.broker_api import BrokerApi
    from kgroups.network.sasl_authenticator import SaslAuthenticator

# OffsetCommit's API key, as a request frame starts (int16 big-endian).
OFFSET_COMMIT_PREFIX = b"\x00\x08"

log = logging.getLogger(__name__)

# Past this many unsent bytes, wait for the peer to read before handling more.
_HIGH_WATER = 4 * 1024 * 1024
# Answers collected past this many bytes are written without waiting for more.
_BATCH_BYTES = 1024 * 1024
# Produce requests of one connection waiting for durability at once (their
# batches are held until committed anyway; this bounds the tasks and answers).
_PIPELINED_PRODUCE = 32
_PRODUCE_PREFIX = b"\x00\x00"  # API key 0
# Listeners whose bytes go to the socket as they are (no TLS).
_PLAIN_PROTOCOLS = frozenset({"PLAINTEXT", "SASL_PLAINTEXT"})
# How often a muted connection looks whether it or the broker is closing.
_MUTE_CHECK_S = 0.1


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
    connection = ConnectionInfo(host, peer[1] if isinstance(peer, tuple) else None)
    max_request = broker.config.get_int("socket.request.max.bytes")
    frames = FrameReader(reader, max_request)
    transport = writer.transport
    loop = asyncio.get_running_loop()
    clock = loop.time
    unsent: list[bytes] = []
    unsent_bytes = 0
    stats = broker.stats
    faults = broker.faults
    # The shortcuts answer heartbeats and take offset commits without
    # dispatch, so without ACL checks.
    shortcuts = broker.authorizer is None
    quotas = broker.quotas
    requests, request_seconds = stats.requests, stats.request_seconds
    stats.connections += 1
    stats.connections_created += 1
    # None on PLAINTEXT/SSL listeners: nothing to check per request.
    sasl: SaslAuthenticator | None = None
    if security.security_protocol.startswith("SASL_"):
        # Imported with the first SASL connection: its mechanisms and schemas
        # are no cost to a broker without SASL listeners.
        from kgroups.network.sasl_authenticator import SaslAuthenticator

        sasl = SaslAuthenticator(broker, security, host, connection)
    if sasl is not None and not security.authenticated:
        # As Kafka's SaslServerAuthenticator: an unauthenticated peer's frames are
        # small, and a larger size prefix closes the connection before its bytes
        # are read.
        frames.limit(
            broker.config.get_int("sasl.server.max.receive.size"), "sasl.server.max.receive.size"
        )

    # Produce requests handled and waiting for durability, oldest first, with
    # when each started; their answers go out in this order.
    pipelined: deque[tuple[asyncio.Task[bytes | None], float, int]] = deque()
    pipelined_bytes = 0
    room: list[tuple[int, asyncio.Future[None]]] = []  # (length awaited, waiter)
    failed: list[BaseException] = []
    # A client over its quotas: no request is read until this passes (KIP-219).
    mute = Mute()
    # Fetched records go from file to socket, where the socket is plaintext.
    files = FileSender.of(writer) if security.security_protocol in _PLAIN_PROTOCOLS else None

    def queue(response: bytes) -> None:
        nonlocal unsent_bytes
        if not unsent:
            # Runs as soon as this task waits, whatever for.
            loop.call_soon(send)
        unsent.append(response)
        unsent_bytes += len(response)
        if unsent_bytes >= _BATCH_BYTES:
            send()

    def answered(_task: asyncio.Task[bytes | None]) -> None:
        """A pipelined Produce ended: answer the ones done at the head, in order."""
        nonlocal pipelined_bytes
        while pipelined and pipelined[0][0].done() and not failed:
            task, started, size = pipelined.popleft()
            pipelined_bytes -= size
            if task.cancelled():
                continue
            error = task.exception()
            if error is not None:
                failed.append(error)
                _log_closing(peer_name, error)
                send()
                transport.close()  # wakes the loop if it waits for bytes
                break
            state.last_active = now = clock()
            request_seconds[0] += now - started
            response = task.result()
            if response is not None:
                queue(response)
        state.busy = bool(pipelined)
        for waiter in [w for w in room if len(pipelined) <= w[0] or failed]:
            room.remove(waiter)
            if not waiter[1].done():
                waiter[1].set_result(None)

    async def until_pipelined(length: int) -> None:
        """Wait until at most ``length`` Produce requests are pipelined."""
        if len(pipelined) > length and not failed:
            waiter = loop.create_future()
            room.append((length, waiter))
            await waiter
        if failed:
            raise _PipelineFailed from failed[0]

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

    async def muted() -> None:
        """Send what is answered, then read nothing until the mute ends (or
        the connection or the broker closes)."""
        send()
        while not broker.closing and not transport.is_closing():
            left = mute.until - clock()
            if left <= 0:
                break
            await asyncio.sleep(min(left, _MUTE_CHECK_S))
        mute.until = 0.0

    try:
        while True:
            if mute.until:
                await muted()
            request = frames.next_frame()
            if request is None:
                if not await frames.fill():
                    await until_pipelined(0)  # their answers, or their error
                    break
                continue
            if broker.closing:
                break
            if isinstance(request, bytearray) and not request.startswith(_PRODUCE_PREFIX):
                # A big frame read on its own: only Produce writes into it
                # (offsets stamped into its batches), the rest take bytes.
                request = bytes(request)
            response: bytes | ResponseParts | None = None
            if sasl is not None and sasl.intercepts(request):
                answer, close = await sasl.answer(request)
                if security.authenticated:
                    frames.limit(max_request, "socket.request.max.bytes")
                state.last_active = clock()
                if answer is not None:
                    unsent.append(answer)
                if close:
                    break
                send()
                continue
            if request.startswith(_PRODUCE_PREFIX) and not faults.active:
                # At most _PIPELINED_PRODUCE requests, and, past the first, at
                # most socket.request.max.bytes of them, wait at once.
                while pipelined and (
                    len(pipelined) >= _PIPELINED_PRODUCE
                    or pipelined_bytes + len(request) > max_request
                ):
                    await until_pipelined(len(pipelined) - 1)
                state.busy = True
                requests[0] += 1
                task, released = start(dispatch(broker, request, host, security, mute, connection))
                pipelined.append((task, clock(), len(request)))
                pipelined_bytes += len(request)
                task.add_done_callback(answered)
                await released
                if transport.get_write_buffer_size() > _HIGH_WATER:
                    send()
                    await writer.drain()
                continue
            await until_pipelined(0)
            if (
                shortcuts
                and not faults.active
                and isinstance(request, bytes)
                # The shortcuts are not metered: a request quota sends all through dispatch.
                and not quotas.sets(REQUEST_PERCENTAGE)
            ):
                if request.startswith(HEARTBEAT_PREFIX):
                    response = answer_heartbeat(broker.coordinator, request)
                elif request.startswith(CONSUMER_HEARTBEAT_PREFIX):
                    response = answer_consumer_heartbeat(broker.coordinator, request, host)
                elif request.startswith(OFFSET_COMMIT_PREFIX):
                    # Imported with the first commit: it brings the group schemas.
                    from kgroups.handlers.fast_commit import answer_commit

                    committed = answer_commit(broker, request, host)
                    if committed is not None:
                        state.busy = True
                        started = clock()
                        response = await committed
                        state.busy = False
                        request_seconds[request[1]] += clock() - started
            if response is None:
                state.busy = True
                started = clock()
                response = await dispatch_parts(
                    broker,
                    request,
                    host,
                    security,
                    mute,
                    connection,
                    files is not None and not faults.active,
                )
                state.busy = False
                state.last_active = now = clock()
                # The API key's low byte: dispatch refused any key above 255.
                request_seconds[request[1]] += now - started
            else:
                state.last_active = clock()
            requests[request[1]] += 1
            if isinstance(response, ResponseParts):
                if files is not None and not faults.active:
                    send()
                    await files.send(response)
                    continue
                response = response.to_bytes()  # faults were switched on meanwhile
            if faults.active:
                response = await faults.answer(request[1], response)
            if response is not None:
                queue(response)
                if transport.get_write_buffer_size() > _HIGH_WATER:
                    send()
                    await writer.drain()
    except asyncio.CancelledError:
        raise
    except _PipelineFailed:
        pass  # logged where it was found
    except Exception as e:
        _log_closing(peer_name, e)
    finally:
        stats.connections -= 1
        broker.client_telemetry.disconnected(connection)
        # Its share sessions end with it, their records released (Kafka 4.1+).
        broker.share_partitions.connection_closed(connection)
        if pipelined:
            # Not cancelled, even if this task is: a durability wait may be
            # shared with other requests (asyncio.wait cancels nothing).
            await asyncio.wait([t for t, _s, _n in pipelined])
        send()  # answers to the requests before a close or a bad frame
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


class _PipelineFailed(Exception):
    """A pipelined Produce raised; the connection closes (logged where found)."""


def _log_closing(peer_name: str, error: BaseException) -> None:
    if isinstance(error, (BadFrame, BadRequest, RegionGone)):
        log.warning("closing connection from %s: %s", peer_name, error)
    elif not isinstance(error, (ConnectionError, asyncio.IncompleteReadError)):
        log.error(
            "closing connection from %s after an internal error",
            peer_name,
            exc_info=(type(error), error, error.__traceback__),
        )
