"""One client connection to a broker: pipelined requests matched to responses
by correlation id, with API versions negotiated on connect (then TLS and SASL
as the client's ClientSecurity asks, once, before any request)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import struct
from io import BytesIO
from typing import Any, TypeVar

from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3 import ApiVersionsRequest
from kio.serial import entity_writer

from kgroups import __version__
from kgroups.client.exceptions import SslAuthenticationError
from kgroups.client.security import PLAINTEXT, ClientSecurity
from kgroups.errors import ErrorCode, KafkaError
from kgroups.protocol.bounds import bounded_reader

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")
T = TypeVar("T")


class ConnectionClosed(ConnectionError):
    pass


class BrokerConnection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id.encode()
        self._correlation = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[Any], Any]] = {}
        self._receiver = asyncio.get_running_loop().create_task(self._receive())
        self.versions: dict[int, tuple[int, int]] = {}

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str = "kgroups",
        timeout: float = 10.0,
        security: ClientSecurity = PLAINTEXT,
    ) -> BrokerConnection:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=security.ssl_context), timeout
            )
        except ssl.SSLError as e:
            refused = _refusal(e)
            if refused is None:
                raise
            raise refused from None
        conn = cls(reader, writer, client_id)
        try:
            await conn._negotiate()
            if security.mechanism is not None:
                await asyncio.wait_for(security.authenticate(conn), timeout)
        except BaseException as e:
            await conn.close()
            # Under TLS 1.3 a refused client certificate shows on the first read.
            cause = e.__cause__ if isinstance(e, ConnectionClosed) else None
            refused = _refusal(cause) if isinstance(cause, ssl.SSLError) else None
            if refused is not None:
                raise refused from None
            raise
        return conn

    async def _negotiate(self) -> None:
        response = await self.send(
            ApiVersionsRequest(client_software_name="kgroups", client_software_version=__version__)
        )
        if response.error_code == ErrorCode.unsupported_version:
            response = await self.send(ApiVersionsRequestV0())
        if response.error_code != ErrorCode.none:
            raise KafkaError(response.error_code, "ApiVersions failed")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    @property
    def closed(self) -> bool:
        """True once the broker hung up or close() was called: requests now fail."""
        return self._receiver.done()

    def version_for(self, api_key: int, lowest: int, highest: int) -> int:
        """The newest version both we (lowest..highest) and the broker support."""
        theirs = self.versions.get(api_key)
        if theirs is None or theirs[1] < lowest or theirs[0] > highest:
            raise KafkaError(ErrorCode.unsupported_version, f"broker lacks API {api_key}")
        return min(highest, theirs[1])

    async def send(
        self, request: Any, *, version: int | None = None, expect_response: bool = True
    ) -> Any:
        """Send a kio request entity, as `version` when given (a newer entity
        serialises as an older version by field name); returns the response."""
        if self._receiver.done():
            raise ConnectionClosed("connection is closed")
        api_key = request.__api_key__
        schema = type(request)
        if version is None:
            version = request.__version__
        elif version != request.__version__:
            schema = load_request_schema(api_key, version)
        correlation = next(self._correlation)
        buf = BytesIO()
        buf.write(_HEADER.pack(api_key, version, correlation))
        buf.write(struct.pack(">h", len(self._client_id)) + self._client_id)
        if schema.__header_schema__.__version__ >= 2:
            buf.write(b"\x00")
        _writer(schema)(buf, request)
        payload = buf.getvalue()
        future: asyncio.Future[Any] | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending[correlation] = (future, _response_reader(api_key, version))
        try:
            self._writer.write(_SIZE.pack(len(payload)) + payload)
            await self._writer.drain()
        except (ConnectionError, OSError) as e:
            self._pending.pop(correlation, None)
            if future is not None:
                if future.done() and not future.cancelled():
                    future.exception()  # failed by the receiver; this caller reports instead
                future.cancel()
            raise ConnectionClosed(f"connection lost: {e}") from None
        if future is None:
            return None
        return await future

    async def _receive(self) -> None:
        error: BaseException = ConnectionClosed("broker closed the connection")
        try:
            while True:
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                (correlation,) = _SIZE.unpack_from(frame, 0)
                entry = self._pending.pop(correlation, None)
                if entry is None:
                    continue
                future, (read, flexible) = entry
                try:
                    response, _ = read(frame, 5 if flexible else 4)
                except Exception as e:  # a response we cannot parse fails only its request
                    if not future.done():
                        future.set_exception(e)
                    continue
                if not future.done():
                    future.set_result(response)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            error = ConnectionClosed(f"connection lost: {e}")
            error.__cause__ = e
        except asyncio.CancelledError:
            error = ConnectionClosed("connection closed")
        finally:
            for future, _ in self._pending.values():
                if not future.done():
                    future.set_exception(error)
            self._pending.clear()

    async def close(self) -> None:
        self._receiver.cancel()
        with contextlib.suppress(BaseException):
            await self._receiver
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


def _refusal(e: ssl.SSLError) -> SslAuthenticationError | None:
    """As Java's SslAuthenticationException, a failed handshake (certificate
    refused either way, no common version or cipher) is fatal, not a network
    error to retry; a connection closed mid-handshake stays one (None)."""
    if isinstance(e, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        return None
    if isinstance(e, ssl.SSLCertVerificationError):
        return SslAuthenticationError(e.verify_message or str(e))
    return SslAuthenticationError(str(e))


_writers: dict[type[Any], Any] = {}
_readers: dict[tuple[int, int], tuple[Any, bool]] = {}


def _writer(cls: type[Any]) -> Any:
    w = _writers.get(cls)
    if w is None:
        w = _writers[cls] = entity_writer(cls)
    return w


def _response_reader(api_key: int, version: int) -> tuple[Any, bool]:
    r = _readers.get((api_key, version))
    if r is None:
        cls = load_response_schema(api_key, version)
        r = _readers[(api_key, version)] = (
            bounded_reader(cls),
            cls.__header_schema__.__version__ >= 1,
        )
    return r
