"""The metrics HTTP responder answers GET on its paths, 404 elsewhere, 405 to other methods."""

from __future__ import annotations

import asyncio

from kgroups.metrics.http import HttpServer, Page


async def _request(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    answer = await reader.read()
    writer.close()
    return answer


def test_routes_unknown_paths_and_methods() -> None:
    async def page() -> Page:
        return 200, "text/plain", b"hello\n"

    async def failing() -> Page:
        raise RuntimeError("boom")

    async def main() -> list[bytes]:
        server = HttpServer({"/metrics": page, "/broken": failing})
        port = await server.start("127.0.0.1", 0)
        try:
            return [
                await _request(port, b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"),
                await _request(port, b"GET /nope HTTP/1.1\r\n\r\n"),
                await _request(port, b"POST /metrics HTTP/1.1\r\n\r\n"),
                await _request(port, b"GET /broken HTTP/1.1\r\n\r\n"),
            ]
        finally:
            await server.close()

    ok, missing, post, broken = asyncio.run(main())
    assert ok.startswith(b"HTTP/1.1 200 OK\r\n")
    assert ok.endswith(b"\r\n\r\nhello\n")
    assert b"Content-Length: 6\r\n" in ok
    assert missing.startswith(b"HTTP/1.1 404 ")
    assert post.startswith(b"HTTP/1.1 405 ")
    assert broken.startswith(b"HTTP/1.1 500 ")
