"""A minimal HTTP/1.1 responder on the event loop: enough for Prometheus
scrapes, a JSON status page and small JSON POSTs (the fault admin endpoint),
no dependency.

Each connection answers one request and closes (``Connection: close``).
A request head larger than ``_MAX_HEAD`` or slower than ``_READ_TIMEOUT_S``
closes the connection: a scraper never needs more.
"""

from __future__ import annotations

import asyncio
import contextlib
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
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}


class HttpServer:
    """Serves ``routes`` (path -> page maker) to GETs and ``actions`` (path ->
    handler of the body) to POSTs on ``host:port`` (port 0: any free one)."""

    def __init__(self, routes: dict[str, Route], actions: dict[str, Action] | None = None) -> None:
        self._routes = routes
        self._actions = actions or {}
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
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            if method == "POST" and path in self._actions:
                length = _content_length(head)
                if length is None or length > _MAX_BODY:
                    return
                request_body = await asyncio.wait_for(reader.readexactly(length), _READ_TIMEOUT_S)
                status, content_type, body = await self._act(path, request_body)
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
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

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


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return 0
