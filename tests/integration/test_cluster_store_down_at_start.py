"""A broker whose store cannot be reached when it starts waits for it, as a
Kafka broker waits for its controllers, instead of exiting: once the store
answers, it registers and serves."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from cluster_brokers import cluster_broker, metadata
from tcp_proxy import TcpProxy
from test_cluster_store_cut import _through

from kgroups.postgres_store.store import CONNECT_TIMEOUT_S


def test_a_broker_started_while_its_store_is_cut_waits_and_then_serves(
    tmp_path: Path, store_url: str
) -> None:
    store = urlsplit(store_url)
    with TcpProxy(store.hostname or "127.0.0.1", store.port or 5432) as proxy:
        proxy.cut()
        broker = cluster_broker(tmp_path, _through(proxy, store_url), 1)
        started: list[BaseException | None] = []

        def start() -> None:
            try:
                broker.start(timeout=120)
                started.append(None)
            except BaseException as e:  # reported by the assertions below
                started.append(e)

        thread = threading.Thread(target=start)
        thread.start()
        try:
            # Longer than a connection attempt takes to give up, twice.
            time.sleep(2 * CONNECT_TIMEOUT_S + 2)
            assert not started, started
            assert broker.proc is not None and broker.proc.poll() is None
            proxy.heal()
            thread.join(120)
            assert started == [None]
            assert [b.node_id for b in metadata(broker.port).brokers] == [1]
        finally:
            proxy.heal()
            thread.join(120)
            broker.stop()
