"""POSTs to the HTTP responder's actions: only JSON bodies framed by
Content-Length and within the bound reach an action; every refusal is a JSON
error naming the problem. ``loopback_only`` answers only requests whose Host
is a loopback name or address (a page using DNS rebinding sends its own)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from kgroups.metrics.http import HttpServer, Page, is_loopback_host

BODY = b'{"group": "g"}'


def _post(body: bytes, **headers: str) -> bytes:
    lines = [b"POST /faults/clear HTTP/1.1"]
    lines += [f"{k.replace('_', '-')}: {v}".encode() for k, v in headers.items()]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _ask(raw: bytes, loopback_only: bool = True) -> tuple[int, Any, list[bytes]]:
    """(status, JSON body, bodies the action received) of one request."""
    received: list[bytes] = []

    async def clear(body: bytes) -> Page:
        received.append(body)
        return 200, "application/json", b'{"ok": true}'

    async def show() -> Page:
        return 200, "application/json", b"{}"

    async def main() -> bytes:
        server = HttpServer({"/faults": show}, {"/faults/clear": clear}, loopback_only)
        port = await server.start("127.0.0.1", 0)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(raw)
            await writer.drain()
            answer = await asyncio.wait_for(reader.read(), 30)
            writer.close()
            return answer
        finally:
            await server.close()

    answer = asyncio.run(main())
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Content-Type: application/json" in head
    return int(head.split(b" ")[1]), json.loads(body), received


def _json(length: int | None = None) -> dict[str, str]:
    headers = {"Host": "127.0.0.1:9644", "Content_Type": "application/json"}
    headers["Content_Length"] = str(len(BODY) if length is None else length)
    return headers


def test_a_json_body_reaches_the_action() -> None:
    status, answer, received = _ask(_post(BODY, **_json()))
    assert (status, answer, received) == (200, {"ok": True}, [BODY])
    headers = _json() | {"Content_Type": "application/json; charset=utf-8", "Host": "localhost"}
    assert _ask(_post(BODY, **headers))[0] == 200


def test_an_unknown_action_is_named() -> None:
    raw = _post(BODY, **_json()).replace(b"/faults/clear", b"/faults/explode")
    status, answer, _ = _ask(raw)
    assert status == 404
    assert "/faults/explode" in answer["error"] and "/faults/clear" in answer["error"]


def test_a_chunked_body_is_refused_by_name() -> None:
    headers = {"Host": "127.0.0.1", "Content_Type": "application/json"}
    chunked = _post(b"e\r\n" + BODY + b"\r\n0\r\n\r\n", Transfer_Encoding="chunked", **headers)
    status, answer, received = _ask(chunked)
    assert status == 411 and "Transfer-Encoding" in answer["error"] and not received
    status, answer, _ = _ask(_post(BODY, **headers))
    assert status == 411 and "Content-Length" in answer["error"]


def test_an_oversized_body_is_answered_not_dropped() -> None:
    big = b'{"x": "' + b"y" * 200_000 + b'"}'
    status, answer, received = _ask(_post(big, **_json(len(big))))
    assert status == 413 and "200009 bytes" in answer["error"] and "65536" in answer["error"]
    assert not received


def test_other_content_types_are_refused() -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        status, answer, received = _ask(_post(BODY, **_json() | {"Content_Type": content_type}))
        assert status == 415 and content_type in answer["error"] and not received
    no_type = {k: v for k, v in _json().items() if k != "Content_Type"}
    status, answer, _ = _ask(_post(BODY, **no_type))
    assert status == 415 and "application/json" in answer["error"]


def test_a_host_that_is_not_loopback_is_refused() -> None:
    for host in ("attacker.example:9644", "10.1.2.3", "localhost.attacker.example"):
        status, answer, received = _ask(_post(BODY, **_json() | {"Host": host}))
        assert status == 421 and host in answer["error"] and not received
    get = b"GET /faults HTTP/1.1\r\nHost: attacker.example\r\n\r\n"
    assert _ask(get)[0] == 421
    no_host = {k: v for k, v in _json().items() if k != "Host"}
    assert _ask(_post(BODY, **no_host))[0] == 400
    # Without loopback_only (the metrics pages), any Host is served.
    assert _ask(_post(BODY, **_json() | {"Host": "prometheus.internal"}), False)[0] == 200


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST:80", True),
        ("localhost.", True),
        ("127.0.0.1", True),
        ("127.5.6.7:9644", True),
        ("[::1]", True),
        ("[::1]:9644", True),
        ("::1", False),  # an IPv6 host is bracketed
        ("0.0.0.0", False),
        ("[::1]x", False),
        ("127.0.0.1:http", False),
        ("127.0.0.1.nip.io", False),
        ("", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) == loopback
