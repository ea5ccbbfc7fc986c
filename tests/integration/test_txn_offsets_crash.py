"""kill -9 of the broker with transactional offsets in `__consumer_offsets`:
offsets whose commit marker was acknowledged are committed after the restart,
those of a transaction without a marker are still pending."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from txn_offsets_wire import create_topic, fetch, find_coordinator, txn_commit

from kgroups.errors import ErrorCode

from process_broker import BrokerProcess, free_port

OK = ErrorCode.none
HERE = Path(__file__).resolve().parent.parent


def test_markers_and_open_transactions_survive_sigkill(tmp_path: Path) -> None:
    data, port = tmp_path / "data", free_port()
    marker_broker = subprocess.Popen(
        [sys.executable, str(HERE / "txn_marker_broker.py"), str(data), str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    try:
        assert marker_broker.stdin is not None and marker_broker.stdout is not None
        assert marker_broker.stdout.readline().strip() == "ready"
        with socket.create_connection(("127.0.0.1", port), 30) as s:
            find_coordinator(s, "g")
            create_topic(s, "orders", 2)
            assert txn_commit(s, "g", {("orders", 0): 42}, producer_id=1) == {("orders", 0): OK}
            marker_broker.stdin.write("commit g 1\n")
            marker_broker.stdin.flush()
            assert marker_broker.stdout.readline().strip() == "none"
            assert txn_commit(s, "g", {("orders", 1): 43}, producer_id=2) == {("orders", 1): OK}
            txn_commit(s, "g", {("orders", 1): 44}, producer_id=3)
            marker_broker.stdin.write("abort g 3\n")
            marker_broker.stdin.flush()
            assert marker_broker.stdout.readline().strip() == "none"
    finally:
        marker_broker.kill()  # SIGKILL: no clean shutdown
        marker_broker.wait(10)

    broker = BrokerProcess(data, port).start()
    try:
        with socket.create_connection(("127.0.0.1", port), 30) as s:
            find_coordinator(s, "g")
            assert fetch(s, "g", {"orders": [0, 1]}, require_stable=True) == (
                OK,
                {("orders", 0): (42, OK), ("orders", 1): (-1, ErrorCode.unstable_offset_commit)},
            )
            assert fetch(s, "g", {"orders": [0, 1]}) == (
                OK,
                {("orders", 0): (42, OK), ("orders", 1): (-1, OK)},
            )
    finally:
        broker.stop()
