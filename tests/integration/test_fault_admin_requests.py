"""The fault admin endpoint names what is wrong with a request it refuses: an
unknown action, missing or unknown arguments, a body that is not JSON, a
Host that is not loopback."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kgroups.testing.faults import FaultRefused, http_runner

from broker_thread import BrokerThread


@pytest.fixture(scope="module")
def admin_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    b = BrokerThread(tmp_path_factory.mktemp("data"), fault_admin_port=0).start()
    try:
        assert b.broker is not None and b.broker.fault_admin is not None
        yield b.broker.fault_admin.port
    finally:
        b.stop()


def _post(
    port: int,
    path: str,
    body: bytes,
    host: str = "127.0.0.1",
    content_type: str = "application/json",
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", path, skip_host=True)
        conn.putheader("Host", host)
        conn.putheader("Content-Type", content_type)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_an_unknown_action_is_named(admin_port: int) -> None:
    status, answer = _post(admin_port, "/faults/explode", b"{}")
    assert status == 404
    assert "/faults/explode" in answer["error"] and "/faults/delay" in answer["error"]


def test_missing_and_unknown_arguments_are_named(admin_port: int) -> None:
    status, answer = _post(admin_port, "/faults/move-coordinator", b"{}")
    assert status == 400
    assert answer["error"] == "move-coordinator: missing argument(s) group (its arguments: group)"
    status, answer = _post(admin_port, "/faults/delay", b'{"api": "Fetch", "ms": 1, "x": 2}')
    assert status == 400
    assert answer["error"] == "delay: unknown argument(s) x (its arguments: api, ms)"
    status, answer = _post(admin_port, "/faults/delay", b"{not json")
    assert status == 400 and "Expecting property name" in answer["error"]


def test_a_web_page_cannot_drive_it(admin_port: int) -> None:
    # DNS rebinding: the page's own name, resolved to 127.0.0.1, is the Host.
    status, answer = _post(admin_port, "/faults/clear", b"{}", host="evil.example:80")
    assert status == 421 and "evil.example" in answer["error"]
    # A form post needs no preflight; it is not JSON.
    status, answer = _post(admin_port, "/faults/clear", b"a=1", content_type="text/plain")
    assert status == 415
    status, answer = _post(admin_port, "/faults/clear", b"{}", host="localhost:1")
    assert status == 200 and answer["ok"] is True


def test_the_python_runner_raises_the_named_refusal(admin_port: int) -> None:
    run = http_runner(f"http://127.0.0.1:{admin_port}")
    with pytest.raises(FaultRefused, match="no action at /faults/explode"):
        run("explode", {})
