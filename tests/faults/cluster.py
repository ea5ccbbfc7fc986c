"""The cluster a fault run works on: `kgroups serve` brokers on one
PostgreSQL, each placed between two proxies the nemesis can cut:

    clients ──client proxy──▶ broker ──store proxy──▶ PostgreSQL
                                            (one per server of an HA store)

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
    store: StoreLink  # broker -> PostgreSQL
    lock: threading.Lock = field(default_factory=threading.Lock)  # one fault at a time

    @property
    def id(self) -> int:
        return int(self.broker.properties["broker.id"])


class StoreLink:
    """A broker's link to the store: one proxy per host of the store URL (a
    multi-host URL, an HA store's, has several), cut and healed together."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        auth, _, hosts = parts.netloc.rpartition("@")
        self.proxies = [TcpProxy(host, port) for host, port in _hosts(hosts)]
        netloc = ",".join(f"127.0.0.1:{p.port}" for p in self.proxies)
        self.url = urlunsplit(parts._replace(netloc=f"{auth}@{netloc}" if auth else netloc))

    def cut(self) -> None:
        for p in self.proxies:
            p.cut()

    def heal(self) -> None:
        for p in self.proxies:
            p.heal()

    def close(self) -> None:
        for p in self.proxies:
            p.close()


def _hosts(hosts: str) -> list[tuple[str, int]]:
    """``h1:p1,h2:p2`` as (host, port) pairs; PostgreSQL's port when none is given."""
    found = []
    for entry in hosts.split(","):
        host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
        found.append((host or "127.0.0.1", int(port or 5432)))
    return found


class FaultCluster:
    def __init__(
        self, data: Path, store_url: str, count: int, ha_store: HaStore | None = None
    ) -> None:
        self.ha_store = ha_store
        self.nodes: list[Node] = []
        for i in range(1, count + 1):
            port = free_port()
            clients = TcpProxy("127.0.0.1", port)
            store_link = StoreLink(store_url)
            broker = BrokerProcess(
                data / f"b{i}",
                port,
                f"cluster.store.url={store_link.url}",
                f"broker.id={i}",
                f"broker.heartbeat.interval.ms={HEARTBEAT_MS}",
                f"broker.session.timeout.ms={SESSION_MS}",
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{clients.port}",
                *BROKER_OVERRIDES,
            )
            self.nodes.append(Node(broker, clients, store_link))

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
