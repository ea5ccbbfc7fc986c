"""An encrypted private key without its password stops the broker with a
message naming the key to set, instead of OpenSSL asking on the terminal."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.network.tls import server_context

from certificates import Authority

_SCRIPT = """
import sys
from kgroups.config.broker_config import BrokerConfig, ConfigError
from kgroups.network.tls import server_context
config = BrokerConfig({"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM",
                       "ssl.keystore.location": sys.argv[1]})
try:
    server_context(config, "SSL")
except ConfigError as e:
    print("refused:", e, flush=True)
"""


def _output_on_a_terminal(args: list[str], timeout_s: float = 20) -> str:
    """What a process started on a terminal writes, until it exits or `timeout_s`."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execv(sys.executable, [sys.executable, *args])
    out = b""
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    return out.decode(errors="replace")


def test_an_encrypted_key_without_ssl_key_password_is_refused_not_asked_for(
    tmp_path: Path,
) -> None:
    server = Authority(tmp_path).server(password="key-pass")
    output = _output_on_a_terminal(["-c", _SCRIPT, str(server.both)])
    assert "pass phrase" not in output
    assert "refused:" in output and "ssl.key.password" in output


def test_a_listener_key_store_names_the_listener_key_password(tmp_path: Path) -> None:
    server = Authority(tmp_path).server(password="key-pass")
    config = BrokerConfig(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.location": str(server.both),
        }
    )
    with pytest.raises(ConfigError, match=r"listener\.name\.ssl\.ssl\.key\.password"):
        server_context(config, "SSL")


def test_an_encrypted_key_opens_with_its_password(tmp_path: Path) -> None:
    server = Authority(tmp_path).server(password="key-pass")
    config = BrokerConfig(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.both),
            "ssl.key.password": "key-pass",
        }
    )
    assert server_context(config, "SSL").verify_mode.name == "CERT_NONE"
