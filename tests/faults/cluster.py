"""The cluster a fault run works on: `kgroups serve` brokers on one
PostgreSQL, each placed between two proxies the nemesis can cut:

    clients ──client proxy──▶ broker ──store proxy──▶ PostgreSQL

Every broker advertises its client proxy's address, so clients reach brokers
only through the proxies, the bootstrap included. Processes are real, so kill
-9 and SIGSTOP are real too."""

from __future__ import annotations

import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from cluster_brokers import HEARTBEAT_MS, SESSION_MS, metadata, wait_for
from tcp_proxy import TcpProxy

from process_broker import BrokerProcess, free_port

# Short consumer sessions, so that the group notices a member gone in seconds.
GROUP_SESSION_MS = 6000
GROUP_HEARTBEAT_MS = 1000

# librdkafka's log level for the run's clients: errors only, as faults make
# disconnections and timeouts the norm.
QUIET = 3

BROKER_OVERRIDES = (
    f"group.consumer.session.timeout.ms={GROUP_SESSION_MS}",
    f"group.consumer.min.session.timeout.ms={GROUP_SESSION_MS}",
    f"group.consumer.heartbeat.interval.ms={GROUP_HEARTBEAT_MS}",
    f"group.consumer.min.heartbeat.interval.ms={GROUP_HEARTBEAT_MS}",
    "offsets.topic.num.partitions=6",
)


class HaStore(Protocol):
    """A store with a standby that can take over (e.g. Patroni): given to the
    cluster, it enables the store-failover fault."""

    url: str

    def failover(self) -> None: ...


@dataclass
class Node:
    broker: BrokerProcess
    clients: TcpProxy  # clients -> broker
    store: TcpProxy  # broker -> PostgreSQL
    lock: threading.Lock = field(default_factory=threading.Lock)  # one fault at a time

    @property
    def id(self) -> int:
        return int(self.broker.properties["broker.id"])


def through(proxy: TcpProxy, url: str) -> str:
    """The store URL with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    auth = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{auth[0]}@{host}" if len(auth) > 1 else host))


class FaultCluster:
    def __init__(
        self, data: Path, store_url: str, count: int, ha_store: HaStore | None = None
    ) -> None:
        self.ha_store = ha_store
        store = urlsplit(store_url)
        self.nodes: list[Node] = []
        for i in range(1, count + 1):
            port = free_port()
            clients = TcpProxy("127.0.0.1", port)
            store_proxy = TcpProxy(store.hostname or "127.0.0.1", store.port or 5432)
            broker = BrokerProcess(
                data / f"b{i}",
                port,
                f"cluster.store.url={through(store_proxy, store_url)}",
                f"broker.id={i}",
                f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
                f"broker.session.timeout.ms={SESSION_MS}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{clients.port}",
                *BROKER_OVERRIDES,
            )
            self.nodes.append(Node(broker, clients, store_proxy))

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.clients.port}" for n in self.nodes)

    def start(self) -> None:
        for n in self.nodes:
            n.broker.start()
        wait_for(lambda: len(metadata(self.nodes[0].broker.port).brokers) == len(self.nodes))

    def heal(self) -> None:
        """Every fault undone: proxies open, processes running."""
        for n in self.nodes:
            with n.lock:
                n.clients.heal()
                n.store.heal()
                proc = n.broker.proc
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGCONT)
                else:
                    n.broker.start(60)

    def close(self) -> None:
        for n in self.nodes:
            if n.broker.proc is not None and n.broker.proc.poll() is None:
                n.broker.proc.send_signal(signal.SIGCONT)
            n.broker.stop()
            n.clients.close()
            n.store.close()
