"""A minimal HTTP/1.1 responder on the event loop: enough for Prometheus
scrapes, a JSON status page and small JSON POSTs (the fault admin endpoint),
no dependency.

Each connection answers one request and closes (``Connection: close``).
A request head larger than ``_MAX_HEAD`` or slower than ``_READ_TIMEOUT_S``
closes the connection: a scraper never needs more.

A POST to an action carries a JSON body of at most ``_MAX_BODY`` bytes, framed
by Content-Length, with ``Content-Type: application/json``; anything else is
answered with a JSON ``{"error": ...}`` naming the problem (404 an unknown
action, 411 a chunked or unframed body, 413 a body over the bound, 415 another
content type). ``loopback_only`` also requires the ``Host`` header to name a
loopback address (``localhost``, 127.0.0.0/8, ``::1``), else 421: a web page
the machine's browser opens cannot drive the endpoint by pointing its own name
at 127.0.0.1 (DNS rebinding), since its requests carry its own name as Host,
and only a browser's simple requests (no JSON content type) go out without
asking the server first.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

# (status, content type, body) for a path.
Page = tuple[int, str, bytes]
Route = Callable[[], Awaitable[Page]]
# A POST's handler: the request body -> the page.
Action = Callable[[bytes], Awaitable[Page]]

_MAX_HEAD = 16 * 1024
_MAX_BODY = 64 * 1024
_READ_TIMEOUT_S = 10.0
# After refusing a body it did not read, the time and bytes spent reading it
# away, so that closing does not reset the connection before the client reads
# the answer.
_DISCARD_TIMEOUT_S = 2.0
_DISCARD_BYTES = 1024 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    421: "Misdirected Request",
    500: "Internal Server Error",
}
_JSON = "application/json"


class HttpServer:
    """Serves ``routes`` (path -> page maker) to GETs and ``actions`` (path ->
    handler of the body) to POSTs on ``host:port`` (port 0: any free one)."""

    def __init__(
        self,
        routes: dict[str, Route],
        actions: dict[str, Action] | None = None,
        loopback_only: bool = False,
    ) -> None:
        self._routes = routes
        self._actions = actions or {}
        self._loopback_only = loopback_only
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host or None, port)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
            if len(head) > _MAX_HEAD:
                return
            request_line, headers = _parse_head(head)
            method, _, rest = request_line.partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            unread_body = False
            refused = self._misdirected(headers)
            if refused is not None:
                status, content_type, body = refused
                unread_body = True
            elif method == "POST" and self._actions:
                answer, request_body = await self._post_body(path, headers, reader)
                if answer is None:
                    assert request_body is not None
                    answer = await self._act(path, request_body)
                else:
                    unread_body = True
                status, content_type, body = answer
            else:
                status, content_type, body = await self._page(method, path)
            writer.write(
                (
                    f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
                    f"Content-Type: {content_type}\r\n"
                    f"Content-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n"
                ).encode("latin-1")
                + (body if method != "HEAD" else b"")
            )
            await writer.drain()
            if unread_body:
                await _discard(reader, writer)
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def _misdirected(self, headers: dict[str, str | None]) -> Page | None:
        """With ``loopback_only``, the refusal of a Host that is not loopback."""
        if not self._loopback_only:
            return None
        if "host" not in headers:
            return _error(400, "a Host header is required")
        host = headers["host"]
        if host is None or not is_loopback_host(host):
            return _error(
                421,
                f"Host {host!r} is not a loopback address; "
                "this endpoint answers requests for localhost, 127.0.0.1 or [::1] only",
            )
        return None

    async def _post_body(
        self, path: str, headers: dict[str, str | None], reader: asyncio.StreamReader
    ) -> tuple[Page | None, bytes | None]:
        """The body of a POST to an action, or the answer refusing it."""
        if path not in self._actions:
            known = ", ".join(sorted(self._actions))
            return _error(404, f"no action at {path}; the actions are {known}"), None
        if "transfer-encoding" in headers:
            return _error(
                411,
                f"Transfer-Encoding {headers['transfer-encoding']!r} is not accepted: "
                "send the body with a Content-Length",
            ), None
        if "content-length" not in headers:
            return _error(411, "a Content-Length header is required"), None
        raw_length = headers["content-length"]
        if raw_length is None or not raw_length.isdigit():
            return _error(400, f"Content-Length {raw_length!r} is not one byte count"), None
        length = int(raw_length)
        if length > _MAX_BODY:
            return _error(
                413, f"the body of {length} bytes is over the limit of {_MAX_BODY} bytes"
            ), None
        media_type = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if media_type != _JSON:
            given = headers.get("content-type")
            return _error(
                415,
                "the body must be Content-Type: application/json"
                + (f", not {given!r}" if given else ""),
            ), None
        request_body = await asyncio.wait_for(reader.readexactly(length), _READ_TIMEOUT_S)
        return None, request_body

    async def _act(self, path: str, body: bytes) -> Page:
        try:
            return await self._actions[path](body)
        except Exception:
            log.exception("action %s failed", path)
            return 500, "text/plain", b"internal error\n"

    async def _page(self, method: str, path: str) -> Page:
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"only GET (and POST to an action)\n"
        route = self._routes.get(path)
        if route is None:
            known = " ".join(sorted(self._routes))
            return 404, "text/plain", f"not found; try {known}\n".encode()
        try:
            return await route()
        except Exception:
            log.exception("metrics page %s failed", path)
            return 500, "text/plain", b"internal error\n"


def _parse_head(head: bytes) -> tuple[str, dict[str, str | None]]:
    """The request line and the headers by lower-case name; a header given
    twice with different values maps to None (ambiguous: refused where used)."""
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str | None] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        key, value = name.strip().lower(), value.strip()
        headers[key] = value if headers.get(key, value) == value else None
    return lines[0], headers


def is_loopback_host(host: str) -> bool:
    """A Host header's name (a port aside) is localhost or a loopback address."""
    if host.startswith("["):
        name, bracket, port = host[1:].partition("]")
        if not bracket or (port and not (port[0] == ":" and port[1:].isdigit())):
            return False
    else:
        name, colon, port = host.rpartition(":") if ":" in host else (host, "", "")
        if colon and not port.isdigit():
            return False
    name = name.lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _error(status: int, message: str) -> Page:
    return status, _JSON, json.dumps({"error": message}).encode()


async def _discard(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Read away what the client still sends (bounded), after the answer."""
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        if writer.can_write_eof():
            writer.write_eof()
    budget = _DISCARD_BYTES
    with contextlib.suppress(TimeoutError, ConnectionError, OSError):
        async with asyncio.timeout(_DISCARD_TIMEOUT_S):
            while budget > 0:
                chunk = await reader.read(min(budget, 65536))
                if not chunk:
                    return
                budget -= len(chunk)
