from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from kgroups.postgres_store.local_server import LocalPostgres

    from broker_thread import BrokerThread


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerThread]:
    from broker_thread import BrokerThread

    b = BrokerThread(tmp_path / "data").start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerThread]:
    """One broker for a whole module (hypothesis runs many examples against it)."""
    from broker_thread import BrokerThread

    b = BrokerThread(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[LocalPostgres]:
    """One real PostgreSQL server for the whole test session."""
    from postgres import start_server

    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store_url(postgres_server: LocalPostgres) -> str:
    """The URL of a fresh, empty database on the session's PostgreSQL."""
    from postgres import fresh_database

    return fresh_database(postgres_server)


def _spark_test(nodeid: str) -> bool:
    return nodeid.startswith("tests/spark/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The Spark tests first: as one work unit (below) they are the longest, and a
    long unit started last would keep one worker busy while the other waits."""
    items.sort(key=lambda item: not _spark_test(item.nodeid))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """With ``--dist loadfile``, the Spark test files share one worker: each worker
    that runs one starts its own JVM and SparkSession (seconds of CPU each)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/spark" if _spark_test(nodeid) else super()._split_scope(nodeid)

    return SparkTogether(config, log)
