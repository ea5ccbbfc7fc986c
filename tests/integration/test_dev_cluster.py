"""`kgroups dev-cluster`: PostgreSQL and brokers on loopback, gone after Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_dev_cluster_serves_clients_and_ctrl_c_stops_everything(tmp_path: Path) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

    proc = subprocess.Popen(
        [sys.executable, "-m", "kgroups", "dev-cluster", "--brokers", "3", "--base-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Started with SIGINT ignored, as a script's background job is:
        # Ctrl-C must stop it all the same.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while not lines or not lines[-1].startswith("bootstrap: "):
            assert time.monotonic() < deadline, lines
            line = proc.stdout.readline()
            assert line, f"dev-cluster exited: {lines}"
            lines.append(line.strip())
        bootstrap = lines[-1].removeprefix("bootstrap: ")
        assert len(bootstrap.split(",")) == 3
        pids = [int(p) for p in re.findall(r"\(pid (\d+)", "\n".join(lines))]
        assert len(pids) == 4  # PostgreSQL and three brokers

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(10):
            producer.produce("dev", f"v{i}".encode())
        assert producer.flush(20) == 0
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "dev", "enable.auto.commit": False}
        )
        partitions = consumer.list_topics("dev", timeout=10).topics["dev"].partitions
        consumer.assign([TopicPartition("dev", p, OFFSET_BEGINNING) for p in partitions])
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
        consumer.close()
        assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))

        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 0  # generous: brokers hand over, on a busy machine
        assert not [pid for pid in pids if _alive(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_dev_cluster_ha_fails_over_and_ctrl_c_stops_everything() -> None:
    """`--ha`: etcd and two PostgreSQL under Patroni; a produce goes through
    after the primary's PostgreSQL is killed, and Ctrl-C leaves nothing behind."""
    import pytest

    from kgroups.postgres_store.local_patroni import available

    if available() is not None:
        pytest.skip(str(available()))
    from confluent_kafka import Producer

    proc = subprocess.Popen(
        [sys.executable, "-m", "kgroups", "dev-cluster", "--ha", "--base-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 120
        while not lines or not lines[-1].startswith("bootstrap: "):
            assert time.monotonic() < deadline, lines
            line = proc.stdout.readline()
            assert line, f"dev-cluster exited: {lines}"
            lines.append(line.strip())
        bootstrap = lines[-1].removeprefix("bootstrap: ")
        text = "\n".join(lines)
        assert "target_session_attrs=read-write" in text
        pids = [int(p) for p in re.findall(r"pid (\d+)", text)]
        assert len(pids) == 1 + 2 * 2 + 3  # etcd, Patroni and PostgreSQL twice, brokers
        primary = re.search(r", primary, .*postmaster pid (\d+)", text)
        assert primary is not None

        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        producer.produce("dev", b"before")
        assert producer.flush(30) == 0
        os.kill(int(primary.group(1)), signal.SIGKILL)
        delivered: list[object] = []
        producer.produce("dev", b"after", on_delivery=lambda e, m: delivered.append(e))
        assert producer.flush(60) == 0
        assert delivered == [None]

        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 0  # generous: brokers hand over, on a busy machine
        assert not [pid for pid in pids if _alive(pid)]
        # The PostgreSQL restarted as a standby after the kill is gone too.
        servers = "\n".join(x for x in lines if x.startswith(("etcd:", "PostgreSQL ")))
        ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", servers)]
        assert len(ports) == 5 and not [p for p in ports if _listening(p)]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # it stops what it started
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_a_killed_dev_cluster_leaves_nothing_behind(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kgroups", "dev-cluster", "--brokers", "2", "--base-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while not lines or not lines[-1].startswith("bootstrap: "):
            assert time.monotonic() < deadline, lines
            line = proc.stdout.readline()
            assert line, f"dev-cluster exited: {lines}"
            lines.append(line.strip())
        text = "\n".join(lines)
        pids = [int(p) for p in re.findall(r"\(pid (\d+)", text)]
        assert len(pids) == 3  # PostgreSQL's, then the brokers'
        logs = re.search(r"log (\S+)/b1\.log", text)
        assert logs is not None
        data = Path(logs.group(1))
        assert data.is_dir()
        proc.kill()  # kill -9: no Ctrl-C, no cleanup of its own
        proc.wait(10)
        deadline = time.monotonic() + 60
        while any(_alive(pid) for pid in pids) or data.exists():
            assert time.monotonic() < deadline, ([p for p in pids if _alive(p)], data.exists())
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
