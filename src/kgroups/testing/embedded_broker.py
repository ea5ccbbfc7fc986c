"""EmbeddedBroker: one kgroups broker for a test, on an ephemeral loopback port.

In a thread of its own by default (quickest to start; blocking and asyncio
clients alike can use it), or as a `kgroups serve` subprocess with
``process=True`` for tests that kill it.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import kgroups.testing.kio_import  # noqa: F401 - kio first, without hypothesis (see there)
from kgroups.clock import Clock
from kgroups.testing.broker_clock import BrokerClock
from kgroups.testing.faults import BrokerFaults, http_runner
from kgroups.testing.temp_dirs import new_data_root

# Each kind is imported when a broker of that kind is made: a thread broker has
# no use for the subprocess machinery (ctypes among it), and a process broker
# none for the broker's own modules, which it runs in another interpreter.
if TYPE_CHECKING:
    from kgroups.testing.process_broker import ProcessBroker
    from kgroups.testing.thread_broker import ThreadBroker


class EmbeddedBroker:
    def __init__(
        self,
        data_dir: str | Path | None = None,
        overrides: Mapping[str, object] | None = None,
        process: bool = False,
        start: bool = True,
        clock: Clock | None = None,
    ) -> None:
        """`data_dir`: kept after stop; without it a temporary directory is
        used and removed by stop() (or, if the process is killed first, by
        the first EmbeddedBroker of a later process: temp_dirs.py).
        `overrides`: Kafka broker properties (`{"num.partitions": "3"}`),
        which win over the test defaults.
        `clock` (thread only): the broker's clock, e.g. a ManualClock the
        test advances by hand."""
        if process and clock is not None:
            raise ValueError("a clock of the test's own needs the thread broker")
        self._own_dir = data_dir is None
        root = new_data_root() if data_dir is None else Path(data_dir)
        self.data_dir = root / "data" if self._own_dir else root
        props = {key: str(value) for key, value in (overrides or {}).items()}
        self.process = process
        # One of the two, by kind.
        self._thread: ThreadBroker | None = None
        self._process: ProcessBroker | None = None
        try:
            if process:
                self._process = _process_broker(self.data_dir, props, self._own_dir)
                self._impl: ThreadBroker | ProcessBroker = self._process
                run_fault = http_runner(f"http://127.0.0.1:{props['fault.admin.port']}")
            else:
                self._thread = self._impl = _thread_broker(self.data_dir, props, clock)
                run_fault = self._thread.run_fault
        except BaseException:  # a bad override: leave no temporary directory behind
            self._remove_own_dir()
            raise
        self._started = False
        if isinstance(clock, BrokerClock):
            clock.attach(self)
        self.faults = BrokerFaults(run_fault)
        """Fault injection: coordinator errors and moves, forced rebalances,
        expired members, delayed or dropped answers, failed appends, paused
        partitions. See docs/testing.md."""
        if start:
            self.start()

    def start(self) -> EmbeddedBroker:
        self._started = True
        try:
            self._impl.start()
        except BaseException:
            self.stop()  # leave no thread, process or temporary directory behind
            raise
        return self

    @property
    def bootstrap_servers(self) -> str:
        """`host:port` for a client's `bootstrap.servers`."""
        return self._impl.bootstrap

    @property
    def port(self) -> int:
        return self._impl.port

    @property
    def fault_admin_url(self) -> str | None:
        """``http://127.0.0.1:PORT`` of the fault admin endpoint, for tests in
        other languages; always there for a process broker, for a thread
        broker when ``fault.admin.port`` is set."""
        return self._impl.fault_admin_url

    def kill(self) -> None:
        """kill -9 the broker process (process=True only); restart() brings it back."""
        if self._process is None:
            raise RuntimeError("kill() needs EmbeddedBroker(process=True)")
        self._process.kill()

    def clock_moved(self) -> None:
        """Act on deadlines a virtual clock's jump has passed (BrokerClock)."""
        impl = self._thread
        if impl is not None and impl.broker is not None:
            broker = impl.broker
            impl.call(broker.coordinator.on_clock_moved)
            impl.call(broker.txn_coordinator.on_clock_moved)

    def restart(self) -> EmbeddedBroker:
        """Stop (if running) and start again on the same port, with the same data."""
        self._impl.restart()
        return self

    def stop(self) -> None:
        """Stop the broker; remove its data if the directory was a temporary one."""
        if self._started:
            self._impl.stop()
            self._started = False
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)

    def __enter__(self) -> EmbeddedBroker:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> EmbeddedBroker:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        kind = "process" if self.process else "thread"
        where = self.bootstrap_servers if self._started else "stopped"
        return f"EmbeddedBroker({kind}, {where}, data_dir={self.data_dir})"


def _thread_broker(data_dir: Path, props: dict[str, str], clock: Clock | None) -> ThreadBroker:
    from kgroups.testing.thread_broker import ThreadBroker

    return ThreadBroker(data_dir, props, clock)


def _process_broker(data_dir: Path, props: dict[str, str], own_dir: bool) -> ProcessBroker:
    """``props`` gains the fault admin port the broker is reached on."""
    from kgroups.testing.process_broker import ProcessBroker, free_port

    if props.get("fault.admin.port", "0") == "0":
        # How `faults` reaches the process (and tests in other languages too).
        props["fault.admin.port"] = str(free_port())
    return ProcessBroker(
        data_dir, props, remove_on_parent_exit=data_dir.parent if own_dir else None
    )
