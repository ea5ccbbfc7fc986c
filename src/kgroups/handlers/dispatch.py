"""From a request frame to a response frame: header, version check, body, handler."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable
from io import BytesIO
from typing import TYPE_CHECKING, Any, TypeVar

from kgroups.errors import ErrorCode
from kgroups.handlers import ROUTES, Route
from kgroups.handlers.big_requests import BIG_REQUEST_BYTES, big_request, parse_off_loop
from kgroups.handlers.response_parts import ResponseParts, encode_parts
from kgroups.handlers.throttling import Mute, loop_time, throttle
from kgroups.protocol import apis
from kgroups.protocol.framing import frame
from kgroups.protocol.header import MalformedHeader, peek_api, read_request_header, response_header
from kgroups.protocol.produce_request import read_produce_in_place
from kgroups.protocol.versions import upgrade
from kgroups.quotas.entities import CONSUMER_BYTE_RATE
from kgroups.runtime.context import ConnectionInfo, RequestContext
from kgroups.security.peer import PLAINTEXT_SECURITY, ConnectionSecurity

if TYPE_CHECKING:
    from kgroups.handlers.access.checks import Guard
    from kgroups.handlers.broker_api import BrokerApi

log = logging.getLogger(__name__)
_T = TypeVar("_T")


class BadRequest(ValueError):
    """A request the broker cannot answer; the connection is closed."""


async def dispatch(
    broker: BrokerApi,
    request: bytes | bytearray,
    client_host: str,
    security: ConnectionSecurity = PLAINTEXT_SECURITY,
    mute: Mute | None = None,
    connection: ConnectionInfo | None = None,
) -> bytes | None:
    """The response frame to a request frame (None: no response is due).
    With ``mute``, the client's quotas apply: it learns how long to mute."""
    response = await dispatch_parts(broker, request, client_host, security, mute, connection)
    assert not isinstance(response, ResponseParts)  # only with file_regions
    return response


async def dispatch_parts(
    broker: BrokerApi,
    request: bytes | bytearray,
    client_host: str,
    security: ConnectionSecurity = PLAINTEXT_SECURITY,
    mute: Mute | None = None,
    connection: ConnectionInfo | None = None,
    file_regions: bool = False,
) -> bytes | ResponseParts | None:
    """``dispatch``; with ``file_regions``, a Fetch's records may stay in their
    files: the frame is then ResponseParts when some do."""
    try:
        api_key, api_version, correlation_id = peek_api(request)
    except MalformedHeader as e:
        raise BadRequest(str(e)) from None
    if not apis.is_supported(api_key, api_version):
        if api_key == apis.API_VERSIONS:
            return _unsupported_api_versions(correlation_id)
        name = apis.SUPPORTED[api_key].name if api_key in apis.SUPPORTED else "unknown API"
        raise BadRequest(f"unsupported request: api key {api_key} ({name}) version {api_version}")
    codec = apis.codec(api_key, api_version)
    route = ROUTES[api_key]
    if len(request) >= BIG_REQUEST_BYTES and api_key != apis.PRODUCE:
        with big_request():
            return await _dispatch_big(
                broker, request, client_host, codec, route, security, mute, connection
            )
    try:
        header, body = _read(codec, request, route.upgrade, api_key)
    except Exception as e:
        raise _malformed(api_key, api_version, e) from None
    ctx = _context(
        api_key,
        api_version,
        correlation_id,
        header,
        client_host,
        security,
        connection,
        file_regions and api_key == apis.FETCH,
    )
    if mute is None or broker.quotas.table.is_empty():
        response = await _handle(broker, ctx, body, route)
        encoded = None
    else:
        response, encoded = await _handle_throttled(broker, ctx, body, route, len(request), mute)
    if response is None:
        return None
    return _encode_frame(codec, ctx, response) if encoded is None else encoded


def _encode_frame(
    codec: apis.ApiCodec, ctx: RequestContext, response: object
) -> bytes | ResponseParts:
    header = response_header(ctx.correlation_id, codec.response_header_flexible)
    if ctx.file_regions:
        return encode_parts(codec.write_response, header, response)
    return frame(header + codec.encode_response(response))


async def _handle_throttled(
    broker: BrokerApi, ctx: RequestContext, body: Any, route: Route, size: int, mute: Mute
) -> tuple[object | None, bytes | ResponseParts | None]:
    """``_handle``, then the client's quotas counted and a throttle applied:
    the response (and its frame when already made) to send."""
    timer = loop_time(broker, ctx)
    work = _handle(broker, ctx, body, route)
    response = await (work if timer is None else timer.run(work))
    encoded = None
    fetched = None
    if ctx.api_key == apis.FETCH and broker.quotas.sets(CONSUMER_BYTE_RATE):
        codec = apis.codec(ctx.api_key, ctx.api_version)
        encoded = _encode_frame(codec, ctx, response)
        # The response's own bytes: not its size prefix and header.
        fetched = len(encoded) - 4 - len(response_header(0, codec.response_header_flexible))
    throttled, ms = throttle(broker, ctx, size, response, fetched, timer)
    if ms:
        mute.add(ms, asyncio.get_running_loop().time())
        encoded = None
    return throttled, encoded


async def _dispatch_big(
    broker: BrokerApi,
    request: bytes | bytearray,
    client_host: str,
    codec: apis.ApiCodec,
    route: Route,
    security: ConnectionSecurity,
    mute: Mute | None,
    connection: ConnectionInfo | None,
) -> bytes | None:
    """``dispatch`` for a big request: parsed and encoded on a worker thread
    (see big_requests.py)."""
    api_key, api_version, correlation_id = peek_api(request)
    try:
        header, body = await parse_off_loop(
            functools.partial(_read, codec, request, route.upgrade, api_key)
        )
    except Exception as e:
        raise _malformed(api_key, api_version, e) from None
    ctx = _context(api_key, api_version, correlation_id, header, client_host, security, connection)
    if mute is None or broker.quotas.table.is_empty():
        response = await _handle(broker, ctx, body, route)
    else:
        response, _ = await _handle_throttled(broker, ctx, body, route, len(request), mute)
    del body
    if response is None:
        return None
    payload = await asyncio.to_thread(_encode, codec, response)
    del response
    return frame(response_header(correlation_id, codec.response_header_flexible) + payload)


def _context(
    api_key: int,
    api_version: int,
    correlation_id: int,
    header: Any,
    client_host: str,
    security: ConnectionSecurity,
    connection: ConnectionInfo | None,
    file_regions: bool = False,
) -> RequestContext:
    return RequestContext(
        api_key,
        api_version,
        correlation_id,
        header.client_id or "",
        client_host,
        security.principal,
        security.listener,
        connection,
        file_regions,
    )


@functools.cache
def _guards() -> dict[int, Guard]:
    # Imported with the first request to a broker with an authorizer: the
    # guards import the handlers they wrap (handlers/__init__.py).
    from kgroups.handlers.access import GUARDS

    return GUARDS


def _handle(broker: BrokerApi, ctx: RequestContext, body: Any, route: Route) -> Awaitable[object]:
    authorizer = broker.authorizer
    if authorizer is not None:
        guard = _guards().get(ctx.api_key)
        if guard is not None:
            return guard(authorizer, broker, ctx, body, route.handler)
    return route.handler(broker, ctx, body)


def _malformed(api_key: int, api_version: int, error: Exception) -> BadRequest:
    return BadRequest(f"malformed {apis.SUPPORTED[api_key].name} v{api_version} request: {error}")


def _read(
    codec: apis.ApiCodec, request: bytes | bytearray, to_newest: bool, api_key: int
) -> tuple[Any, Any]:
    if isinstance(request, bytearray):
        # A big frame read on its own: a Produce's records stay in it, the
        # log stamps them there; anything else (and any unusual Produce) is
        # read by kio, which takes read-only buffers.
        view = memoryview(request).toreadonly()
        header, offset = read_request_header(view, codec.request_header_flexible)
        if api_key == apis.PRODUCE:
            in_place = read_produce_in_place(request, offset, header.api_version)
            if in_place is not None:
                return header, in_place
        body, _size = codec.read_request(view, offset)
    else:
        header, offset = read_request_header(request, codec.request_header_flexible)
        body, _size = codec.read_request(request, offset)
    if to_newest:
        body = upgrade(body, apis.newest(api_key).request_type)
    return header, body


def _encode(codec: apis.ApiCodec, response: object) -> bytes:
    # Not through the codec's cache of repeating responses: a big one is unique.
    buf = BytesIO()
    codec.write_response(buf, response)
    return buf.getvalue()


def _unsupported_api_versions(correlation_id: int) -> bytes:
    """Kafka's rule: a client asking ApiVersions in a version we lack gets a v0
    answer with UNSUPPORTED_VERSION and our ranges, then retries lower."""
    # Imported here: only a client newer than this broker asks such a version.
    from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
    from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0

    response = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=api_version_entries(ApiVersionV0),
    )
    payload = apis.codec(apis.API_VERSIONS, 0).encode_response(response)
    return frame(response_header(correlation_id, flexible=False) + payload)


def api_version_entries(entry_type: type[_T]) -> tuple[_T, ...]:
    return tuple(
        entry_type(api_key=r.key, min_version=r.min_version, max_version=r.max_version)  # type: ignore[call-arg]
        for r in apis.SUPPORTED.values()
    )
