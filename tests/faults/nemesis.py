"""The nemesis: faults on a schedule drawn from the run's seed, so that a seed
replays the same faults at the same instants of the run (the clients' timing
still varies a little from run to run).

Faults, each held for a while and then undone:

- kill: kill -9 of a broker, started again afterwards (it registers anew
  once its old lease has run out);
- pause: SIGSTOP, then SIGCONT;
- store-cut: the broker's link to PostgreSQL falls silent (its clients still
  reach it), then heals;
- client-cut: the clients' link to a broker falls silent, then heals;
- store-failover: the store's primary hands over to a standby; only with an
  HA store (FaultCluster.ha_store), skipped otherwise.

Faults may overlap (on different brokers; a broker takes one at a time).
"""

from __future__ import annotations

import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from faults.cluster import FaultCluster, Node
from faults.history import INFO, History

KINDS = ("kill", "pause", "store-cut", "client-cut", "store-failover")


@dataclass(frozen=True)
class Fault:
    at: float  # seconds from the start of the schedule
    kind: str
    target: int  # broker index
    hold: float  # seconds before it is undone

    def __str__(self) -> str:
        return f"{self.at:6.1f}s {self.kind} broker {self.target + 1} for {self.hold:.1f}s"


def schedule(
    seed: int, seconds: float, brokers: int, kinds: tuple[str, ...] = KINDS, concurrency: int = 2
) -> list[Fault]:
    """Faults over ``seconds``, at most ``concurrency`` held at once."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    t = rng.uniform(1, 3)
    while True:
        at, hold = round(t, 2), round(rng.uniform(1.5, 8), 2)
        if at + hold > seconds:
            return faults
        busy = [f for f in faults if f.at + f.hold > at - 0.05]  # 50 ms apart at least
        free = [b for b in range(brokers) if b not in {f.target for f in busy}]
        if len(busy) < concurrency and free:
            faults.append(Fault(at, rng.choice(kinds), rng.choice(free), hold))
        t += rng.uniform(0.5, 5)


class Nemesis:
    def __init__(self, cluster: FaultCluster, history: History, faults: list[Fault]) -> None:
        self.cluster = cluster
        self.history = history
        self.faults = faults
        self.injected = 0
        self.skipped = 0
        self._threads: list[threading.Thread] = []

    def run(self) -> None:
        """Inject every fault on time, wait until each is undone, then heal all."""
        start = time.monotonic()
        for fault in self.faults:
            time.sleep(max(0.0, start + fault.at - time.monotonic()))
            thread = threading.Thread(target=self._apply, args=(fault,), name=f"nemesis {fault}")
            thread.start()
            self._threads.append(thread)
        for thread in self._threads:
            thread.join()
        self.cluster.heal()
        self.history.add("nemesis", INFO, "nemesis", fault="heal", target=-1, phase="stop")

    def _apply(self, fault: Fault) -> None:
        node = self.cluster.nodes[fault.target]
        if fault.kind == "store-failover" and self.cluster.ha_store is None:
            self.skipped += 1
            return
        with node.lock:
            self._record(fault, "start")
            self.injected += 1
            undo = self._inject(fault.kind, node)
            time.sleep(fault.hold)
            undo()
            self._record(fault, "stop")

    def _inject(self, kind: str, node: Node) -> Callable[[], None]:
        proc = node.broker.proc
        assert proc is not None
        if kind == "kill":
            node.broker.kill()

            def restart() -> None:
                node.broker.start(60)

            return restart
        if kind == "pause":
            proc.send_signal(signal.SIGSTOP)
            return lambda: proc.send_signal(signal.SIGCONT)
        if kind == "store-cut":
            node.store.cut()
            return node.store.heal
        if kind == "client-cut":
            node.clients.cut()
            return node.clients.heal
        if kind == "store-failover":
            assert self.cluster.ha_store is not None
            self.cluster.ha_store.failover()
            return lambda: None
        raise ValueError(kind)

    def _record(self, fault: Fault, phase: str) -> None:
        self.history.add(
            "nemesis", INFO, "nemesis", fault=fault.kind, target=fault.target + 1, phase=phase
        )
